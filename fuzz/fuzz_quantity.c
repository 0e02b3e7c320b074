/*
 * The quantity parser (client/quantity.c) on any text. A quantity that
 * parses prints canonically, and what it prints parses back to the same
 * value and, in the same format, prints the same again; a whole value
 * converts to an int64 and back unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/quantity.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_int64_round_trip(const struct quantity *q)
{
	int64_t v;
	if (q->exponent < 0 || quantity_to_int64(q, &v) < 0)
		return;
	struct quantity back;
	quantity_from_int64(v, q->format, &back);
	FUZZ_CHECK(quantity_cmp(q, &back) == 0, "a whole quantity survives Value() and NewQuantity()");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size);
	struct quantity q;
	char *err = NULL;
	if (quantity_parse(text, &q, &err) < 0) {
		FUZZ_CHECK(err != NULL, "a refusal says why");
		free(err);
		free(text);
		return 0;
	}
	FUZZ_CHECK(err == NULL, "success leaves no message");
	FUZZ_CHECK(q.ndigits >= 0 && q.ndigits <= QUANTITY_MAX_DIGITS, "digits fit");
	FUZZ_CHECK(q.ndigits == 0 || (q.digits[0] != '0' && q.digits[q.ndigits - 1] != '0'),
		   "digits are normalised");

	char *printed = quantity_format(&q);
	struct quantity again;
	if (quantity_parse(printed, &again, &err) < 0) {
		free(err);
		FUZZ_CHECK(0, "the canonical string parses");
	}
	FUZZ_CHECK(quantity_cmp(&q, &again) == 0, "the canonical string has the same value");
	char *reprinted = quantity_format(&again);
	/* "62.5Ki" prints as "64000", which reads back as DecimalSI ("64k"), as in Kubernetes. */
	if (again.format == q.format)
		FUZZ_CHECK(strcmp(printed, reprinted) == 0, "the canonical string is a fixed point");
	check_int64_round_trip(&q);

	free(reprinted);
	free(printed);
	free(text);
	return 0;
}
