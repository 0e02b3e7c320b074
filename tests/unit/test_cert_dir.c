/*
 * The webhook's certificate from a mounted Secret (cert_dir.c, and
 * cert_pair_check of webhook_cert.c): a good pair is served and a new one
 * served when the kubelet swaps the files; a bad, missing, mismatched or
 * expired one is refused with a reason that says what to fix, the pair
 * served before kept; readiness means a pair is served that has not
 * expired; the files are bounded and must be regular text files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output_capture.h"
#include "scratch_dir.h"
#include "util/xalloc.h"
#include "webhook/cert_dir.h"
#include "webhook/webhook_cert.h"

#define DAY (24LL * 3600)
#define SVC "stateful-operator-webhook.stateful-operator-system.svc"

static const char *const NAMES[] = {SVC, "stateful-operator-webhook", NULL};

/* A CA and a serving certificate for names, made at t, valid for days. */
static struct cert_bundle pair_for(const char *const *names, long long t, int days)
{
	struct cert_bundle b = CERT_BUNDLE_INIT;
	char *err = NULL;
	assert_int_equal(cert_bundle_make_ca(&b, "test-ca", 0, t, &err), 0);
	assert_int_equal(cert_bundle_make_serving(&b, names, days, t, &err), 0);
	assert_null(err);
	return b;
}

/* What serve() was handed, and what it answers. */
struct served {
	int calls;
	char *cert, *key;
	bool refuse;
};

static int serve(void *ctx, const char *cert_pem, const char *key_pem, char **err)
{
	struct served *s = ctx;
	s->calls++;
	if (s->refuse) {
		*err = xstrdup("key type not supported");
		return -1;
	}
	free(s->cert);
	free(s->key);
	s->cert = xstrdup(cert_pem);
	s->key = xstrdup(key_pem);
	return 0;
}

static void served_release(struct served *s)
{
	free(s->cert);
	free(s->key);
}

/*
 * Puts cert and key into dir as the kubelet does for a mounted Secret: a
 * new timestamped directory, the symlink ..data swapped to it by a
 * rename, tls.crt and tls.key symlinks into ..data.
 */
static void mount_pair(const char *dir, const char *cert, const char *key)
{
	static int gen;
	char rel[64];
	snprintf(rel, sizeof(rel), "..gen_%d/tls.crt", ++gen);
	free(scratch_file_write(dir, rel, cert, 0644));
	snprintf(rel, sizeof(rel), "..gen_%d/tls.key", gen);
	free(scratch_file_write(dir, rel, key, 0600));
	char *target = xasprintf("..gen_%d", gen);
	char *tmp = xasprintf("%s/..data_tmp", dir);
	char *data = xasprintf("%s/..data", dir);
	assert_int_equal(symlink(target, tmp), 0);
	assert_int_equal(rename(tmp, data), 0);
	const char *files[] = {"tls.crt", "tls.key"};
	for (int i = 0; i < 2; i++) {
		char *link = xasprintf("%s/%s", dir, files[i]);
		char *to = xasprintf("..data/%s", files[i]);
		struct stat st;
		if (lstat(link, &st) < 0)
			assert_int_equal(symlink(to, link), 0);
		free(to);
		free(link);
	}
	free(data);
	free(tmp);
	free(target);
}

static void expect_why(const struct cert_dir *d, const char *part)
{
	const char *why = NULL;
	assert_false(cert_dir_ready(d, &why));
	assert_non_null(why);
	if (!strstr(why, part))
		fail_msg("why \"%s\" does not say \"%s\"", why, part);
}

static void test_pair_check_accepts_a_good_pair_and_says_what_is_wrong(void **state)
{
	(void)state;
	long long now = (long long)time(NULL);
	struct cert_bundle a = pair_for(NAMES, now, 90), b = pair_for(NAMES, now, 90);
	long long end = 0;
	char *why = NULL;
	assert_int_equal(cert_pair_check(a.cert_pem, a.key_pem, NAMES, now, &end, &why), 0);
	assert_null(why);
	assert_true(end > now + 89 * DAY && end <= now + 90 * DAY);
	/* The chain (leaf, then its CA) as cert-manager writes tls.crt. */
	char *chain = xasprintf("%s%s", a.cert_pem, a.ca_cert_pem);
	assert_int_equal(cert_pair_check(chain, a.key_pem, NAMES, now, NULL, NULL), 0);
	free(chain);
	/* One name covered is enough: the API server calls the Service by <name>.<namespace>.svc. */
	const char *const one_of[] = {"other.example", SVC, NULL};
	assert_int_equal(cert_pair_check(a.cert_pem, a.key_pem, one_of, now, NULL, NULL), 0);

	const struct {
		const char *cert, *key;
		const char *const *names;
		long long at;
		const char *says;
	} bad[] = {
		{a.cert_pem, b.key_pem, NAMES, now, "tls.key is not the key of the certificate in tls.crt"},
		{"junk", a.key_pem, NAMES, now, "no PEM certificate"},
		{a.cert_pem, "junk", NAMES, now, "no PEM private key in tls.key"},
		{a.key_pem, a.cert_pem, NAMES, now, "no PEM certificate"},
		{a.cert_pem, a.key_pem, NAMES, now + 91 * DAY, "expired at"},
		{a.cert_pem, a.key_pem, (const char *const[]){"x.other.svc", "10.0.0.1", NULL}, now,
		 "covers none of the names the webhook is called by (x.other.svc, 10.0.0.1)"},
		{a.ca_cert_pem, a.ca_key_pem, NAMES, now, "is not for TLS servers"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		end = 7;
		assert_int_equal(cert_pair_check(bad[i].cert, bad[i].key, bad[i].names, bad[i].at, &end, &why), -1);
		assert_int_equal(end, 7);
		if (!why || !strstr(why, bad[i].says))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, why ? why : "(null)", bad[i].says);
		/* Reasons never carry key material. */
		assert_null(strstr(why, "PRIVATE"));
		free(why);
	}
	cert_bundle_release(&a);
	cert_bundle_release(&b);
}

static void test_one_name_covered_or_none_asked(void **state)
{
	(void)state;
	long long now = (long long)time(NULL);
	struct cert_bundle a = pair_for((const char *const[]){"a.example", NULL}, now, 90);
	assert_int_equal(cert_pair_check(a.cert_pem, a.key_pem, (const char *const[]){"a.example", NULL}, now, NULL, NULL),
			 0);
	assert_int_equal(cert_pair_check(a.cert_pem, a.key_pem, (const char *const[]){"b.example", NULL}, now, NULL, NULL),
			 -1);
	/* No names asked for: any certificate for a TLS server will do. */
	assert_int_equal(cert_pair_check(a.cert_pem, a.key_pem, NULL, now, NULL, NULL), 0);
	cert_bundle_release(&a);
}

/* Two good pairs for NAMES (a, b), a scratch directory to mount them in, and a cert_dir reading it. */
struct fixture {
	long long now;
	char *dir;
	struct cert_bundle a, b;
	struct cert_dir *d;
	struct served s;
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	f->now = (long long)time(NULL);
	f->dir = scratch_dir_make("cert_dir");
	f->a = pair_for(NAMES, f->now, 90);
	f->b = pair_for(NAMES, f->now, 90);
	f->d = cert_dir_new(f->dir, NAMES);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	cert_dir_free(f->d);
	served_release(&f->s);
	cert_bundle_release(&f->a);
	cert_bundle_release(&f->b);
	scratch_dir_remove(f->dir);
	free(f);
	return 0;
}

static void test_serves_the_mounted_pair_and_a_new_one_after_the_swap(void **state)
{
	struct fixture *f = *state;
	mount_pair(f->dir, f->a.cert_pem, f->a.key_pem);
	expect_why(f->d, "no certificate read yet");

	assert_int_equal(cert_dir_poll(f->d, f->now, serve, &f->s), 1);
	assert_int_equal(f->s.calls, 1);
	assert_string_equal(f->s.cert, f->a.cert_pem);
	assert_string_equal(f->s.key, f->a.key_pem);
	const char *why = NULL;
	assert_true(cert_dir_ready(f->d, &why));

	/* Unchanged files: nothing served again. */
	assert_int_equal(cert_dir_poll(f->d, f->now + 5, serve, &f->s), 0);
	assert_int_equal(f->s.calls, 1);

	/* The kubelet swaps ..data to the new pair: served at the next poll. */
	mount_pair(f->dir, f->b.cert_pem, f->b.key_pem);
	assert_int_equal(cert_dir_poll(f->d, f->now + 10, serve, &f->s), 1);
	assert_int_equal(f->s.calls, 2);
	assert_string_equal(f->s.cert, f->b.cert_pem);
	assert_true(cert_dir_ready(f->d, &why));
}

struct bad_reload {
	struct fixture *f;
	int rc[2];
};

static void poll_twice(void *ctx)
{
	struct bad_reload *r = ctx;
	r->rc[0] = cert_dir_poll(r->f->d, r->f->now + 2, serve, &r->f->s);
	r->rc[1] = cert_dir_poll(r->f->d, r->f->now + 4, serve, &r->f->s);
}

static void test_a_bad_reload_keeps_the_old_pair_and_is_logged_once(void **state)
{
	struct fixture *f = *state;
	mount_pair(f->dir, f->a.cert_pem, f->a.key_pem);
	assert_int_equal(cert_dir_poll(f->d, f->now, serve, &f->s), 1);

	/* A new certificate with the old key: refused, the old pair still served, the replica still Ready. */
	mount_pair(f->dir, f->b.cert_pem, f->a.key_pem);
	struct bad_reload r = {f, {0, 0}};
	char *log = output_capture(poll_twice, &r, false, true);
	assert_int_equal(r.rc[0], -1);
	assert_int_equal(r.rc[1], -1);
	assert_int_equal(f->s.calls, 1);
	assert_string_equal(f->s.cert, f->a.cert_pem);
	const char *why = NULL;
	assert_true(cert_dir_ready(f->d, &why));
	const char *first = strstr(log, "tls.key is not the key of the certificate in tls.crt");
	if (!first || !strstr(log, f->dir) || !strstr(log, "still serving the certificate read before"))
		fail_msg("log: %s", log);
	if (strstr(first + 1, "tls.key is not the key"))
		fail_msg("logged twice: %s", log);
	free(log);

	/* The files fixed: served. */
	mount_pair(f->dir, f->b.cert_pem, f->b.key_pem);
	assert_int_equal(cert_dir_poll(f->d, f->now + 6, serve, &f->s), 1);
	assert_string_equal(f->s.cert, f->b.cert_pem);
}

static void test_not_ready_until_the_files_can_be_served(void **state)
{
	struct fixture *f = *state;
	/* Nothing mounted. */
	assert_int_equal(cert_dir_poll(f->d, f->now, serve, &f->s), -1);
	expect_why(f->d, "/tls.crt: No such file or directory (mount a kubernetes.io/tls Secret there");
	expect_why(f->d, f->dir);

	/* A mismatched pair. */
	mount_pair(f->dir, f->a.cert_pem, f->b.key_pem);
	assert_int_equal(cert_dir_poll(f->d, f->now, serve, &f->s), -1);
	expect_why(f->d, "tls.key is not the key of the certificate in tls.crt");

	/* Expired files. */
	struct cert_bundle old = pair_for(NAMES, f->now - 100 * DAY, 90);
	mount_pair(f->dir, old.cert_pem, old.key_pem);
	cert_bundle_release(&old);
	assert_int_equal(cert_dir_poll(f->d, f->now, serve, &f->s), -1);
	expect_why(f->d, "expired at");

	/* A good pair serve() cannot take: not ready, and tried again at the next poll. */
	mount_pair(f->dir, f->a.cert_pem, f->a.key_pem);
	f->s.refuse = true;
	assert_int_equal(cert_dir_poll(f->d, f->now, serve, &f->s), -1);
	expect_why(f->d, "cannot serve it: key type not supported");
	f->s.refuse = false;
	assert_int_equal(cert_dir_poll(f->d, f->now + 2, serve, &f->s), 1);
	assert_int_equal(f->s.calls, 2);
	const char *why = NULL;
	assert_true(cert_dir_ready(f->d, &why));
	assert_int_equal(f->s.calls, 2);
}

static void test_the_served_pair_expiring_makes_it_not_ready(void **state)
{
	struct fixture *f = *state;
	struct cert_bundle soon = pair_for(NAMES, f->now, 60);
	mount_pair(f->dir, soon.cert_pem, soon.key_pem);
	cert_bundle_release(&soon);
	assert_int_equal(cert_dir_poll(f->d, f->now, serve, &f->s), 1);
	assert_int_equal(cert_dir_poll(f->d, f->now + 61 * DAY, serve, &f->s), -1);
	expect_why(f->d, "the certificate served expired at");
	/* Renewed (as cert-manager does): ready again. */
	struct cert_bundle renewed = pair_for(NAMES, f->now + 61 * DAY, 60);
	mount_pair(f->dir, renewed.cert_pem, renewed.key_pem);
	cert_bundle_release(&renewed);
	assert_int_equal(cert_dir_poll(f->d, f->now + 61 * DAY, serve, &f->s), 1);
	const char *why = NULL;
	assert_true(cert_dir_ready(f->d, &why));
}

static void test_read_file_refuses_what_is_not_a_small_text_file(void **state)
{
	(void)state;
	char *dir = scratch_dir_make("cert_dir");
	char *text = NULL, *err = NULL;
	char *path = scratch_file_write(dir, "ok.pem", "-----BEGIN X-----\n", 0600);
	assert_int_equal(cert_dir_read_file(path, 64, &text, &err), 0);
	assert_string_equal(text, "-----BEGIN X-----\n");
	free(text);
	free(path);

	/* At the cap, and one byte past it. */
	path = scratch_file_sized(dir, "max.pem", "-----", 'A', 64);
	assert_int_equal(cert_dir_read_file(path, 64, &text, &err), 0);
	assert_int_equal(strlen(text), 64);
	free(text);
	free(path);
	path = scratch_file_sized(dir, "big.pem", "-----", 'A', 65);
	assert_int_equal(cert_dir_read_file(path, 64, &text, &err), -1);
	assert_null(text);
	assert_non_null(strstr(err, "over the limit of 64"));
	free(err);
	free(path);

	const struct {
		const char *rel;
		const char *says;
	} bad[] = {
		{"absent.pem", "No such file or directory"},
		{"", "is not a regular file"},
		{"fifo", "is not a regular file"},
		{"nul.pem", "NUL byte"},
		{"empty.pem", "is empty"},
	};
	char *fifo = xasprintf("%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	free(fifo);
	free(scratch_file_write(dir, "empty.pem", "", 0600));
	char *nul = xasprintf("%s/nul.pem", dir);
	FILE *f = fopen(nul, "w");
	assert_non_null(f);
	assert_int_equal(fwrite("--\0--\n", 1, 6, f), 6);
	assert_int_equal(fclose(f), 0);
	free(nul);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		path = xasprintf("%s/%s", dir, bad[i].rel);
		err = NULL;
		if (cert_dir_read_file(path, 64, &text, &err) != -1)
			fail_msg("%s read", bad[i].rel);
		assert_null(text);
		if (!err || !strstr(err, bad[i].says) || !strstr(err, path))
			fail_msg("%s: \"%s\" does not name the file and say \"%s\"", bad[i].rel, err ? err : "(null)",
				 bad[i].says);
		free(err);
		free(path);
	}
	scratch_dir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair_check_accepts_a_good_pair_and_says_what_is_wrong),
		cmocka_unit_test(test_one_name_covered_or_none_asked),
		cmocka_unit_test_setup_teardown(test_serves_the_mounted_pair_and_a_new_one_after_the_swap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_bad_reload_keeps_the_old_pair_and_is_logged_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_ready_until_the_files_can_be_served, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_served_pair_expiring_makes_it_not_ready, setup, teardown),
		cmocka_unit_test(test_read_file_refuses_what_is_not_a_small_text_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
