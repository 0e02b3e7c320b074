/*
 * The published usage (controllers/autoresize/usage_published.c) on any
 * annotation text: anyone who may write a claim writes it. What is accepted
 * is a file system's figures (usage_valid), and reads back the same once
 * the operator writes it again; deciding whether to write never fails on it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/autoresize/usage_published.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size);
	struct usage_published p;
	if (usage_published_parse(text, &p) == 0) {
		FUZZ_CHECK(strlen(text) <= USAGE_TEXT_MAX, "no text longer than the cap is accepted");
		FUZZ_CHECK(usage_valid(&p.usage), "accepted figures are a file system's");
		FUZZ_CHECK(p.observed_s >= 0, "a time was read");
		char *again = usage_published_text(&p.usage, p.observed_s);
		FUZZ_CHECK(strlen(again) <= USAGE_TEXT_MAX, "what the operator writes is within the cap");
		struct usage_published q;
		FUZZ_CHECK(usage_published_parse(again, &q) == 0, "what the operator writes reads back");
		FUZZ_CHECK(!memcmp(&p, &q, sizeof(p)), "and reads back the same");
		FUZZ_CHECK(!usage_published_due(&p, &q.usage, p.observed_s), "unchanged figures are not written again");
		FUZZ_CHECK(usage_published_due(&p, &q.usage, p.observed_s + USAGE_PUBLISH_REFRESH_S),
			   "old figures are written again");
		free(again);
	}
	free(text);
	return 0;
}
