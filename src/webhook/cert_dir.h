/*
 * The webhook's serving certificate from files (--webhook-cert-dir DIR):
 * DIR/tls.crt (the chain, leaf first) and DIR/tls.key, as the kubelet
 * mounts a Secret of type kubernetes.io/tls: cert-manager's Certificate,
 * or one the user gives. The operator only reads them: it writes no Secret
 * and no caBundle (cert-manager's CA injector, or the user, sets that).
 *
 * cert_dir_poll reads both files each time it is called; when their text
 * differs from the pair served it checks the new pair (cert_pair_check)
 * and hands it to serve(), and only a pair serve() takes is the one served
 * from then on. A bad pair is logged once per reason, and the pair served
 * before stays served. The kubelet swaps the files at once through a
 * symlink (..data), but a read between the two files may still see a new
 * certificate with the old key: a pair refused is read once more, and only
 * a refusal of the same text is reported.
 *
 * The files are untrusted input: each must be a regular file of at most
 * CERT_DIR_FILE_MAX bytes of text.
 *
 * Threads: cert_dir_poll from one thread at a time; cert_dir_ready from any.
 */
#ifndef SOP_WEBHOOK_CERT_DIR_H
#define SOP_WEBHOOK_CERT_DIR_H

#include <stdbool.h>
#include <stddef.h>

#define CERT_DIR_CERT_FILE "tls.crt"
#define CERT_DIR_KEY_FILE "tls.key"
/* A chain of a few certificates is a few KiB; a file past this is not one. */
#define CERT_DIR_FILE_MAX (256u << 10)

struct cert_dir;

/*
 * Serves cert_pem and key_pem (borrowed: copy what must outlive the call):
 * 0, or -1 with *err (a new string) when it cannot.
 */
typedef int (*cert_dir_serve_fn)(void *ctx, const char *cert_pem, const char *key_pem, char **err);

/* dir and names (the names the certificate must cover one of; NULL-terminated, NULL: any) are copied. */
struct cert_dir *cert_dir_new(const char *dir, const char *const *names);
void cert_dir_free(struct cert_dir *d);

/*
 * Reads DIR's pair at now_s (seconds since the epoch). Returns 1 when a
 * new pair was served (serve returned 0), 0 when the pair served is
 * unchanged and has not expired, -1 when DIR holds no pair that can be
 * served or the pair served has expired: the reason is logged (once) and
 * is cert_dir_ready's why; the pair served before, if any, is still served.
 */
int cert_dir_poll(struct cert_dir *d, long long now_s, cert_dir_serve_fn serve, void *ctx);

/*
 * Whether a pair is served that had not expired at the last poll. When
 * not, *why (borrowed, valid until cert_dir_free) says what to fix.
 */
bool cert_dir_ready(const struct cert_dir *d, const char **why);

/*
 * Reads path into *text (new string): a regular file (a symlink to one is
 * followed) of at most max bytes, with no NUL byte. -1 with *err (a new
 * string naming path and what is wrong) otherwise; *text is then NULL.
 */
int cert_dir_read_file(const char *path, size_t max, char **text, char **err) __attribute__((warn_unused_result));

#endif
