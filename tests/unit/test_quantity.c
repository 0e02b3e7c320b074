/*
 * Unit tests for src/client/quantity.c. The expected values come from
 * Kubernetes itself wherever possible:
 *  - quantity_test.go (k8s.io/apimachinery/pkg/api/resource): the tables
 *    of TestQuantityParse, TestQuantityString, TestQuantityParseEmit,
 *    TestParseQuantity, TestNewSet, TestQuantityCmp and
 *    TestNegativeValueRoundsAwayFromZero;
 *  - testdata/quantity_decode_corpus.json: ParseQuantity's recorded output
 *    (value as "<digits>e<exp>", and format) for a grid of inputs.
 * Each table test reports every mismatching row, then fails.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/quantity.h"

#define DSI QUANTITY_DECIMAL_SI
#define BSI QUANTITY_BINARY_SI
#define DEX QUANTITY_DECIMAL_EXPONENT

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

static const char *format_name(enum quantity_format f)
{
	switch (f) {
	case QUANTITY_DECIMAL_SI:
		return "DecimalSI";
	case QUANTITY_BINARY_SI:
		return "BinarySI";
	case QUANTITY_DECIMAL_EXPONENT:
		return "DecimalExponent";
	}
	return "?";
}

/*
 * Builds a quantity by hand from digits * 10^exp (digits may carry leading
 * '-' and trailing zeros), independently of the parser under test.
 */
static void mkq_digits(struct quantity *q, const char *digits, int exp, enum quantity_format f)
{
	size_t n;

	memset(q, 0, sizeof(*q));
	q->format = f;
	if (*digits == '-') {
		q->negative = true;
		digits++;
	}
	while (*digits == '0')
		digits++;
	n = strlen(digits);
	while (n > 0 && digits[n - 1] == '0') {
		n--;
		exp++;
	}
	if (n == 0) {
		q->negative = false;
		return;
	}
	assert_true(n <= QUANTITY_MAX_DIGITS);
	q->ndigits = (int)n;
	q->exponent = exp;
	memcpy(q->digits, digits, n);
}

/* Kubernetes' decQuantity(mantissa, exponent, format). */
static void mkq(struct quantity *q, int64_t mantissa, int exp, enum quantity_format f)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, mantissa);
	mkq_digits(q, buf, exp, f);
}

/* q as the decode corpus writes a value: "0", or "[-]<digits>e<exp>". */
static void render(const struct quantity *q, char *buf, size_t size)
{
	if (q->ndigits == 0)
		snprintf(buf, size, "0");
	else
		snprintf(buf, size, "%s%.*se%" PRId32, q->negative ? "-" : "", q->ndigits, q->digits, q->exponent);
}

/* Parses s, reporting a failure (and returning false) when it does not parse. */
static bool parse_ok(const char *s, struct quantity *q)
{
	char *err = NULL;

	if (quantity_parse(s, q, &err) != 0) {
		print_error("%s: unexpected error: %s\n", s, err ? err : "(no message)");
		free(err);
		return false;
	}
	if (err) {
		print_error("%s: parsed, but *err was left set\n", s);
		free(err);
		return false;
	}
	return true;
}

/* Formats q and compares with want; reports and returns false on mismatch. */
static bool format_is(const char *what, const struct quantity *q, const char *want)
{
	char *got = quantity_format(q);
	bool ok = strcmp(got, want) == 0;

	if (!ok)
		print_error("%s: formatted as \"%s\", want \"%s\"\n", what, got, want);
	free(got);
	return ok;
}

/* TestQuantityParse: input -> decQuantity(mantissa, exponent, format), with "-" and "+" too. */
static void test_parse_kubernetes_table(void **state)
{
	static const struct {
		const char *in;
		int64_t mantissa;
		int exp;
		enum quantity_format format;
	} table[] = {
		{"0", 0, 0, DSI},
		{"0n", 0, 0, DSI},
		{"0u", 0, 0, DSI},
		{"0m", 0, 0, DSI},
		{"0Ki", 0, 0, BSI},
		{"0k", 0, 0, DSI},
		{"0Mi", 0, 0, BSI},
		{"0M", 0, 0, DSI},
		{"0Gi", 0, 0, BSI},
		{"0G", 0, 0, DSI},
		{"0Ti", 0, 0, BSI},
		{"0T", 0, 0, DSI},
		/* Quantity-less numbers are allowed. */
		{"1", 1, 0, DSI},
		/* Binary suffixes. */
		{"1Ki", 1024, 0, BSI},
		{"8Ki", 8 * 1024, 0, BSI},
		{"7Mi", 7 * 1024 * 1024, 0, BSI},
		{"6Gi", 6 * 1024LL * 1024 * 1024, 0, BSI},
		{"5Ti", 5 * 1024LL * 1024 * 1024 * 1024, 0, BSI},
		{"4Pi", 4 * 1024LL * 1024 * 1024 * 1024 * 1024, 0, BSI},
		{"3Ei", 3 * 1024LL * 1024 * 1024 * 1024 * 1024 * 1024, 0, BSI},
		{"10Ti", 10 * 1024LL * 1024 * 1024 * 1024, 0, BSI},
		{"100Ti", 100 * 1024LL * 1024 * 1024 * 1024, 0, BSI},
		/* Decimal suffixes. */
		{"5n", 5, -9, DSI},
		{"4u", 4, -6, DSI},
		{"3m", 3, -3, DSI},
		{"9", 9, 0, DSI},
		{"8k", 8, 3, DSI},
		{"50k", 5, 4, DSI},
		{"7M", 7, 6, DSI},
		{"6G", 6, 9, DSI},
		{"5T", 5, 12, DSI},
		{"40T", 4, 13, DSI},
		{"300T", 3, 14, DSI},
		{"2P", 2, 15, DSI},
		{"1E", 1, 18, DSI},
		/* Decimal exponents. */
		{"1E-3", 1, -3, DEX},
		{"1e3", 1, 3, DEX},
		{"1E6", 1, 6, DEX},
		{"1e9", 1, 9, DEX},
		{"1E12", 1, 12, DEX},
		{"1e15", 1, 15, DEX},
		{"1E18", 1, 18, DEX},
		/* Nonstandard but still parsable. */
		{"1e14", 1, 14, DEX},
		{"1e13", 1, 13, DEX},
		{"100.035k", 100035, 0, DSI},
		/* Things that look like floating point. */
		{"0.001", 1, -3, DSI},
		{"0.0005k", 5, -1, DSI},
		{"0.005", 5, -3, DSI},
		{"0.05", 5, -2, DSI},
		{"0.5", 5, -1, DSI},
		{"0.00050k", 5, -1, DSI},
		{"0.00500", 5, -3, DSI},
		{"0.05000", 5, -2, DSI},
		{"0.50000", 5, -1, DSI},
		{"0.5e0", 5, -1, DEX},
		{"0.5e-1", 5, -2, DEX},
		{"0.5e-2", 5, -3, DEX},
		{"10.035M", 10035, 3, DSI},
		{"1.2e3", 12, 2, DEX},
		{"1.3E+6", 13, 5, DEX},
		{"1.40e9", 14, 8, DEX},
		{"1.53E12", 153, 10, DEX},
		{"1.6e15", 16, 14, DEX},
		{"1.7E18", 17, 17, DEX},
		{"9.01", 901, -2, DSI},
		{"8.1k", 81, 2, DSI},
		{"7.123456M", 7123456, 0, DSI},
		{"6.987654321G", 6987654321, 0, DSI},
		{"5.444T", 5444, 9, DSI},
		{"40.1T", 401, 11, DSI},
		{"300.2T", 3002, 11, DSI},
		{"2.5P", 25, 14, DSI},
		{"1.01E", 101, 16, DSI},
		/* Things that saturate/round. */
		{"3.001n", 4, -9, DSI},
		{"1.1E-9", 2, -9, DEX},
		{"0.0000000001", 1, -9, DSI},
		{"0.0000000005", 1, -9, DSI},
		{"0.00000000050", 1, -9, DSI},
		{"0.5e-9", 1, -9, DEX},
		{"0.9n", 1, -9, DSI},
		{"0.00000012345", 124, -9, DSI},
		{"0.00000012354", 124, -9, DSI},
		{"9Ei", INT64_MAX, 0, BSI},
		{"9223372036854775807Ki", INT64_MAX, 0, BSI},
		{"12E", 12, 18, DSI},
		/* Fractional binary. */
		{"100.035Ki", 10243584, -2, BSI},
		{"0.5Mi", 512 * 1024, 0, BSI},
		{"0.05Gi", 536870912, -1, BSI},
		{"0.025Ti", 274877906944, -1, BSI},
		/* Things written by trolls. */
		{"0.000000000001Ki", 2, -9, DSI}, /* rounds up, changes format */
		{".001", 1, -3, DSI},
		{".0001k", 100, -3, DSI},
		{"1.", 1, 0, DSI},
		{"1.G", 1, 9, DSI},
	};
	static const char *const signs[] = {"", "-", "+"};
	int failures = 0;
	size_t i, s;

	(void)state;
	for (s = 0; s < NITEMS(signs); s++) {
		for (i = 0; i < NITEMS(table); i++) {
			struct quantity got, want;
			char in[64];

			snprintf(in, sizeof(in), "%s%s", signs[s], table[i].in);
			mkq(&want, s == 1 ? -table[i].mantissa : table[i].mantissa, table[i].exp, table[i].format);
			if (!parse_ok(in, &got)) {
				failures++;
				continue;
			}
			if (quantity_cmp(&got, &want) != 0 || got.format != want.format) {
				char g[160], w[160];
				render(&got, g, sizeof(g));
				render(&want, w, sizeof(w));
				print_error("%s: got %s %s, want %s %s\n", in, g, format_name(got.format), w,
					    format_name(want.format));
				failures++;
			}
		}
	}
	assert_int_equal(failures, 0);
}

/* ParseQuantity's recorded output in Kubernetes' quantity_decode_corpus.json. */
static void test_parse_decode_corpus(void **state)
{
	static const struct {
		const char *in;
		const char *value;
		enum quantity_format format;
	} table[] = {
		{"01", "1e0", DSI},
		{"01Ki", "1024e0", BSI},
		{"01Ei", "1152921504606846976e0", BSI},
		{"0E3", "0", DEX},
		{"0.0Ei", "0", BSI},
		{"0Ei", "0", BSI},
		{"0e-1000", "0", DEX},
		{"1e-1000", "1e-9", DEX},
		{"1e-10", "1e-9", DEX},
		{"1e+21", "1e21", DEX},
		{"1e03", "1e3", DEX},
		{"5Ki", "512e1", BSI},
		{"5Ei", "576460752303423488e1", BSI},
		{"5e-10", "1e-9", DEX},
		{"7Ei", "8070450532247928832e0", BSI},
		{"8Pi", "9007199254740992e0", BSI},
		{"8Ei", "9223372036854775807e0", BSI},
		{"12Ei", "9223372036854775807e0", BSI},
		{"12e-10", "2e-9", DEX},
		{"123e-10", "13e-9", DEX},
		{"123Pi", "138485688541642752e0", BSI},
		{"999e-10", "1e-7", DEX},
		{"999Pi", "1124774006935781376e0", BSI},
		{"1000Ki", "1024e3", BSI},
		{"1000Pi", "1125899906842624e3", BSI},
		{"1000Ei", "9223372036854775807e0", BSI},
		{"1000E", "1e21", DSI},
		{"1000e1000", "1e1003", DEX},
		{"1024e-10", "103e-9", DEX},
		{"1024Pi", "1152921504606846976e0", BSI},
		{"123456789Ki", "126419751936e0", BSI},
		{"123456789Mi", "129453825982464e0", BSI},
		{"123456789Gi", "132560717806043136e0", BSI},
		{".5n", "1e-9", DSI},
		{".5Ei", "576460752303423488e0", BSI},
		{".5e2147483647", "5e2147483646", DEX},
		{"1.G", "1e9", DSI},
		{"0.1Ki", "1024e-1", BSI},
		{"0.1Ei", "1152921504606846976e-1", BSI},
		{"0.9Pi", "10133099161583616e-1", BSI},
		{"0.9Ei", "10376293541461622784e-1", BSI},
		{"1.5n", "2e-9", DSI},
		{"1.5Ei", "1729382256910270464e0", BSI},
		{"1.25Ki", "128e1", BSI},
		{"0.001u", "1e-9", DSI},
		{"0.001Ki", "1024e-3", BSI},
		{"0.0001Ki", "1024e-4", DSI},
		{"0.0001Mi", "1048576e-4", BSI},
		{"0.000000001Mi", "1048576e-9", DSI},
		{"0.000000001Gi", "1073741824e-9", BSI},
		{"0.0000000001Ki", "103e-9", DSI},
		{"0.0000000001Mi", "104858e-9", DSI},
		{"0.0000000001Gi", "107374183e-9", DSI},
		{"0.0000000001Ti", "109951162778e-9", BSI},
		{"0.0000000001Ei", "115292150460684698e-9", BSI},
		{"0.0009765625", "976563e-9", DSI},
		{"0.0009765625m", "977e-9", DSI},
		{"0.0009765625Ki", "1e0", BSI},
		{"0.0009765625e-1", "97657e-9", DEX},
		{"1.0000000001", "1000000001e-9", DSI},
		{"1.0000000001u", "1001e-9", DSI},
		{"1.0000000001Ki", "1024000000103e-9", BSI},
		{"1.0000000001Ei", "1152921504722139126460684698e-9", BSI},
		{"123.456789012n", "124e-9", DSI},
		{"123.456789012m", "12345679e-8", DSI},
		{"123.456789012Pi", "138999987247700286256447488e-9", BSI},
		{"123.456789012Ei", "9223372036854775807e0", BSI},
		{"9223372036854775.807n", "9223372036854776e-9", DSI},
		{"9223372036854775.807E", "9223372036854775807e15", DSI},
		{"9223372036854775.807Ki", "9223372036854775807e0", BSI},
		{"9223372036854775.808e-19", "922338e-9", DEX},
		{"9223372036854775.808e1000", "9223372036854775808e997", DEX},
		{"+9223372036854775.808Gi", "9223372036854775807e0", BSI},
		{"+9223372036854775.808e-18", "9223373e-9", DEX},
		{"1000000000000000000000", "1e21", DSI},
		{"99999999999999999999999", "99999999999999999999999e0", DSI},
		{"9999999999999999999999999999999999999999", "9999999999999999999999999999999999999999e0", DSI},
		{"1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
		 "1e99", DSI},
		{"123e-11", "2e-9", DEX},
		{"-1e-17", "-1e-9", DEX},
		{"-1e-8", "-1e-8", DEX},
		{"123e17", "123e17", DEX},
	};
	int failures = 0;
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(table); i++) {
		struct quantity got;
		char g[200];

		if (!parse_ok(table[i].in, &got)) {
			failures++;
			continue;
		}
		render(&got, g, sizeof(g));
		if (strcmp(g, table[i].value) != 0 || got.format != table[i].format) {
			print_error("%s: got %s %s, want %s %s\n", table[i].in, g, format_name(got.format),
				    table[i].value, format_name(table[i].format));
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

/*
 * TestQuantityString: a value built by hand prints as expect; expect parses
 * and prints back unchanged; alternate (when given) canonicalizes to
 * expect; the negated value prints as "-" expect.
 */
static void test_format_kubernetes_table(void **state)
{
	static const struct {
		const char *mantissa;
		int exp;
		enum quantity_format format;
		const char *expect;
		const char *alternate;
	} table[] = {
		{"1073741824", 0, BSI, "1Gi", "1024Mi"},
		{"314572800", 0, BSI, "300Mi", "307200Ki"},
		{"6144", 0, BSI, "6Ki", NULL},
		{"1074815565824", 0, BSI, "1001Gi", "1025024Mi"},
		{"1099511627776", 0, BSI, "1Ti", "1024Gi"},
		{"5", 0, BSI, "5", "5000m"},
		{"500", -3, BSI, "500m", "0.5"},
		{"1", 9, DSI, "1G", "1000M"},
		{"1000", 6, DSI, "1G", "0.001T"},
		{"1000000", 3, DSI, "1G", NULL},
		{"1000000000", 0, DSI, "1G", NULL},
		{"1", -3, DSI, "1m", "1000u"},
		{"80", -3, DSI, "80m", NULL},
		{"1080", -3, DSI, "1080m", "1.08"},
		{"108", -2, DSI, "1080m", "1080000000n"},
		{"10800", -4, DSI, "1080m", NULL},
		{"300", 6, DSI, "300M", NULL},
		{"1", 12, DSI, "1T", NULL},
		/* DecimalSI has no suffix past "E": exponent notation, not "1". */
		{"1", 18, DSI, "1E", NULL},
		{"1", 21, DSI, "1e21", "1000E"},
		{"5", 21, DSI, "5e21", "5000E"},
		{"1", 24, DSI, "1e24", "1000000E"},
		/* BinarySI past Ei (not reachable by parsing, which caps at 2^63-1). */
		{"1", 70, BSI, "10e69", NULL},
		{"2", 70, BSI, "20e69", NULL},
		{"1", 72, BSI, "1e72", NULL},
		{"1180591620717411303424", 0, BSI, "1180591620717411303424", NULL},
		{"1234567", 6, DSI, "1234567M", NULL},
		{"1234567", -3, BSI, "1234567m", NULL},
		{"3", 3, DSI, "3k", NULL},
		{"1025", 0, BSI, "1025", NULL},
		{"0", 0, DSI, "0", NULL},
		{"0", 0, BSI, "0", NULL},
		{"1", 9, DEX, "1e9", ".001e12"},
		{"1", -3, DEX, "1e-3", "0.001e0"},
		{"1", -9, DEX, "1e-9", "1000e-12"},
		{"80", -3, DEX, "80e-3", NULL},
		{"300", 6, DEX, "300e6", NULL},
		{"1", 12, DEX, "1e12", NULL},
		{"1", 3, DEX, "1e3", NULL},
		{"3", 3, DEX, "3e3", NULL},
		{"3", 3, DSI, "3k", NULL},
		{"0", 0, DEX, "0", "00"},
		{"1", -9, DSI, "1n", NULL},
		{"80", -9, DSI, "80n", NULL},
		{"1080", -9, DSI, "1080n", NULL},
		{"108", -8, DSI, "1080n", NULL},
		{"10800", -10, DSI, "1080n", NULL},
		{"1", -6, DSI, "1u", NULL},
		{"80", -6, DSI, "80u", NULL},
		{"1080", -6, DSI, "1080u", NULL},
		/* TestQuantityStringBelowNano (only reachable by building by hand). */
		{"1", -12, DSI, "1e-12", NULL},
		{"1", -10, DSI, "100e-12", NULL},
	};
	int failures = 0;
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(table); i++) {
		struct quantity q, neg, parsed;
		char what[96], minus[96];

		mkq_digits(&q, table[i].mantissa, table[i].exp, table[i].format);
		snprintf(what, sizeof(what), "%se%d %s", table[i].mantissa, table[i].exp,
			 format_name(table[i].format));
		if (!format_is(what, &q, table[i].expect))
			failures++;

		/* Below the nano, parsing would round: only hand-built values print so. */
		if (q.ndigits && q.exponent < -9) {
			/* nothing to reparse */
		} else if (!parse_ok(table[i].expect, &parsed)) {
			failures++;
		} else if (quantity_cmp(&parsed, &q) != 0 || !format_is(table[i].expect, &parsed, table[i].expect)) {
			failures++;
		}

		if (table[i].alternate) {
			if (!parse_ok(table[i].alternate, &parsed))
				failures++;
			else if (!format_is(table[i].alternate, &parsed, table[i].expect))
				failures++;
		}

		if (quantity_sign(&q) == 0)
			continue; /* never "-0" */
		neg = q;
		neg.negative = true;
		snprintf(minus, sizeof(minus), "-%s", table[i].expect);
		if (!format_is(what, &neg, minus))
			failures++;
	}
	assert_int_equal(failures, 0);
}

/*
 * Parse then print: TestQuantityParseEmit, TestParseQuantity's canonical
 * column (each input also negated), and the task's examples.
 */
static void test_parse_then_format(void **state)
{
	static const struct {
		const char *in;
		const char *canonical; /* NULL: the input itself */
	} table[] = {
		/* TestQuantityParseEmit */
		{"1Ki", NULL},
		{"1Mi", NULL},
		{"1Gi", NULL},
		{"1024Mi", "1Gi"},
		{"1000M", "1G"},
		{".001Ki", "1024m"},
		{".000001Ki", "1024u"},
		{".000000001Ki", "1024n"},
		{".000000000001Ki", "2n"},
		/* TestParseQuantity */
		{"999999999999999999", NULL},
		{"999999999999999999.0", "999999999999999999"},
		{"999999999999999999.1", "999999999999999999100m"},
		{"9999999999999999999", NULL},
		{"1E", NULL},
		{"1000000000000000000", "1E"},
		{"9999999999999999999.0", "9999999999999999999"},
		{"1.0E", "1E"},
		{"1000000000000000000.0", "1E"},
		{"9999999999999999999000m", "9999999999999999999"},
		{"9999999999999999999.1", "9999999999999999999100m"},
		{"1.0000000000000000001E", "1000000000000000000100m"},
		{"1000000000000000000.1", "1000000000000000000100m"},
		{"1.000000000000000001E", "1000000000000000001"},
		{"1000000000000000001", NULL},
		{"10E", NULL},
		{"10000000000000000000", "10E"},
		{"10.0E", "10E"},
		{"10000000000000000000.0", "10E"},
		{"10000000000000000000000m", "10E"},
		{"10.0000000000000000001E", "10000000000000000000100m"},
		{"10000000000000000000.1", "10000000000000000000100m"},
		{"10.000000000000000001E", "10000000000000000001"},
		{"10000000000000000001", NULL},
		{"9223372036854775809", NULL},
		{"9223372036854775806", NULL},
		{"9223372036854775806.0", "9223372036854775806"},
		{"9223372036854775806000m", "9223372036854775806"},
		{"9223372036854775806.1", "9223372036854775806100m"},
		{"9223372036854775807", NULL},
		{"9223372036854775808", NULL},
		{"9223372036854775808.0", "9223372036854775808"},
		{"9223372036854775808000m", "9223372036854775808"},
		{"9223372036854775808.1", "9223372036854775808100m"},
		/* The task's examples and CanonicalizeBytes' rules. */
		{"1536Mi", NULL},
		{"2048Mi", "2Gi"},
		{"1.5Gi", "1536Mi"},
		{"1000", "1k"},
		{"0.5", "500m"},
		{"1e3", NULL},
		{"100m", NULL},
		{"0", NULL},
		{"20Gi", NULL},
		{"21474836480", "21474836480"},
		{"1023Ki", NULL},
		{"1025Ki", NULL},
		{"1048575Ki", NULL},
		{"1048576Ki", "1Gi"},
		{"0.1Ki", "102400m"},
		{"0.9765625Ki", "1k"},
		{"1.0001m", "1000100n"},
		{"1.5", "1500m"},
		{"1023.5Ki", "1048064"},
		{"1000Ki", "1000Ki"},
		{"1.0001Ki", "1024102400u"},
		{"8Ei", "9223372036854775807"},
		{"8192Pi", "9223372036854775807"},
		{"7Ei", NULL},
		{"1024Pi", "1Ei"},
		{"1234E", NULL},
		{"12345E", "12345E"},
		{"10000E", "10e21"},
		{"1e2147483647", "10e2147483646"},
		{"1e-3", NULL},
		{"1.5e-3", "1500e-6"},
		{"+1Ki", "1Ki"},
		{"00001Gi", "1Gi"},
	};
	int failures = 0;
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(table); i++) {
		const char *canonical = table[i].canonical ? table[i].canonical : table[i].in;
		struct quantity q;
		char in[96], want[96];

		if (!parse_ok(table[i].in, &q)) {
			failures++;
			continue;
		}
		if (!format_is(table[i].in, &q, canonical))
			failures++;
		if (quantity_sign(&q) == 0)
			continue;
		snprintf(in, sizeof(in), "-%s", table[i].in[0] == '+' ? table[i].in + 1 : table[i].in);
		snprintf(want, sizeof(want), "-%s", canonical);
		if (!parse_ok(in, &q))
			failures++;
		else if (!format_is(in, &q, want))
			failures++;
	}
	assert_int_equal(failures, 0);
}

/* Exact comparison across formats (TestQuantityCmp and more). */
static void test_cmp(void **state)
{
	static const struct {
		const char *a, *b;
		int want;
	} table[] = {
		/* TestQuantityCmp */
		{"0", "0", 0},
		{"100m", "50m", 1},
		{"50m", "100m", -1},
		{"10000T", "100Gi", 1},
		/* Across formats. */
		{"1Gi", "1G", 1},
		{"1024Mi", "1Gi", 0},
		{"1000M", "1G", 0},
		{"1e9", "1G", 0},
		{"1e3", "1k", 0},
		{"20Gi", "21474836480", 0},
		{"20Gi", "20G", 1},
		{"20Gi", "21474836481", -1},
		{"20Gi", "21474836479.999999999", 1},
		{"1.5Gi", "1536Mi", 0},
		{"0.1", "100m", 0},
		{"100m", "100000000n", 0},
		{"1Ei", "1152921504606846976", 0},
		{"8Ei", "9223372036854775807", 0},
		{"8Ei", "9223372036854775808", -1},
		/* Signs and zeros. */
		{"0", "-0", 0},
		{"0Ki", "0", 0},
		{"0e5", "0m", 0},
		{"1n", "0", 1},
		{"-1n", "0", -1},
		{"-1", "0", -1},
		{"-2", "-1", -1},
		{"-1Gi", "-1G", -1},
		{"-1", "1", -1},
		/* Magnitudes far apart, and digit-by-digit ties. */
		{"999999999999999999999", "1e21", -1},
		{"1000000000000000000001", "1e21", 1},
		{"1e2147483647", "1e2147483646", 1},
		{"-1e21", "-1E", -1},
		{"12345678901234567890123", "12345678901234567890124", -1},
		{"1.000000001", "1", 1},
		{"0.999999999", "1", -1},
		{"123e-9", "123n", 0},
		{"1e-9", "0.5n", 0},
	};
	int failures = 0;
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(table); i++) {
		struct quantity a, b;
		int ab, ba;

		if (!parse_ok(table[i].a, &a) || !parse_ok(table[i].b, &b)) {
			failures++;
			continue;
		}
		ab = quantity_cmp(&a, &b);
		ba = quantity_cmp(&b, &a);
		if ((ab > 0) - (ab < 0) != table[i].want || (ba > 0) - (ba < 0) != -table[i].want) {
			print_error("cmp(%s, %s) = %d, cmp(%s, %s) = %d; want %d\n", table[i].a, table[i].b, ab,
				    table[i].b, table[i].a, ba, table[i].want);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

/* Value(): round away from zero (TestNegativeValueRoundsAwayFromZero), fail on overflow. */
static void test_to_int64(void **state)
{
	static const struct {
		const char *in;
		int ok;
		int64_t want;
	} table[] = {
		/* TestNegativeValueRoundsAwayFromZero */
		{"-.484785E-7466", 1, -1},
		{".484785E-7466", 1, 1},
		{"-.484785E-1", 1, -1},
		{".484785E-1", 1, 1},
		{"-0.0005", 1, -1},
		{"0.0005", 1, 1},
		{"-1500m", 1, -2},
		{"1500m", 1, 2},
		{"-9.5000000001Gi", 1, -10200547329},
		{"9.5000000001Gi", 1, 10200547329},
		{"-1", 1, -1},
		{"1", 1, 1},
		{"0", 1, 0},
		/* TestQuantityValueSet, TestNewSet */
		{"1Mi", 1, 1024 * 1024},
		{"1234k", 1, 1234000},
		/* Storage sizes. */
		{"20Gi", 1, 21474836480},
		{"1.5Gi", 1, 1610612736},
		{"10G", 1, 10000000000},
		{"1n", 1, 1},
		{"-1n", 1, -1},
		{"999m", 1, 1},
		{"1001m", 1, 2},
		/* The int64 rails. */
		{"9223372036854775807", 1, INT64_MAX},
		{"9223372036854775806.1", 1, INT64_MAX},
		{"8Ei", 1, INT64_MAX}, /* capped at parse */
		{"-8Ei", 1, -INT64_MAX},
		{"-9223372036854775808", 1, INT64_MIN},
		{"-9223372036854775807.1", 1, INT64_MIN},
		{"9223372036854775808", 0, 0},
		{"9223372036854775807.1", 0, 0},
		{"-9223372036854775809", 0, 0},
		{"-9223372036854775808.1", 0, 0},
		{"10E", 0, 0},
		{"1e19", 0, 0},
		{"1e2147483647", 0, 0},
		{"99999999999999999999.5", 0, 0},
	};
	int failures = 0;
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(table); i++) {
		struct quantity q;
		int64_t got = 12345;
		int rc;

		if (!parse_ok(table[i].in, &q)) {
			failures++;
			continue;
		}
		rc = quantity_to_int64(&q, &got);
		if (table[i].ok && (rc != 0 || got != table[i].want)) {
			print_error("%s: to_int64 = %d, %" PRId64 "; want %" PRId64 "\n", table[i].in, rc, got,
				    table[i].want);
			failures++;
		} else if (!table[i].ok && (rc != -1 || got != 12345)) {
			print_error("%s: to_int64 = %d, %" PRId64 "; want an overflow error, *out untouched\n",
				    table[i].in, rc, got);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

/* NewQuantity (TestNewSet, TestBinarySIZeroExponentString), then a round trip. */
static void test_from_int64(void **state)
{
	static const struct {
		int64_t v;
		enum quantity_format format;
		const char *expect;
	} table[] = {
		{1, DSI, "1"},
		{1000, DSI, "1k"},
		{1234000, DSI, "1234k"},
		{1024, BSI, "1Ki"},
		{1000000, DEX, "1e6"},
		{1024 * 1024, BSI, "1Mi"},
		{2000, BSI, "2000"},
		{-2000, BSI, "-2000"},
		{0, BSI, "0"},
		{0, DSI, "0"},
		{0, DEX, "0"},
		{5, BSI, "5"},
		/* BinarySI below 1024 prints as DecimalSI. */
		{1000, BSI, "1k"},
		{-1000, BSI, "-1k"},
		{1023, BSI, "1023"},
		{-1536, BSI, "-1536"},
		{-1048576, BSI, "-1Mi"},
		{21474836480, BSI, "20Gi"},
		{21474836480, DSI, "21474836480"},
		{1000000000, DEX, "1e9"},
		{1200, DEX, "1200"},
		{12000, DEX, "12e3"},
		{INT64_MAX, BSI, "9223372036854775807"},
		{INT64_MAX, DSI, "9223372036854775807"},
		{INT64_MIN, DSI, "-9223372036854775808"},
		{INT64_MIN, BSI, "-8Ei"},
		{1152921504606846976, BSI, "1Ei"},
		{-1000000000000000000, DSI, "-1E"},
	};
	int failures = 0;
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(table); i++) {
		struct quantity q, back;
		char what[64];
		int64_t v = 0;

		quantity_from_int64(table[i].v, table[i].format, &q);
		snprintf(what, sizeof(what), "%" PRId64 " %s", table[i].v, format_name(table[i].format));
		if (q.format != table[i].format) {
			print_error("%s: format %s\n", what, format_name(q.format));
			failures++;
		}
		if (!format_is(what, &q, table[i].expect))
			failures++;
		if (quantity_to_int64(&q, &v) != 0 || v != table[i].v) {
			print_error("%s: to_int64 gave %" PRId64 "\n", what, v);
			failures++;
		}
		/* "-8Ei" parses capped, so only check values within the cap. */
		if (table[i].v == INT64_MIN)
			continue;
		if (!parse_ok(table[i].expect, &back)) {
			failures++;
		} else if (quantity_cmp(&back, &q) != 0) {
			print_error("%s: \"%s\" parses to a different value\n", what, table[i].expect);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

/* Refused input: the message quotes the input and says what is wrong. */
static void test_invalid(void **state)
{
	static const struct {
		const char *in;
		const char *reason; /* a substring of the message */
	} table[] = {
		/* TestQuantityParse's invalid list */
		{"1.1.M", "more than one decimal point"},
		{"1+1.0M", "unexpected '+' after the number"},
		{"0.1mi", "unknown suffix \"mi\"; suffixes are case-sensitive: did you mean \"Mi\"?"},
		{"0.1am", "unknown suffix \"am\"; use Ki, Mi, Gi, Ti, Pi, Ei or n, u, m, k, M, G, T, P, E"},
		{"aoeu", "must start with a number"},
		{".5i", "unknown suffix \"i\""},
		{"1i", "unknown suffix \"i\""},
		{"-3.01i", "unknown suffix \"i\""},
		{"-3.01e-", "exponent \"e-\" has no digits"},
		{"1e4294967297", "exponent \"e4294967297\" is out of range"},
		{" 1", "whitespace is not allowed"},
		{"1 ", "whitespace is not allowed"},
		/* The decode corpus' malformed spellings (all "err" in Kubernetes). */
		{"", "empty quantity"},
		{"1K", "did you mean \"k\"?"},
		{"1ki", "did you mean \"Ki\"?"},
		{"1KI", "did you mean \"Ki\"?"},
		{"1KiB", "unknown suffix \"KiB\""},
		{"1Zi", "unknown suffix \"Zi\""},
		{"1Z", "unknown suffix \"Z\""},
		{"1\xc2\xb5", "unknown suffix \"\\xc2\\xb5\""},
		{"1 Ki", "whitespace is not allowed"},
		{"1e", "exponent \"e\" has no digits"},
		{"1e+", "exponent \"e+\" has no digits"},
		{"1e-", "exponent \"e-\" has no digits"},
		{"1e1.5", "malformed exponent \"e1.5\""},
		{"1e.5", "malformed exponent \"e.5\""},
		{"1e3k", "malformed exponent \"e3k\""},
		{"1E3Ki", "malformed exponent \"E3Ki\""},
		{"1e+-3", "malformed exponent \"e+-3\""},
		{"1..5", "more than one decimal point"},
		{"1-", "unexpected '-' after the number"},
		{"++1", "more than one sign"},
		{"1,5", "unexpected ',' after the number"},
		{"1_000", "unexpected '_' after the number"},
		{"0x10", "unknown suffix \"x10\""},
		{"1/2", "unexpected '/' after the number"},
		{"\xef\xbc\x91", "must start with a number"},     /* fullwidth 1 */
		{"\xe2\x88\x92" "1", "must start with a number"}, /* Unicode minus */
		{"Inf", "must start with a number"},
		{"+Inf", "must start with a number"},
		{"NaN", "must start with a number"},
		{"Infinity", "must start with a number"},
		{"1e9223372036854775808", "is out of range"},
		{"1e-9223372036854775809", "is out of range"},
		{"1e18446744073709551616", "is out of range"},
		{"0e99999999999999999999", "is out of range"},
		/* Exponent bounds: |e| <= 2^31-1 (TestInterpretExponentInt32Bounds). */
		{"1e2147483648", "is out of range"},
		{"1e-2147483648", "is out of range"},
		{"1e8589934592", "is out of range"},
		/* The task's list. */
		{"1.2.3", "more than one decimal point"},
		{"1KB", "unknown suffix \"KB\""},
		{"1Gb", "unknown suffix \"Gb\""},
		{"--1", "more than one sign"},
		{"-+1", "more than one sign"},
		{"1e", "has no digits"},
		{"1\t", "whitespace is not allowed"},
		{"\n1Gi", "whitespace is not allowed"},
		{"1GiGi", "unknown suffix \"GiGi\""},
		{"1Gi-", "unknown suffix \"Gi-\""},
		{"1g", "did you mean \"G\"?"},
		{"\"1Gi\"", "must start with a number"},
	};
	int failures = 0;
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(table); i++) {
		unsigned char c0 = (unsigned char)table[i].in[0];
		struct quantity q, zero;
		char *err = NULL;
		int rc;

		memset(&q, 0x5a, sizeof(q));
		memset(&zero, 0, sizeof(zero));
		rc = quantity_parse(table[i].in, &q, &err);
		if (rc != -1 || !err) {
			print_error("%s: parsed (rc %d), want an error\n", table[i].in, rc);
			failures++;
		} else if (!strstr(err, table[i].reason)) {
			print_error("%s: message \"%s\" does not say \"%s\"\n", table[i].in, err, table[i].reason);
			failures++;
		} else if (err[0] != '"' ||
			   (c0 >= 0x20 && c0 < 0x7f && c0 != '"' && c0 != '\\' && err[1] != (char)c0)) {
			print_error("%s: message \"%s\" does not quote the input first\n", table[i].in, err);
			failures++;
		}
		if (memcmp(&q, &zero, sizeof(q)) != 0) {
			print_error("%s: *out not zeroed on error\n", table[i].in);
			failures++;
		}
		free(err);
		/* err == NULL: no message wanted, same result. */
		if (quantity_parse(table[i].in, &q, NULL) != -1) {
			print_error("%s: parsed with err == NULL\n", table[i].in);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

/* The exact message of the task's example. */
static void test_error_message(void **state)
{
	struct quantity q;
	char *err = NULL;

	(void)state;
	assert_int_equal(quantity_parse("20Gb", &q, &err), -1);
	assert_non_null(err);
	assert_string_equal(err, "\"20Gb\": unknown suffix \"Gb\"; use Ki, Mi, Gi, Ti, Pi, Ei or n, u, m, k, M, G, T, P, E");
	free(err);

	err = NULL;
	assert_int_equal(quantity_parse(NULL, &q, &err), -1);
	assert_non_null(err);
	assert_string_equal(err, "no quantity given");
	free(err);

	/* Quotes and backslashes in the input are escaped. */
	err = NULL;
	assert_int_equal(quantity_parse("1\"\\", &q, &err), -1);
	assert_non_null(err);
	assert_string_equal(err, "\"1\\\"\\\\\": unexpected '\"' after the number");
	free(err);
}

/*
 * Where Kubernetes is lax or wraps silently, refuse (see quantity.h):
 * digit-less numbers that Kubernetes reads as 0 (decode corpus: "Gi",
 * ".", "-", "m" are "ok" with value 0), and a canonical exponent past
 * 2^31-1.
 */
static void test_refused_where_kubernetes_guesses(void **state)
{
	static const struct {
		const char *in;
		const char *reason;
	} table[] = {
		{"Gi", "must start with a number"},
		{"Ki", "must start with a number"},
		{"m", "must start with a number"},
		{".", "must start with a number"},
		{"-.", "must start with a number"},
		{".Gi", "must start with a number"},
		{"-", "must start with a number"},
		{"+", "must start with a number"},
		{"e3", "must start with a number"},
		{"10e2147483647", "value too large"},
		{"1000e2147483645", "value too large"},
	};
	int failures = 0;
	size_t i;

	(void)state;
	for (i = 0; i < NITEMS(table); i++) {
		struct quantity q;
		char *err = NULL;

		if (quantity_parse(table[i].in, &q, &err) != -1 || !err || !strstr(err, table[i].reason)) {
			print_error("%s: want an error saying \"%s\", got \"%s\"\n", table[i].in, table[i].reason,
				    err ? err : "(none)");
			failures++;
		}
		free(err);
	}
	assert_int_equal(failures, 0);
}

/* QUANTITY_MAX_DIGITS significant digits, counted after rounding to the nano. */
static void test_digit_limit(void **state)
{
	char buf[QUANTITY_MAX_DIGITS + 700];
	struct quantity q;
	char *err = NULL;
	char *s;

	(void)state;
	/* Exactly the limit: accepted and printed back. */
	memset(buf, '7', QUANTITY_MAX_DIGITS);
	buf[QUANTITY_MAX_DIGITS] = '\0';
	assert_int_equal(quantity_parse(buf, &q, &err), 0);
	assert_null(err);
	assert_int_equal(q.ndigits, QUANTITY_MAX_DIGITS);
	s = quantity_format(&q);
	assert_string_equal(s, buf);
	free(s);

	/* One more: refused, and the long input is cut in the message. */
	memset(buf, '7', QUANTITY_MAX_DIGITS + 1);
	buf[QUANTITY_MAX_DIGITS + 1] = '\0';
	assert_int_equal(quantity_parse(buf, &q, &err), -1);
	assert_non_null(err);
	assert_non_null(strstr(err, "significant digits are not supported"));
	assert_non_null(strstr(err, "7...\": "));
	free(err);
	err = NULL;

	/* Trailing zeros are not significant. */
	memset(buf, '0', sizeof(buf));
	buf[0] = '5';
	buf[600] = '\0';
	assert_int_equal(quantity_parse(buf, &q, &err), 0);
	assert_int_equal(q.ndigits, 1);
	assert_int_equal(q.exponent, 599);

	/* Digits below the nano round away, however many there are. */
	memcpy(buf, "0.", 2);
	memset(buf + 2, '0', 600);
	memcpy(buf + 602, "1Gi", 4);
	assert_int_equal(quantity_parse(buf, &q, &err), 0);
	s = quantity_format(&q);
	assert_string_equal(s, "1n");
	free(s);
}

/* A tiny deterministic generator, so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * For many generated values: the canonical string parses back to the same
 * value, and printing is stable from the second print on. (Only from the
 * second: BinarySI 2000 prints "2000", as in Kubernetes, which parses as
 * DecimalSI and so prints "2k".)
 */
static void test_roundtrip_generated(void **state)
{
	int failures = 0;
	int i;

	(void)state;
	for (i = 0; i < 20000 && failures < 10; i++) {
		enum quantity_format f = (enum quantity_format)(rng() % 3);
		char digits[40];
		struct quantity q, back;
		char *s1, *s2, *s3;
		int n, k, exp;

		if (f == BSI && rng() % 2) {
			/* A whole number of some binary unit, within int64. */
			int64_t v = (int64_t)(rng() % 100000) << (10 * (rng() % 5));
			quantity_from_int64(rng() % 2 ? -v : v, f, &q);
		} else {
			n = 1 + (int)(rng() % 30);
			for (k = 0; k < n; k++)
				digits[k] = (char)('0' + rng() % 10);
			digits[n] = '\0';
			/* Parsed values keep nothing below the nano. */
			exp = -9 + (int)(rng() % (f == BSI ? 18 : 60));
			mkq_digits(&q, digits, exp, f);
			/* BinarySI parses capped at 2^63-1: stay below 10^18. */
			if (f == BSI && q.ndigits + q.exponent > 18)
				mkq_digits(&q, "1025", 0, f);
			if (rng() % 2 && q.ndigits)
				q.negative = true;
		}
		s1 = quantity_format(&q);
		s2 = NULL;
		s3 = NULL;
		if (!parse_ok(s1, &back)) {
			failures++;
			goto next;
		}
		s2 = quantity_format(&back);
		if (quantity_cmp(&q, &back) != 0) {
			print_error("%s: reparsed to a different value\n", s1);
			failures++;
			goto next;
		}
		/* Only a BinarySI whole number that is no multiple of 1024 loses its format. */
		if (strcmp(s1, s2) != 0 && !(q.format == BSI && strspn(s1, "-0123456789") == strlen(s1))) {
			print_error("%s: reparsed and printed \"%s\"\n", s1, s2);
			failures++;
			goto next;
		}
		if (!parse_ok(s2, &back)) {
			failures++;
			goto next;
		}
		s3 = quantity_format(&back);
		if (strcmp(s2, s3) != 0) {
			print_error("%s: printed \"%s\", then \"%s\"\n", s1, s2, s3);
			failures++;
		}
next:
		free(s1);
		free(s2);
		free(s3);
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_kubernetes_table),
		cmocka_unit_test(test_parse_decode_corpus),
		cmocka_unit_test(test_format_kubernetes_table),
		cmocka_unit_test(test_parse_then_format),
		cmocka_unit_test(test_cmp),
		cmocka_unit_test(test_to_int64),
		cmocka_unit_test(test_from_int64),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_error_message),
		cmocka_unit_test(test_refused_where_kubernetes_guesses),
		cmocka_unit_test(test_digit_limit),
		cmocka_unit_test(test_roundtrip_generated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
