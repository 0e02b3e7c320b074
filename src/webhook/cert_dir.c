#include "webhook/cert_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/xalloc.h"
#include "webhook/webhook_cert.h"

/*
 * Reasons once given out by cert_dir_ready stay valid until cert_dir_free
 * (a probe may still be printing one while the poll moves on): each
 * distinct one is kept, at most this many, then a fixed one stands in.
 */
#define MAX_REASONS 32
#define REASON_PREFIX "webhook: "
static const char too_many_reasons[] =
	REASON_PREFIX "the files of --webhook-cert-dir cannot be served; the log says why";

struct cert_dir {
	char *dir;
	char **names;            /* NULL-terminated, or NULL: any */
	char *seen_cert;         /* the last pair read and judged, or NULL */
	char *seen_key;          /* (wiped when freed) */
	char *seen_problem;      /* why that pair is not served, or NULL: it is */
	bool served;             /* a pair has been served */
	long long served_not_after;
	char *reasons[MAX_REASONS]; /* every reason given out, "webhook: ..." */
	size_t nreasons;
	const char *logged;      /* the reason last logged, or NULL */
	_Atomic(const char *) why; /* NULL: ready */
	atomic_bool ready;
};

struct cert_dir *cert_dir_new(const char *dir, const char *const *names)
{
	struct cert_dir *d = xcalloc(1, sizeof(*d));
	d->dir = xstrdup(dir);
	if (names) {
		size_t n = 0;
		while (names[n])
			n++;
		d->names = xcalloc(n + 1, sizeof(*d->names));
		for (size_t i = 0; i < n; i++)
			d->names[i] = xstrdup(names[i]);
	}
	d->reasons[0] = xasprintf("webhook: no certificate read yet from --webhook-cert-dir %s", dir);
	d->nreasons = 1;
	atomic_init(&d->why, d->reasons[0]);
	atomic_init(&d->ready, false);
	return d;
}

static void free_key_text(char *text)
{
	if (text)
		explicit_bzero(text, strlen(text));
	free(text);
}

void cert_dir_free(struct cert_dir *d)
{
	if (!d)
		return;
	for (char **n = d->names; n && *n; n++)
		free(*n);
	free(d->names);
	free(d->seen_cert);
	free_key_text(d->seen_key);
	free(d->seen_problem);
	for (size_t i = 0; i < d->nreasons; i++)
		free(d->reasons[i]);
	free(d->dir);
	free(d);
}

bool cert_dir_ready(const struct cert_dir *d, const char **why)
{
	if (atomic_load(&d->ready)) {
		*why = "ok";
		return true;
	}
	const char *reason = atomic_load(&d->why);
	*why = reason ? reason : "webhook: no certificate served from --webhook-cert-dir";
	return false;
}

int cert_dir_read_file(const char *path, size_t max, char **text, char **err)
{
	*text = NULL;
	/* O_NONBLOCK: a FIFO put there must not hang the poll; it is refused below as not a regular file. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		*err = xasprintf("cannot read %s: %s%s", path, strerror(errno),
				 errno == ENOENT ? " (mount a kubernetes.io/tls Secret there: keys tls.crt and tls.key)" : "");
		return -1;
	}
	int rc = -1;
	char *buf = NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*err = xasprintf("%s is not a regular file", path);
		goto out;
	}
	if ((unsigned long long)st.st_size > max) {
		*err = xasprintf("%s is %lld bytes, over the limit of %zu for a certificate or key", path,
				 (long long)st.st_size, max);
		goto out;
	}
	/* One byte more than max: a file that grew past it since fstat is seen. */
	buf = xmalloc(max + 2);
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, max + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*err = xasprintf("cannot read %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			*err = xasprintf("%s is over the limit of %zu bytes for a certificate or key", path, max);
			goto out;
		}
	}
	buf[len] = '\0';
	if (memchr(buf, '\0', len)) {
		*err = xasprintf("%s holds a NUL byte: not PEM text", path);
		goto out;
	}
	if (len == 0) {
		*err = xasprintf("%s is empty", path);
		goto out;
	}
	*text = buf;
	buf = NULL;
	rc = 0;
out:
	if (buf) {
		explicit_bzero(buf, max + 2);
		free(buf);
	}
	close(fd);
	return rc;
}

/* Reads both files into *cert and *key (new); -1 with *err naming the file. */
static int read_pair(const struct cert_dir *d, char **cert, char **key, char **err)
{
	char *path = xasprintf("%s/%s", d->dir, CERT_DIR_CERT_FILE);
	int rc = cert_dir_read_file(path, CERT_DIR_FILE_MAX, cert, err);
	free(path);
	if (rc < 0)
		return -1;
	path = xasprintf("%s/%s", d->dir, CERT_DIR_KEY_FILE);
	rc = cert_dir_read_file(path, CERT_DIR_FILE_MAX, key, err);
	free(path);
	if (rc < 0)
		FREE_AND_NULL(*cert);
	return rc;
}

/*
 * Makes problem (steals it) the reason given out, logged when it differs
 * from the last one logged; the pair served, if any, stays served.
 */
static void set_problem(struct cert_dir *d, char *problem)
{
	char *reason = xasprintf(REASON_PREFIX "--webhook-cert-dir %s: %s", d->dir, problem);
	free(problem);
	const char *kept = NULL;
	for (size_t i = 0; i < d->nreasons && !kept; i++)
		if (!strcmp(d->reasons[i], reason))
			kept = d->reasons[i];
	if (!kept && d->nreasons < MAX_REASONS) {
		d->reasons[d->nreasons++] = reason;
		kept = reason;
		reason = NULL;
	}
	if (!kept)
		kept = too_many_reasons;
	if (d->logged != kept)
		log_error("webhook", "%s%s", (reason ? reason : kept) + strlen(REASON_PREFIX),
			  d->served ? " (still serving the certificate read before)" : "; not ready until it is fixed");
	d->logged = kept;
	free(reason);
	atomic_store(&d->why, kept);
}

/* Replaces the pair judged last with cert and key (stolen), and why it is not served (stolen; NULL: it is). */
static void set_seen(struct cert_dir *d, char *cert, char *key, char *problem)
{
	free(d->seen_cert);
	free_key_text(d->seen_key);
	free(d->seen_problem);
	d->seen_cert = cert;
	d->seen_key = key;
	d->seen_problem = problem;
}

/*
 * Reads the pair again after *cert and *key were refused: true when the
 * files changed since (read across the kubelet's swap), the new pair then
 * in *cert and *key (the old freed).
 */
static bool read_again(const struct cert_dir *d, char **cert, char **key)
{
	char *cert2 = NULL, *key2 = NULL, *err = NULL;
	bool changed = read_pair(d, &cert2, &key2, &err) == 0 && (strcmp(*cert, cert2) || strcmp(*key, key2));
	free(err);
	if (!changed) {
		free(cert2);
		free_key_text(key2);
		return false;
	}
	free(*cert);
	free_key_text(*key);
	*cert = cert2;
	*key = key2;
	return true;
}

/*
 * Judges a pair not seen before (cert, key stolen): 1 when served, else
 * -1 with *problem (new) saying why not. A refused pair is remembered, so
 * that the same files are not judged again; one that serve() could not
 * take is tried again at the next poll (its listener may not have bound).
 */
static int judge(struct cert_dir *d, char *cert, char *key, long long now_s, cert_dir_serve_fn serve, void *ctx,
		 char **problem)
{
	long long not_after = 0;
	char *why = NULL;
	const char *const *names = (const char *const *)d->names;
	int ok = cert_pair_check(cert, key, names, now_s, &not_after, &why);
	if (ok < 0 && read_again(d, &cert, &key)) {
		FREE_AND_NULL(why);
		ok = cert_pair_check(cert, key, names, now_s, &not_after, &why);
	}
	if (ok < 0) {
		*problem = xstrdup(why);
		set_seen(d, cert, key, why);
		return -1;
	}
	char *err = NULL;
	if (serve(ctx, cert, key, &err) < 0) {
		*problem = xasprintf("cannot serve it: %s", err);
		free(err);
		free(cert);
		free_key_text(key);
		set_seen(d, NULL, NULL, NULL);
		return -1;
	}
	set_seen(d, cert, key, NULL);
	d->served = true;
	d->served_not_after = not_after;
	return 1;
}

int cert_dir_poll(struct cert_dir *d, long long now_s, cert_dir_serve_fn serve, void *ctx)
{
	char *cert = NULL, *key = NULL, *err = NULL;
	int rc;
	if (read_pair(d, &cert, &key, &err) < 0) {
		set_problem(d, err);
		rc = -1;
	} else if (d->seen_cert && !strcmp(cert, d->seen_cert) && !strcmp(key, d->seen_key)) {
		free(cert);
		free_key_text(key);
		rc = d->seen_problem ? -1 : 0;
		if (rc < 0)
			set_problem(d, xstrdup(d->seen_problem));
	} else {
		char *problem = NULL;
		rc = judge(d, cert, key, now_s, serve, ctx, &problem);
		if (rc < 0) {
			set_problem(d, problem);
		} else {
			char until[32];
			cert_format_time(d->served_not_after, until);
			log_info("webhook", "serving the certificate of --webhook-cert-dir %s (valid until %s)", d->dir,
				 until);
		}
	}
	if (rc >= 0 && d->served && d->served_not_after <= now_s) {
		char when[32];
		cert_format_time(d->served_not_after, when);
		set_problem(d, xasprintf("the certificate served expired at %s and no newer one is there: renew it "
					 "(cert-manager renews it before then: see kubectl describe certificate)",
					 when));
		rc = -1;
	}
	bool ready = d->served && d->served_not_after > now_s;
	if (rc >= 0) {
		d->logged = NULL;
		atomic_store(&d->why, NULL);
	}
	atomic_store(&d->ready, ready);
	return rc;
}
