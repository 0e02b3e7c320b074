/*
 * Kubernetes resource.Quantity: parse, compare and print the way
 * k8s.io/apimachinery/pkg/api/resource does, so that "20Gi" in an
 * annotation and "21474836480" or "20Gi" in a PVC status compare exactly.
 *
 *   <quantity>     ::= <signedNumber><suffix>
 *   <signedNumber> ::= [+-]? ( <digits> | <digits>. | .<digits> | <digits>.<digits> )
 *   <suffix>       ::= Ki Mi Gi Ti Pi Ei            (BinarySI, powers of 1024)
 *                    | n u m "" k M G T P E         (DecimalSI, powers of 1000)
 *                    | (e|E) [+-]? <digits>         (DecimalExponent)
 *
 * Values are exact decimals, never floating point. As Kubernetes does,
 * parsing keeps a value down to the nano (10^-9) and rounds anything finer
 * away from zero ("0.1n" is 1n, "-0.1n" is -1n), and caps a BinarySI value
 * at 2^63-1 in magnitude ("8Ei" parses as 9223372036854775807).
 *
 * Where this differs from Kubernetes' ParseQuantity, it refuses instead of
 * guessing (never a silently different value):
 *  - a number with no digits ("Gi", ".", "-", "m"), which Kubernetes reads
 *    as zero;
 *  - an exponent outside [-2147483647, 2147483647] ("1e4294967297"), which
 *    older Kubernetes truncates to 32 bits;
 *  - a value whose magnitude reaches 10^2147483648 ("10e2147483647"), whose
 *    canonical exponent no longer fits 32 bits;
 *  - more than QUANTITY_MAX_DIGITS significant digits after rounding to the
 *    nano (Kubernetes has no limit; storage sizes need at most 28).
 * Whitespace anywhere is refused, as ParseQuantity does (only Kubernetes'
 * JSON decoder trims it first).
 *
 * A struct quantity holds no pointers: copy it by value, no release needed.
 * All functions are pure and thread-safe.
 */
#ifndef SOP_CLIENT_QUANTITY_H
#define SOP_CLIENT_QUANTITY_H

#include <stdbool.h>
#include <stdint.h>

/* How a quantity is printed; remembered from the suffix it was parsed with. */
enum quantity_format {
	QUANTITY_DECIMAL_SI,       /* 12M  = 12 * 10^6; also a bare "12" */
	QUANTITY_BINARY_SI,        /* 12Mi = 12 * 2^20 */
	QUANTITY_DECIMAL_EXPONENT, /* 12e6 */
};

#define QUANTITY_MAX_DIGITS 128

/*
 * value = (negative ? -1 : 1) * digits * 10^exponent. digits holds ndigits
 * ASCII digits, the first and the last non-zero, not NUL-terminated; zero
 * is ndigits == 0 (and never negative). Read the fields freely; build
 * values only with quantity_parse() or quantity_from_int64().
 */
struct quantity {
	enum quantity_format format;
	bool negative;
	int ndigits;
	int32_t exponent;
	char digits[QUANTITY_MAX_DIGITS];
};

/*
 * Parses s (borrowed) into *out. Returns 0, or -1 with *out zeroed and, when
 * err is not NULL, *err set to a new string (caller frees) that quotes the
 * input and says what is wrong with it, for example:
 *   "20Gb": unknown suffix "Gb"; use Ki, Mi, Gi, Ti, Pi, Ei or n, u, m, k, M, G, T, P, E
 * On success *err is set to NULL.
 */
int quantity_parse(const char *s, struct quantity *out, char **err)
	__attribute__((warn_unused_result));

/* Exact numeric comparison, whatever the formats: <0, 0 or >0. */
int quantity_cmp(const struct quantity *a, const struct quantity *b);

/* -1, 0 or 1. */
int quantity_sign(const struct quantity *q);

/*
 * The canonical string, as Kubernetes' Quantity.String() prints it: the
 * largest suffix of q's format that keeps an integer mantissa ("1.5Gi" is
 * "1536Mi", "0.5" is "500m", "1000" is "1k"). BinarySI prints as DecimalSI
 * below 1024 in magnitude or when not a whole number; DecimalSI past "E"
 * prints as an exponent ("1000E" is "1e21"). Returns a new string (caller
 * frees); never NULL.
 */
char *quantity_format(const struct quantity *q);

/*
 * Kubernetes' Value(): q rounded to an integer away from zero ("1500m" is
 * 2, "-1500m" is -2). Returns 0, or -1 when the result does not fit an
 * int64 (*out untouched).
 */
int quantity_to_int64(const struct quantity *q, int64_t *out)
	__attribute__((warn_unused_result));

/* Kubernetes' NewQuantity(v, format): the exact integer v. */
void quantity_from_int64(int64_t v, enum quantity_format format, struct quantity *out);

#endif
