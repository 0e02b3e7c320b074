/*
 * Exact decimal arithmetic on digit strings: a value is its significant
 * digits and a power of ten, so comparison never expands an exponent and
 * no operation depends on floating point. The semantics follow
 * k8s.io/apimachinery/pkg/api/resource (quantity.go, amount.go, suffix.go).
 */
#include "client/quantity.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/xalloc.h"

/* The largest BinarySI magnitude Kubernetes keeps when parsing (maxAllowed). */
static const char binary_max_digits[] = "9223372036854775807";

/* Parsing keeps a value down to 10^NANO_EXP, rounding finer ones away from 0. */
#define NANO_EXP (-9)

/* The longest input quoted in an error message. */
#define QUOTE_MAX 64

struct suffix_def {
	const char *name;
	enum quantity_format format;
	int exp; /* power of 10 for DecimalSI, of 2 for BinarySI */
};

static const struct suffix_def suffixes[] = {
	{"", QUANTITY_DECIMAL_SI, 0},
	{"n", QUANTITY_DECIMAL_SI, -9},
	{"u", QUANTITY_DECIMAL_SI, -6},
	{"m", QUANTITY_DECIMAL_SI, -3},
	{"k", QUANTITY_DECIMAL_SI, 3},
	{"M", QUANTITY_DECIMAL_SI, 6},
	{"G", QUANTITY_DECIMAL_SI, 9},
	{"T", QUANTITY_DECIMAL_SI, 12},
	{"P", QUANTITY_DECIMAL_SI, 15},
	{"E", QUANTITY_DECIMAL_SI, 18},
	{"Ki", QUANTITY_BINARY_SI, 10},
	{"Mi", QUANTITY_BINARY_SI, 20},
	{"Gi", QUANTITY_BINARY_SI, 30},
	{"Ti", QUANTITY_BINARY_SI, 40},
	{"Pi", QUANTITY_BINARY_SI, 50},
	{"Ei", QUANTITY_BINARY_SI, 60},
};

#define NSUFFIXES (sizeof(suffixes) / sizeof(suffixes[0]))

/* Printing: index i is the suffix for 10^(3*(i-3)), n through E. */
static const char *const decimal_suffixes[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
/* Printing: index i is the suffix for 1024^i. */
static const char *const binary_suffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

/*
 * Writes s into buf as a double-quoted string, escaping quotes, backslashes
 * and non-printable bytes, cut after QUOTE_MAX input bytes. Returns buf.
 */
static char *quote(char *buf, size_t size, const char *s)
{
	size_t o = 0, i;

	buf[o++] = '"';
	for (i = 0; s[i] && i < QUOTE_MAX && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (s[i])
		o += (size_t)snprintf(buf + o, size - o, "...");
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

#define QUOTE_BUF (QUOTE_MAX * 4 + 8)

/* Sets *err (when wanted) to '<quoted input>: <reason>'. Always returns -1. */
static int __attribute__((format(printf, 3, 4)))
parse_error(char **err, const char *input, const char *fmt, ...)
{
	char q[QUOTE_BUF];
	va_list ap;
	char *reason;

	if (!err)
		return -1;
	va_start(ap, fmt);
	reason = xvasprintf(fmt, ap);
	va_end(ap);
	*err = xasprintf("%s: %s", quote(q, sizeof(q), input), reason);
	free(reason);
	return -1;
}

/*
 * Compares two non-negative values given as normalized digit strings (no
 * leading or trailing zeros; n == 0 is zero) and powers of ten.
 */
static int mag_cmp(const char *a, size_t na, int64_t ea, const char *b, size_t nb, int64_t eb)
{
	int64_t ta, tb;
	size_t m;
	int c;

	if (na == 0 || nb == 0)
		return (na != 0) - (nb != 0);
	/* One past the power of ten of the leading digit decides first. */
	ta = (int64_t)na + ea;
	tb = (int64_t)nb + eb;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	m = na < nb ? na : nb;
	c = memcmp(a, b, m);
	if (c)
		return c < 0 ? -1 : 1;
	/* Equal prefix: the longer one has a non-zero digit further down. */
	if (na != nb)
		return na < nb ? -1 : 1;
	return 0;
}

/* d[0..n) * 10^zeros as a uint64; false when it does not fit. */
static bool digits_to_u64(const char *d, size_t n, int64_t zeros, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;
	int64_t z;

	for (i = 0; i < n; i++) {
		unsigned digit = (unsigned)(d[i] - '0');
		if (v > (UINT64_MAX - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	for (z = 0; z < zeros && v != 0; z++) {
		if (v > UINT64_MAX / 10)
			return false;
		v *= 10;
	}
	*out = v;
	return true;
}

/*
 * Multiplies the digit string d[0..*n) by 1024 in place; d must have room
 * for 4 more digits.
 */
static void digits_mul1024(char *d, size_t *n)
{
	unsigned carry = 0;
	size_t i = *n, k = 0;
	char head[8];

	while (i > 0) {
		unsigned v = (unsigned)(d[i - 1] - '0') * 1024u + carry;
		d[i - 1] = (char)('0' + v % 10);
		carry = v / 10;
		i--;
	}
	while (carry) {
		head[k++] = (char)('0' + carry % 10);
		carry /= 10;
	}
	if (k == 0)
		return;
	memmove(d + k, d, *n);
	for (i = 0; i < k; i++)
		d[i] = head[k - 1 - i];
	*n += k;
}

/* Moves trailing zeros of d[0..*n) into *exp. */
static void digits_strip(const char *d, size_t *n, int64_t *exp)
{
	while (*n > 0 && d[*n - 1] == '0') {
		(*n)--;
		(*exp)++;
	}
}

/*
 * Rounds the non-zero normalized value d[0..*n) * 10^*exp away from zero to
 * a multiple of 10^NANO_EXP, as ParseQuantity does with inf.RoundUp.
 */
static void digits_round_nano(char *d, size_t *n, int64_t *exp)
{
	int64_t drop;
	size_t i;

	if (*exp >= NANO_EXP)
		return;
	drop = NANO_EXP - *exp;
	if ((uint64_t)drop >= *n) {
		/* All of it is below the nano: the smallest unit it rounds to. */
		d[0] = '1';
		*n = 1;
		*exp = NANO_EXP;
		return;
	}
	/* The dropped digits end in a non-zero one, so always round up. */
	*n -= (size_t)drop;
	*exp = NANO_EXP;
	for (i = *n; i > 0; i--) {
		if (d[i - 1] != '9') {
			d[i - 1]++;
			digits_strip(d, n, exp);
			return;
		}
		d[i - 1] = '0';
	}
	/* 999...9 carried into 1000...0. */
	d[0] = '1';
	*exp += (int64_t)*n;
	*n = 1;
}

/*
 * Reads the exponent after 'e'/'E' the way Go's strconv.ParseInt(s, 10, 64)
 * accepts it: an optional sign, then one or more ASCII digits.
 */
static int parse_exponent(const char *input, const char *suffix, int64_t *out, char **err)
{
	const char *p = suffix + 1;
	bool neg = false, big = false;
	int64_t v = 0;
	char q[QUOTE_BUF];

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (*p == '\0')
		return parse_error(err, input, "exponent %s has no digits; write it like e3 or e-3",
				   quote(q, sizeof(q), suffix));
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return parse_error(err, input,
					   "malformed exponent %s; an exponent is e or E, an optional sign and digits, with nothing after it",
					   quote(q, sizeof(q), suffix));
		if (!big) {
			v = v * 10 + (*p - '0');
			if (v > INT32_MAX)
				big = true;
		}
	}
	if (big)
		return parse_error(err, input, "exponent %s is out of range; it must be between -%d and %d",
				   quote(q, sizeof(q), suffix), INT32_MAX, INT32_MAX);
	*out = neg ? -v : v;
	return 0;
}

/*
 * Interprets the text after the number. Sets *format, and *exp to the power
 * of 10 (DecimalSI, DecimalExponent) or of 2 (BinarySI) it stands for.
 */
static int parse_suffix(const char *input, const char *suffix, enum quantity_format *format, int64_t *exp,
			char **err)
{
	char q[QUOTE_BUF];
	size_t i;

	for (i = 0; i < NSUFFIXES; i++) {
		if (strcmp(suffix, suffixes[i].name) == 0) {
			*format = suffixes[i].format;
			*exp = suffixes[i].exp;
			return 0;
		}
	}
	if (suffix[0] == '.')
		return parse_error(err, input, "more than one decimal point");
	if (suffix[0] == 'e' || suffix[0] == 'E') {
		*format = QUANTITY_DECIMAL_EXPONENT;
		return parse_exponent(input, suffix, exp, err);
	}
	if (ispunct((unsigned char)suffix[0]))
		return parse_error(err, input, "unexpected '%c' after the number", suffix[0]);
	for (i = 0; i < NSUFFIXES; i++) {
		if (suffixes[i].name[0] && strcasecmp(suffix, suffixes[i].name) == 0)
			return parse_error(err, input,
					   "unknown suffix %s; suffixes are case-sensitive: did you mean \"%s\"?",
					   quote(q, sizeof(q), suffix), suffixes[i].name);
	}
	return parse_error(err, input, "unknown suffix %s; use Ki, Mi, Gi, Ti, Pi, Ei or n, u, m, k, M, G, T, P, E",
			   quote(q, sizeof(q), suffix));
}

int quantity_parse(const char *s, struct quantity *out, char **err)
{
	const char *p, *int_part, *frac_part = "";
	size_t int_len, frac_len = 0, n = 0, i;
	enum quantity_format format;
	int64_t suffix_exp = 0, exp;
	bool negative = false;
	char *d = NULL;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	if (err)
		*err = NULL;
	if (!s) {
		if (err)
			*err = xstrdup("no quantity given");
		goto out;
	}
	if (!*s) {
		parse_error(err, s, "empty quantity");
		goto out;
	}
	for (p = s; *p; p++) {
		if (isspace((unsigned char)*p)) {
			parse_error(err, s, "whitespace is not allowed");
			goto out;
		}
	}

	p = s;
	if (*p == '+' || *p == '-')
		negative = *p++ == '-';
	if (*p == '+' || *p == '-') {
		parse_error(err, s, "more than one sign");
		goto out;
	}
	int_part = p;
	while (*p >= '0' && *p <= '9')
		p++;
	int_len = (size_t)(p - int_part);
	if (*p == '.') {
		frac_part = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		frac_len = (size_t)(p - frac_part);
	}
	if (int_len + frac_len == 0) {
		parse_error(err, s, "must start with a number, like 20Gi, 1.5 or 500m");
		goto out;
	}
	if (parse_suffix(s, p, &format, &suffix_exp, err))
		goto out;

	/* The digits without leading zeros; 4 spare digits per *1024. */
	d = xmalloc(int_len + frac_len + 4 * 6 + 1);
	for (i = 0; i < int_len + frac_len; i++) {
		char c = i < int_len ? int_part[i] : frac_part[i - int_len];
		if (n == 0 && c == '0')
			continue;
		d[n++] = c;
	}
	exp = -(int64_t)frac_len;
	if (format == QUANTITY_BINARY_SI) {
		for (i = 0; n > 0 && i < (size_t)suffix_exp / 10; i++)
			digits_mul1024(d, &n);
	} else {
		exp += suffix_exp;
	}
	digits_strip(d, &n, &exp);

	if (n == 0) {
		/* Zero keeps the parsed format ("0Ki" stays BinarySI); no sign. */
		out->format = format;
		ret = 0;
		goto out;
	}
	digits_round_nano(d, &n, &exp);
	if (format == QUANTITY_BINARY_SI) {
		if (mag_cmp(d, n, exp, binary_max_digits, sizeof(binary_max_digits) - 1, 0) > 0) {
			/* Kubernetes caps BinarySI at 2^63-1 ("8Ei"), silently. */
			n = sizeof(binary_max_digits) - 1;
			memcpy(d, binary_max_digits, n);
			exp = 0;
		}
		if ((int64_t)n + exp <= 0)
			/* Below 1: BinarySI would have to round, so DecimalSI. */
			format = QUANTITY_DECIMAL_SI;
	}
	if (exp > INT32_MAX) {
		parse_error(err, s, "value too large: its canonical exponent would pass %d", INT32_MAX);
		goto out;
	}
	if (n > QUANTITY_MAX_DIGITS) {
		parse_error(err, s, "more than %d significant digits are not supported", QUANTITY_MAX_DIGITS);
		goto out;
	}

	out->format = format;
	out->negative = negative;
	out->ndigits = (int)n;
	out->exponent = (int32_t)exp;
	memcpy(out->digits, d, n);
	ret = 0;
out:
	free(d);
	return ret;
}

int quantity_sign(const struct quantity *q)
{
	if (q->ndigits == 0)
		return 0;
	return q->negative ? -1 : 1;
}

int quantity_cmp(const struct quantity *a, const struct quantity *b)
{
	int sa = quantity_sign(a), sb = quantity_sign(b);
	int c;

	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (sa == 0)
		return 0;
	c = mag_cmp(a->digits, (size_t)a->ndigits, a->exponent, b->digits, (size_t)b->ndigits, b->exponent);
	return sa < 0 ? -c : c;
}

/* |q| as a uint64 when it is a whole number that fits. */
static bool whole_u64(const struct quantity *q, uint64_t *out)
{
	if (q->exponent < 0)
		return false;
	return digits_to_u64(q->digits, (size_t)q->ndigits, q->exponent, out);
}

char *quantity_format(const struct quantity *q)
{
	enum quantity_format format = q->format;
	const char *sign = q->negative ? "-" : "";
	char mantissa[QUANTITY_MAX_DIGITS + 3];
	int64_t exp = q->exponent;
	size_t n = (size_t)q->ndigits, pad;
	uint64_t v;

	if (n == 0)
		return xstrdup("0");
	if (format != QUANTITY_DECIMAL_SI && format != QUANTITY_BINARY_SI)
		format = QUANTITY_DECIMAL_EXPONENT; /* as Kubernetes treats an unknown Format */

	if (format == QUANTITY_BINARY_SI) {
		/* Below 1024, or not whole, BinarySI would round: print DecimalSI. */
		if (whole_u64(q, &v) && v >= 1024) {
			int e = 0;
			while (v % 1024 == 0 && e < 6) {
				v /= 1024;
				e++;
			}
			return xasprintf("%s%" PRIu64 "%s", sign, v, binary_suffixes[e]);
		}
		format = QUANTITY_DECIMAL_SI;
	}

	/* Lower the exponent to a multiple of 3, padding the mantissa. */
	pad = (size_t)(((exp % 3) + 3) % 3);
	memcpy(mantissa, q->digits, n);
	memset(mantissa + n, '0', pad);
	mantissa[n + pad] = '\0';
	exp -= (int64_t)pad;

	if (format == QUANTITY_DECIMAL_SI && exp >= -9 && exp <= 18)
		return xasprintf("%s%s%s", sign, mantissa, decimal_suffixes[exp / 3 + 3]);
	/* DecimalSI has no suffix past "E": Kubernetes falls back to e<exp>. */
	if (exp == 0)
		return xasprintf("%s%s", sign, mantissa);
	return xasprintf("%s%se%" PRId64, sign, mantissa, exp);
}

int quantity_to_int64(const struct quantity *q, int64_t *out)
{
	uint64_t mag;
	int64_t int_len;

	if (q->ndigits == 0) {
		*out = 0;
		return 0;
	}
	if (q->exponent >= 0) {
		if (!digits_to_u64(q->digits, (size_t)q->ndigits, q->exponent, &mag))
			return -1;
	} else {
		/* Not whole (the last digit is a non-zero fraction digit): round away from zero. */
		int_len = (int64_t)q->ndigits + q->exponent;
		mag = 0;
		if (int_len > 0 && !digits_to_u64(q->digits, (size_t)int_len, 0, &mag))
			return -1;
		if (mag == UINT64_MAX)
			return -1;
		mag++;
	}
	if (q->negative) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return -1;
		*out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return -1;
		*out = (int64_t)mag;
	}
	return 0;
}

void quantity_from_int64(int64_t v, enum quantity_format format, struct quantity *out)
{
	char buf[24];
	uint64_t mag;
	size_t n;
	int64_t exp = 0;

	memset(out, 0, sizeof(*out));
	out->format = format;
	if (v == 0)
		return;
	mag = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
	n = (size_t)snprintf(buf, sizeof(buf), "%" PRIu64, mag);
	digits_strip(buf, &n, &exp);
	out->negative = v < 0;
	out->ndigits = (int)n;
	out->exponent = (int32_t)exp;
	memcpy(out->digits, buf, n);
}
