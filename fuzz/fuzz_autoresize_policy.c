/*
 * The autoresize policy parser (controllers/autoresize/autoresize_policy.c)
 * on any annotation text, also read as a StorageClass granularity. A
 * refusal says why, starts with a key or the quoted item, and stays short
 * enough for an Event; an accepted policy (but an opt-out, mode=off) holds
 * together (a trigger, one step, free below max) and its decisions grow within max, on the
 * granularity.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/autoresize/autoresize_policy.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * events.k8s.io keeps 1 kB of a note. Values are refused past 64 bytes and
 * unknown keys cut at 40 before they are quoted (a byte at most "\xNN").
 */
#define WHY_MAX 1024

/* A refusal names a known key first ("step: ..."), or is about a key it does not know, or a missing one. */
static void check_refusal(const char *why, const char *const *keys, size_t nkeys)
{
	FUZZ_CHECK(why != NULL, "a refusal says why");
	/* Or the whole text is too long to be read (AUTORESIZE_POLICY_TEXT_MAX). */
	bool named = strstr(why, ": unknown key; ") || strstr(why, "\": no key before \"=\"; ") ||
		     !strncmp(why, "the policy is ", 14);
	for (size_t i = 0; i < nkeys && !named; i++)
		named = !strncmp(why, keys[i], strlen(keys[i])) && !strncmp(why + strlen(keys[i]), ": ", 2);
	FUZZ_CHECK(named, "a refusal starts with the key it is about");
	FUZZ_CHECK(strlen(why) < WHY_MAX, "a refusal stays short enough for an Event");
	for (const char *c = why; *c; c++)
		FUZZ_CHECK(*c >= 0x20 && *c < 0x7f, "a refusal is printable ASCII, whatever the text held");
}

static void check_policy(const struct autoresize_policy *p)
{
	FUZZ_CHECK(p->max_bytes > 0, "max is above zero");
	FUZZ_CHECK(p->free_below_bytes >= 0 && p->free_below_bytes < p->max_bytes, "free is below max");
	FUZZ_CHECK(p->used_percent > 0 || p->free_below_bytes > 0 || p->inodes_percent > 0, "a trigger");
	FUZZ_CHECK(p->used_percent >= 0 && p->used_percent <= 99, "used is a share");
	FUZZ_CHECK(p->inodes_percent >= 0 && p->inodes_percent <= 99, "inodes is a share");
	FUZZ_CHECK((p->step_percent > 0) != (p->step_bytes > 0), "exactly one step");
	FUZZ_CHECK(p->step_percent <= 1000 && p->step_bytes >= 0, "the step is in range");
	FUZZ_CHECK(p->cooldown_ms >= 0, "the cooldown is not negative");
}

/* Decisions at a few sizes and granularities, full volume, never grown. */
static void check_decisions(const struct autoresize_policy *p)
{
	static const int64_t sizes[] = {1, 1000, 1LL << 30, 10LL << 30, 1LL << 40, INT64_MAX / 3, INT64_MAX - 1};
	static const int64_t granularities[] = {1, 4096, 1LL << 30, 3LL << 30, 1LL << 62};
	struct volume_usage u = {.capacity_bytes = 100, .used_bytes = 100, .inodes = 100, .inodes_used = 100};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t j = 0; j < sizeof(granularities) / sizeof(granularities[0]); j++) {
			struct autoresize_decision d;
			autoresize_decide(p, &u, sizes[i], 0, 1, granularities[j], &d);
			FUZZ_CHECK(d.verdict == AUTORESIZE_GROW || d.verdict == AUTORESIZE_AT_MAX, "a full volume is over");
			FUZZ_CHECK(d.trigger[0] != '\0', "what crossed is told");
			if (d.verdict == AUTORESIZE_AT_MAX) {
				FUZZ_CHECK(sizes[i] >= p->max_bytes, "AT_MAX only at the maximum");
				continue;
			}
			FUZZ_CHECK(d.new_bytes > sizes[i] && d.new_bytes <= p->max_bytes, "growth within max");
			FUZZ_CHECK(d.new_bytes == p->max_bytes || d.new_bytes % granularities[j] == 0,
				   "growth lands on the granularity, or on max");
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size);
	struct autoresize_policy p;
	char *why = NULL;
	static const char *const policy_keys[] = {"used", "free", "inodes", "step", "max",
						  "cooldown", "mode", "allow-copy", "scope"};
	static const char *const granularity_key[] = {"granularity"};
	if (autoresize_policy_parse(text, &p, &why) < 0) {
		check_refusal(why, policy_keys, sizeof(policy_keys) / sizeof(policy_keys[0]));
		free(why);
	} else {
		FUZZ_CHECK(why == NULL, "success leaves no message");
		FUZZ_CHECK(strlen(text) <= AUTORESIZE_POLICY_TEXT_MAX, "a text past the bound is refused unread");
		/* mode=off grows nothing: it needs no max, and its other fields mean nothing. */
		if (!p.off) {
			check_policy(&p);
			check_decisions(&p);
		}
	}
	int64_t granularity;
	if (autoresize_granularity_parse(text, &granularity, &why) < 0) {
		check_refusal(why, granularity_key, 1);
		free(why);
	} else {
		FUZZ_CHECK(granularity > 0, "a granularity is above zero");
	}
	free(text);
	return 0;
}
