/*
 * The autoresize policy: its annotation syntax and refusals, and the
 * decision arithmetic (thresholds, step, rounding, maximum, cooldown).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/quantity.h"
#include "controllers/autoresize/autoresize_policy.h"
#include "util/duration.h"

#define KI (1LL << 10)
#define MI (1LL << 20)
#define GI (1LL << 30)
#define TI (1LL << 40)
#define EI (1LL << 60)
#define HOUR_MS (3600LL * 1000)

/* To compute a step the way the policy must, without overflow. */
__extension__ typedef __int128 wide;

/* A policy the parser accepts; fails the test when it refuses. */
static struct autoresize_policy policy(const char *text)
{
	struct autoresize_policy p;
	char *why = NULL;
	if (autoresize_policy_parse(text, &p, &why) != 0)
		fail_msg("\"%s\" refused: %s", text, why);
	assert_null(why);
	return p;
}

/* The refusal of text (a new string); fails the test when accepted, or when *p is not zeroed. */
static char *refusal(const char *text)
{
	struct autoresize_policy p, zero;
	memset(&p, 0x5a, sizeof(p));
	memset(&zero, 0, sizeof(zero));
	char *why = NULL;
	if (autoresize_policy_parse(text, &p, &why) != -1)
		fail_msg("\"%s\" accepted", text);
	assert_non_null(why);
	assert_memory_equal(&p, &zero, sizeof(p));
	return why;
}

static void expect_refusal(const char *text, const char *message)
{
	char *why = refusal(text);
	assert_string_equal(why, message);
	free(why);
}

/* Refused with a message that starts "<key>: " and says more after it. */
static void expect_refusal_of_key(const char *text, const char *key)
{
	char *why = refusal(text);
	size_t n = strlen(key);
	if (strncmp(why, key, n) || strncmp(why + n, ": ", 2) || strlen(why) < n + 12 || strlen(why) >= 1024)
		fail_msg("\"%s\": the message \"%s\" does not start with \"%s: \" and say why in under 1 kB", text,
			 why, key);
	free(why);
}

/* text parses into exactly want, field by field. */
static void expect_policy(const char *text, struct autoresize_policy want)
{
	struct autoresize_policy p = policy(text);
	assert_int_equal(p.used_percent, want.used_percent);
	assert_int_equal(p.free_below_bytes, want.free_below_bytes);
	assert_int_equal(p.inodes_percent, want.inodes_percent);
	assert_int_equal(p.step_percent, want.step_percent);
	assert_int_equal(p.step_bytes, want.step_bytes);
	assert_int_equal(p.max_bytes, want.max_bytes);
	assert_int_equal(p.cooldown_ms, want.cooldown_ms);
	assert_int_equal(p.recommend_only, want.recommend_only);
	assert_int_equal(p.allow_copy, want.allow_copy);
	assert_int_equal(p.per_claim, want.per_claim);
}

static void test_defaults(void **state)
{
	(void)state;
	assert_int_equal(AUTORESIZE_DEFAULT_USED_PERCENT, 80);
	assert_int_equal(AUTORESIZE_DEFAULT_STEP_PERCENT, 20);
	assert_int_equal(AUTORESIZE_DEFAULT_COOLDOWN_MS, 6 * HOUR_MS);
	/* used=80%, step=20%, cooldown=6h, mode=grow, allow-copy=false, scope=template. */
	expect_policy("max=500Gi", (struct autoresize_policy){.used_percent = 80, .step_percent = 20,
							       .max_bytes = 500 * GI, .cooldown_ms = 6 * HOUR_MS});
	/* A trigger given: no used=80% added to it. */
	expect_policy("free=5Gi, max=500Gi", (struct autoresize_policy){.free_below_bytes = 5 * GI, .step_percent = 20,
									 .max_bytes = 500 * GI,
									 .cooldown_ms = 6 * HOUR_MS});
	expect_policy("inodes=90%,max=500Gi", (struct autoresize_policy){.inodes_percent = 90, .step_percent = 20,
									  .max_bytes = 500 * GI,
									  .cooldown_ms = 6 * HOUR_MS});
}

static void test_every_key_any_order_with_spaces(void **state)
{
	(void)state;
	expect_policy(" scope = claim ,allow-copy=true,  mode= recommend,cooldown =1h30m, max=1Ti, step=10Gi,"
		      "inodes=95% ,free=5Gi ,used=70%,",
		      (struct autoresize_policy){.used_percent = 70, .free_below_bytes = 5 * GI, .inodes_percent = 95,
						 .step_bytes = 10 * GI, .max_bytes = TI, .cooldown_ms = 90 * 60 * 1000LL,
						 .recommend_only = true, .allow_copy = true, .per_claim = true});
	expect_policy("step=5%,max=100Gi,mode=grow,allow-copy=false,scope=template,cooldown=0s",
		      (struct autoresize_policy){.used_percent = 80, .step_percent = 5, .max_bytes = 100 * GI});
	/* Bounds, quantities in any notation, free rounded up to a whole byte. */
	expect_policy("used=1%,inodes=99%,step=1000%,max=10737418240,free=0.5",
		      (struct autoresize_policy){.used_percent = 1, .free_below_bytes = 1, .inodes_percent = 99,
						 .step_percent = 1000, .max_bytes = 10 * GI, .cooldown_ms = 6 * HOUR_MS});
	expect_policy("step=1e9,max=8Ei", (struct autoresize_policy){.used_percent = 80, .step_bytes = 1000000000,
								      .max_bytes = INT64_MAX,
								      .cooldown_ms = 6 * HOUR_MS});
}

/* The exact text of a few refusals, as they go into Warning Events. */
static void test_refusal_messages(void **state)
{
	(void)state;
	expect_refusal("", "max: required (the size autoresize never grows past, e.g. max=500Gi)");
	expect_refusal(NULL, "max: required (the size autoresize never grows past, e.g. max=500Gi)");
	expect_refusal("used=80%", "max: required (the size autoresize never grows past, e.g. max=500Gi)");
	expect_refusal("step=20, max=1Ti",
		       "step: \"20\" is neither a percentage nor a quantity with a unit; use a whole percentage from 1% to "
		       "1000% or a quantity of whole bytes above zero, e.g. step=20% or step=10Gi");
	expect_refusal("used=100%,max=1Ti",
		       "used: \"100%\" is out of range; use a whole percentage from 1% to 99%, e.g. used=80%");
	expect_refusal("used=80,max=1Ti",
		       "used: \"80\" is not a whole percentage; use a whole percentage from 1% to 99%, e.g. used=80%");
	expect_refusal("max=20Gb",
		       "max: \"20Gb\": unknown suffix \"Gb\"; use Ki, Mi, Gi, Ti, Pi, Ei or n, u, m, k, M, G, T, P, E");
	expect_refusal("max=1500m", "max: \"1500m\" is not a whole number of bytes; use a quantity of whole bytes above "
				    "zero, e.g. max=500Gi");
	expect_refusal("max=0", "max: \"0\" is not above zero; use a quantity of whole bytes above zero, e.g. max=500Gi");
	expect_refusal("colour=red,max=1Ti", "colour: unknown key; the keys are used, free, inodes, step, max, cooldown, "
					     "mode, allow-copy and scope");
	expect_refusal("max=1Ti,max=2Ti", "max: given twice; give each key once");
	expect_refusal("max", "max: no \"=\" after the key; use a quantity of whole bytes above zero, e.g. max=500Gi");
	expect_refusal("max=", "max: empty value; use a quantity of whole bytes above zero, e.g. max=500Gi");
	expect_refusal("free=5Gi,max=5Gi", "free: 5Gi is not below max (5Gi); use a quantity below max");
	expect_refusal("max=1Ti,mode=shrink", "mode: \"shrink\" is not a mode; use grow, recommend or off");
	expect_refusal("max=1Ti,allow-copy=yes", "allow-copy: \"yes\" is not a boolean; use true or false");
	expect_refusal("max=1Ti,scope=pod", "scope: \"pod\" is not a scope; use template or claim");

	/* Quantity and duration problems are told in their parsers' own words. */
	char *qerr = NULL, *derr = NULL, *expected = NULL;
	struct quantity q;
	int64_t ms;
	assert_int_equal(quantity_parse("5 Gi", &q, &qerr), -1);
	assert_int_equal(asprintf(&expected, "free: %s", qerr), (int)strlen(qerr) + 6);
	expect_refusal("free=5 Gi,max=1Ti", expected);
	free(expected);
	assert_int_equal(duration_parse("6d", &ms, &derr), -1);
	assert_int_equal(asprintf(&expected, "cooldown: %s", derr), (int)strlen(derr) + 10);
	expect_refusal("max=1Ti,cooldown=6d", expected);
	free(expected);
	free(qerr);
	free(derr);
}

/* Every refusal starts with the key it is about. */
static void test_refusals_name_their_key(void **state)
{
	(void)state;
	static const struct {
		const char *text, *key;
	} cases[] = {
		{"used=0%,max=1Ti", "used"},
		{"used=99.5%,max=1Ti", "used"},
		{"used=-5%,max=1Ti", "used"},
		{"used=80%%,max=1Ti", "used"},
		{"used=99999999999999999999%,max=1Ti", "used"},
		{"used=,max=1Ti", "used"},
		{"used,max=1Ti", "used"},
		{"used 80%,max=1Ti", "used"},
		{"used=80%,used=80%,max=1Ti", "used"},
		{"free=0,max=1Ti", "free"},
		{"free=-1Gi,max=1Ti", "free"},
		{"free=5GB,max=1Ti", "free"},
		{"free=,max=1Ti", "free"},
		{"free=2Ti,max=1Ti", "free"},
		{"free=1Ti,max=1Ti", "free"},
		{"inodes=100%,max=1Ti", "inodes"},
		{"inodes=x,max=1Ti", "inodes"},
		{"inodes=90,max=1Ti", "inodes"},
		{"step=0%,max=1Ti", "step"},
		{"step=1001%,max=1Ti", "step"},
		{"step=0,max=1Ti", "step"},
		{"step=20,max=1Ti", "step"},
		{"step=1500m,max=1Ti", "step"},
		{"step=-1Gi,max=1Ti", "step"},
		{"step=0Gi,max=1Ti", "step"},
		{"step=10Gb,max=1Ti", "step"},
		{"step=,max=1Ti", "step"},
		{"step=5%,step=10%,max=1Ti", "step"},
		{"max=1.5", "max"},
		{"max=-5Gi", "max"},
		{"max=10E", "max"},
		{"max=Gi", "max"},
		{"max = ", "max"},
		{"max=1Ti,step=1%,max=2Ti", "max"},
		{"max=1Ti,cooldown=-1h", "cooldown"},
		{"max=1Ti,cooldown=6", "cooldown"},
		{"max=1Ti,cooldown=", "cooldown"},
		{"max=1Ti,mode=Grow", "mode"},
		{"max=1Ti,allow-copy=1", "allow-copy"},
		{"max=1Ti,scope=", "scope"},
		{"max=1Ti,size=2Ti", "size"},
		{"max=1Ti,Max=2Ti", "Max"},
		{"used=80%", "max"},
		{"max=1Ti,max=1Ti", "max"},
		/* 65 characters: over the limit of what a value may be. */
		{"max=10000000000000000000000000000000000000000000000000000000000000000", "max"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_refusal_of_key(cases[i].text, cases[i].key);
}

/* Keys and values a user could paste by mistake stay short in the message. */
static void test_refusal_of_long_text_is_short(void **state)
{
	(void)state;
	char text[600];
	memset(text, 'k', 500);
	strcpy(text + 500, "=1,max=1Ti");
	char *why = refusal(text);
	assert_true(strlen(why) < 200);
	assert_int_equal(strncmp(why, "kkkkkkkkkk", 10), 0);
	assert_non_null(strstr(why, "...: unknown key"));
	free(why);

	strcpy(text, "max=");
	memset(text + 4, '1', 500);
	text[504] = '\0';
	why = refusal(text);
	assert_string_equal(why, "max: the value is 500 characters long (at most 64); use a quantity of whole bytes "
				 "above zero, e.g. max=500Gi");
	free(why);

	/* Bytes outside printable ASCII are written \xNN (an Event's message must be valid UTF-8). */
	expect_refusal("caf\xc3\xa9=1,max=1Ti", "caf\\xc3\\xa9: unknown key; the keys are used, free, inodes, step, max, "
						"cooldown, mode, allow-copy and scope");
	expect_refusal("max=1Ti,cooldown=6\xc2\xb5\n",
		       "cooldown: \"6\\xc2\\xb5\" is not a duration (unknown unit; use ns, us, ms, s, m or h); write it "
		       "like 90s, 30m, 1h30m or 24h");
	expect_refusal("max=1Ti\x01", "max: \"1Ti\\x01\": unknown suffix \"Ti\\x01\"; use Ki, Mi, Gi, Ti, Pi, Ei or n, "
				      "u, m, k, M, G, T, P, E");
	char *why2 = NULL;
	int64_t g;
	assert_int_equal(autoresize_granularity_parse("4\xffGi", &g, &why2), -1);
	assert_null(strchr(why2, '\xff'));
	assert_non_null(strstr(why2, "\\xff"));
	free(why2);

	/* The longest value, every byte escaped and quoted twice by the quantity parser: still under 1 kB. */
	strcpy(text, "max=1");
	memset(text + 5, 0xff, 63);
	text[68] = '\0';
	why = refusal(text);
	assert_true(strlen(why) > 500 && strlen(why) < 1024);
	free(why);

	expect_refusal("=5Gi,max=1Ti", "\"=5Gi\": no key before \"=\"; the keys are used, free, inodes, step, max, "
				       "cooldown, mode, allow-copy and scope");
}

static void test_granularity(void **state)
{
	(void)state;
	int64_t g = 0;
	char *why = (char *)"unset";
	assert_int_equal(autoresize_granularity_parse(NULL, &g, &why), 0);
	assert_null(why);
	assert_int_equal(g, AUTORESIZE_DEFAULT_GRANULARITY);
	assert_int_equal(g, GI);
	assert_int_equal(autoresize_granularity_parse("4Gi", &g, &why), 0);
	assert_int_equal(g, 4 * GI);
	assert_int_equal(autoresize_granularity_parse(" 64Mi ", &g, &why), 0);
	assert_int_equal(g, 64 * MI);

	static const char *const bad[] = {"0", "-4Gi", "1.5", "", "4GB", "four"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(autoresize_granularity_parse(bad[i], &g, &why), -1);
		assert_non_null(why);
		if (strncmp(why, "granularity: ", 13))
			fail_msg("\"%s\": \"%s\" does not start with \"granularity: \"", bad[i], why);
		free(why);
	}
	assert_int_equal(autoresize_granularity_parse("0", &g, &why), -1);
	assert_string_equal(why, "granularity: \"0\" is not above zero; use a quantity of whole bytes above zero, e.g. 4Gi");
	free(why);
}

static void expect_bytes_text(int64_t bytes, const char *text)
{
	char *s = autoresize_bytes_text(bytes);
	assert_string_equal(s, text);
	free(s);
}

static void test_bytes_text(void **state)
{
	(void)state;
	expect_bytes_text(1073741824, "1Gi");
	expect_bytes_text(1610612736, "1536Mi");
	expect_bytes_text(1000, "1000");
	expect_bytes_text(1025, "1025");
	expect_bytes_text(1024, "1Ki");
	expect_bytes_text(1024000, "1000Ki");
	expect_bytes_text(0, "0");
	expect_bytes_text(320 * MI, "320Mi");
	expect_bytes_text(4 * EI, "4Ei");
	expect_bytes_text(1024 * TI, "1Pi");
	expect_bytes_text(INT64_MAX, "9223372036854775807");
	expect_bytes_text(INT64_MAX - 1023, "9007199254740991Ki");
}

static struct volume_usage usage(int64_t used, int64_t available)
{
	int64_t capacity = available > INT64_MAX - used ? INT64_MAX : used + available;
	struct volume_usage u = {.capacity_bytes = capacity, .used_bytes = used, .available_bytes = available};
	return u;
}

/* Decides with no earlier growth at now 1 h, the usage u and size. */
static struct autoresize_decision decide(const char *text, struct volume_usage u, int64_t size, int64_t granularity)
{
	struct autoresize_policy p = policy(text);
	struct autoresize_decision d;
	autoresize_decide(&p, &u, size, 0, HOUR_MS, granularity, &d);
	return d;
}

/* The size GROW asks for, failing when the verdict is another. */
static int64_t grown(const char *text, int64_t size, int64_t granularity)
{
	struct autoresize_decision d = decide(text, usage(90, 10), size, granularity);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	assert_true(d.new_bytes > size);
	return d.new_bytes;
}

static void test_used_threshold(void **state)
{
	(void)state;
	struct autoresize_decision d = decide("used=80%,max=1Ti", usage(272 * MI, 48 * MI), 320 * MI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	assert_string_equal(d.trigger, "used 85% (272Mi of 320Mi) >= 80%");
	assert_true(d.used_ratio > 0.8499 && d.used_ratio < 0.8501);

	/* Exactly at the threshold crosses it; a byte under does not. */
	d = decide("max=1Ti", usage(80, 20), GI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	assert_string_equal(d.trigger, "used 80% (80 of 100) >= 80%");
	d = decide("max=1Ti", usage(8 * GI - 1, 2 * GI + 1), 10 * GI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_BELOW);
	assert_string_equal(d.trigger, "");
	assert_int_equal(d.new_bytes, 0);

	/* Figures that are not whole units show one decimal. */
	d = decide("used=50%,max=1Ti", usage(GI + GI / 2, GI / 2), 2 * GI, GI);
	assert_string_equal(d.trigger, "used 75% (1.5Gi of 2Gi) >= 50%");

	/* Nothing known (used and free 0): ratio 0, below everything. */
	d = decide("used=1%,max=1Ti", usage(0, 0), GI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_BELOW);
	assert_true(d.used_ratio == 0);
}

static void test_free_threshold(void **state)
{
	(void)state;
	struct autoresize_decision d = decide("free=5Mi,max=1Ti", usage(100 * MI, 3 * MI), GI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	assert_string_equal(d.trigger, "free 3Mi < 5Mi");
	/* Exactly the quantity free is not below it; with only free given, used space alone does not count. */
	d = decide("free=5Mi,max=1Ti", usage(100 * MI, 5 * MI), GI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_BELOW);
	d = decide("free=5Mi,max=1Ti", usage(990 * MI, 10 * MI), GI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_BELOW);
}

/* usage(used, available) with an inode count (0: not known) and how many are used. */
static struct volume_usage inode_usage(int64_t used, int64_t available, int64_t inodes, int64_t inodes_used)
{
	struct volume_usage u = usage(used, available);
	u.inodes = inodes;
	u.inodes_used = inodes_used;
	return u;
}

/* text decided for a 1Gi claim on u: verdict, and trigger unless NULL. */
static void expect_decision(const char *text, struct volume_usage u, enum autoresize_verdict verdict,
			    const char *trigger)
{
	struct autoresize_decision d = decide(text, u, GI, GI);
	assert_int_equal(d.verdict, verdict);
	if (trigger)
		assert_string_equal(d.trigger, trigger);
}

static void test_inodes_threshold(void **state)
{
	(void)state;
	expect_decision("inodes=90%,max=1Ti", inode_usage(10 * MI, 990 * MI, 10000, 9100), AUTORESIZE_GROW,
			"inodes used 91% (9100 of 10000) >= 90%");
	expect_decision("inodes=90%,max=1Ti", inode_usage(10 * MI, 990 * MI, 10000, 8999), AUTORESIZE_BELOW, "");
	expect_decision("inodes=90%,max=1Ti", inode_usage(10 * MI, 990 * MI, 10000, 9000), AUTORESIZE_GROW,
			"inodes used 90% (9000 of 10000) >= 90%");
	/* Inodes not known (0, as on file systems without a fixed count): never a trigger. */
	expect_decision("inodes=90%,max=1Ti", inode_usage(10 * MI, 990 * MI, 0, 9999), AUTORESIZE_BELOW, "");
	/* Inodes alone crossing triggers even under the used-space threshold of the same policy. */
	expect_decision("used=80%,inodes=90%,max=1Ti", inode_usage(10 * MI, 990 * MI, 100, 95), AUTORESIZE_GROW,
			"inodes used 95% (95 of 100) >= 90%");
}

/* Several crossed: all of them, in the order used, free, inodes; told under every over verdict, not only GROW. */
static void test_several_triggers(void **state)
{
	(void)state;
	static const char all[] = "used 97% (100Mi of 103Mi) >= 80%; free 3Mi < 5Mi; inodes used 91% (9100 of 10000) "
				  ">= 90%";
	struct volume_usage u = inode_usage(100 * MI, 3 * MI, 10000, 9100);
	expect_decision("inodes=90%,free=5Mi,used=80%,max=1Ti", u, AUTORESIZE_GROW, all);
	expect_decision("inodes=90%,free=5Mi,used=80%,max=1Gi", u, AUTORESIZE_AT_MAX, all);
}

static void test_step_and_rounding(void **state)
{
	(void)state;
	/* Percent of the size, rounded up to the default 1Gi. */
	assert_int_equal(grown("max=1Ti", 10 * GI, GI), 12 * GI);
	assert_int_equal(grown("max=1Ti", 5 * GI, GI), 6 * GI);
	assert_int_equal(grown("max=1Ti", 3 * GI, GI), 4 * GI);       /* 3.6Gi */
	assert_int_equal(grown("step=1%,max=1Ti", GI, GI), 2 * GI);   /* 1Gi + 10.24Mi */
	assert_int_equal(grown("max=1Ti", 10 * GI + MI, GI), 13 * GI); /* 12.2Gi */
	/* A class granularity of 4Gi: the size lands on a multiple of it. */
	assert_int_equal(grown("max=1Ti", 10 * GI, 4 * GI), 12 * GI);
	assert_int_equal(grown("max=1Ti", 8 * GI, 4 * GI), 12 * GI);  /* 9.6Gi */
	assert_int_equal(grown("step=10%,max=1Ti", 10 * GI, 4 * GI), 12 * GI);
	assert_int_equal(grown("step=100%,max=1Ti", 10 * GI, 4 * GI), 20 * GI);
	/* 64Mi: 1000Mi + 5% is 1050Mi, up to 1088Mi (17 x 64Mi). */
	assert_int_equal(grown("step=5%,max=1Ti", 1000 * MI, 64 * MI), 1088 * MI);
	/* A quantity step, rounded the same way. */
	assert_int_equal(grown("step=10Gi,max=1Ti", 100 * GI, GI), 110 * GI);
	assert_int_equal(grown("step=100Mi,max=1Ti", 10 * GI, GI), 11 * GI);
	assert_int_equal(grown("step=100Mi,max=1Ti", 10 * GI, 64 * MI), 10 * GI + 128 * MI);
	/* A percentage of bytes rounds up, never to nothing: 20% of 1001 is 200.2, so 201. */
	assert_int_equal(grown("max=1Ti", 1000, 1), 1200);
	assert_int_equal(grown("max=1Ti", 1001, 1), 1202);
	assert_int_equal(grown("step=1%,max=1Ti", 1, 1), 2);
	/* No granularity given (0): the default 1Gi. */
	assert_int_equal(grown("max=1Ti", 10 * GI, 0), 12 * GI);
}

static void test_maximum(void **state)
{
	(void)state;
	/* The step would pass the maximum: it grows to the maximum, even when that is not a multiple of the granularity. */
	assert_int_equal(grown("max=100Gi", 90 * GI, GI), 100 * GI);
	assert_int_equal(grown("max=10500Mi", 10 * GI, 4 * GI), 10500 * MI);
	assert_int_equal(grown("max=10Gi", 10 * GI - 1, GI), 10 * GI);
	/* At or past the maximum: AT_MAX with what crossed, no new size. */
	struct autoresize_decision d = decide("max=100Gi", usage(95, 5), 100 * GI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_AT_MAX);
	assert_int_equal(d.new_bytes, 0);
	assert_string_equal(d.trigger, "used 95% (95 of 100) >= 80%");
	d = decide("max=100Gi", usage(95, 5), 120 * GI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_AT_MAX);
	/* Under every threshold, the maximum does not matter. */
	assert_int_equal(decide("max=100Gi", usage(5, 95), 100 * GI, GI).verdict, AUTORESIZE_BELOW);
	/* Recommend-only and scope do not change the arithmetic. */
	assert_int_equal(grown("max=100Gi,mode=recommend,scope=claim", 90 * GI, GI), 100 * GI);
}

static void test_cooldown(void **state)
{
	(void)state;
	struct autoresize_policy p = policy("max=1Ti");
	struct volume_usage u = usage(90, 10);
	struct autoresize_decision d;
	const int64_t last = 1764000000000LL; /* a wall clock time in ms (2025) */
	const int64_t end = last + 6 * HOUR_MS;

	autoresize_decide(&p, &u, 10 * GI, last, last + 1, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_COOLDOWN);
	assert_int_equal(d.next_ms, end);
	assert_int_equal(d.new_bytes, 0);
	assert_string_equal(d.trigger, "used 90% (90 of 100) >= 80%");
	autoresize_decide(&p, &u, 10 * GI, last, end - 1, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_COOLDOWN);
	assert_int_equal(d.next_ms, end);
	/* Exactly at the end of the cooldown, and after it: it grows. */
	autoresize_decide(&p, &u, 10 * GI, last, end, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	assert_int_equal(d.new_bytes, 12 * GI);
	assert_int_equal(d.next_ms, 0);
	autoresize_decide(&p, &u, 10 * GI, last, end + HOUR_MS, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	/* Never grown: no cooldown, even at the start of the clock. */
	autoresize_decide(&p, &u, 10 * GI, 0, 1, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	/* Below the thresholds the cooldown is not reported. */
	u = usage(10, 90);
	autoresize_decide(&p, &u, 10 * GI, last, last + 1, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_BELOW);
	/* At the maximum, AT_MAX wins over the cooldown: waiting would not help. */
	u = usage(90, 10);
	autoresize_decide(&p, &u, TI, last, last + 1, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_AT_MAX);

	/* cooldown=0s: again at once; a custom cooldown is measured from the last growth. */
	p = policy("max=1Ti,cooldown=0s");
	autoresize_decide(&p, &u, 10 * GI, last, last, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	p = policy("max=1Ti,cooldown=30m");
	autoresize_decide(&p, &u, 10 * GI, last, last + 29 * 60 * 1000LL, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_COOLDOWN);
	assert_int_equal(d.next_ms, last + 30 * 60 * 1000LL);
	/* A cooldown that would end past the clock's range waits "for ever", not until an overflowed past. */
	p = policy("max=1Ti,cooldown=2000000h");
	autoresize_decide(&p, &u, 10 * GI, INT64_MAX - HOUR_MS, INT64_MAX - 1, GI, &d);
	assert_int_equal(d.verdict, AUTORESIZE_COOLDOWN);
	assert_int_equal(d.next_ms, INT64_MAX);
}

/* Sizes in the Ei range: no overflow in the step, the rounding or the usage figures. */
static void test_large_sizes(void **state)
{
	(void)state;
	assert_int_equal(grown("step=50%,max=8Ei", 5 * EI, GI), 7 * EI + EI / 2);
	assert_int_equal(grown("step=1000%,max=8Ei", 4 * EI, GI), INT64_MAX);
	assert_int_equal(grown("step=8Ei,max=8Ei", 7 * EI, 4 * GI), INT64_MAX);
	assert_int_equal(grown("step=1%,max=8Ei", 7 * EI, EI), INT64_MAX);
	assert_int_equal(grown("step=1%,max=8Ei", 6 * EI, EI), 7 * EI);
	assert_int_equal(decide("max=8Ei", usage(90, 10), INT64_MAX, GI).verdict, AUTORESIZE_AT_MAX);

	/* used + free past 8Ei still gives the right share and figures. */
	struct autoresize_decision d = decide("used=49%,max=8Ei", usage(INT64_MAX - 10, INT64_MAX), EI, GI);
	assert_int_equal(d.verdict, AUTORESIZE_GROW);
	assert_string_equal(d.trigger, "used 49% (8Ei of 16Ei) >= 49%");
	assert_true(d.used_ratio > 0.4999 && d.used_ratio < 0.5001);
	expect_decision("inodes=99%,max=8Ei", inode_usage(0, GI, INT64_MAX, INT64_MAX - 1), AUTORESIZE_GROW,
			"inodes used 99% (9223372036854775806 of 9223372036854775807) >= 99%");
}

/* Over many sizes, steps and granularities: GROW is always larger, within max, on the granularity or at max. */
static void test_grow_invariants(void **state)
{
	(void)state;
	static const char *const policies[] = {"step=1%,max=3Ti", "max=3Ti", "step=1000%,max=3Ti", "step=1e0,max=3Ti",
					       "step=1Ki,max=3Ti", "step=7Gi,max=3Ti", "step=20%,max=1000000000007"};
	static const int64_t granularities[] = {1, 4096, 64 * MI, GI, 4 * GI, 3 * GI + 17};
	uint64_t seed = 42;
	for (size_t pi = 0; pi < sizeof(policies) / sizeof(policies[0]); pi++) {
		struct autoresize_policy p = policy(policies[pi]);
		for (size_t gi = 0; gi < sizeof(granularities) / sizeof(granularities[0]); gi++)
			for (int n = 0; n < 200; n++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				int64_t size = (int64_t)(seed >> 22) % (4 * TI) + 1;
				int64_t g = granularities[gi];
				struct volume_usage u = usage(95, 5);
				struct autoresize_decision d;
				autoresize_decide(&p, &u, size, 0, HOUR_MS, g, &d);
				if (size >= p.max_bytes) {
					assert_int_equal(d.verdict, AUTORESIZE_AT_MAX);
					continue;
				}
				assert_int_equal(d.verdict, AUTORESIZE_GROW);
				assert_true(d.new_bytes > size);
				assert_true(d.new_bytes <= p.max_bytes);
				if (d.new_bytes != p.max_bytes) {
					assert_int_equal(d.new_bytes % g, 0);
					int64_t step = p.step_bytes ? p.step_bytes
								    : (int64_t)(((wide)size * p.step_percent + 99) / 100);
					assert_true(d.new_bytes >= size + step);
					assert_true(d.new_bytes < size + step + g);
				}
			}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key_any_order_with_spaces),
		cmocka_unit_test(test_refusal_messages),
		cmocka_unit_test(test_refusals_name_their_key),
		cmocka_unit_test(test_refusal_of_long_text_is_short),
		cmocka_unit_test(test_granularity),
		cmocka_unit_test(test_bytes_text),
		cmocka_unit_test(test_used_threshold),
		cmocka_unit_test(test_free_threshold),
		cmocka_unit_test(test_inodes_threshold),
		cmocka_unit_test(test_several_triggers),
		cmocka_unit_test(test_step_and_rounding),
		cmocka_unit_test(test_maximum),
		cmocka_unit_test(test_cooldown),
		cmocka_unit_test(test_large_sizes),
		cmocka_unit_test(test_grow_invariants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
