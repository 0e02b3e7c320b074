/*
 * tree-manifest DIR: prints one line per entry of the tree under DIR
 * (DIR itself is "."), sorted by path, with everything a faithful copy must
 * keep, so that two trees are equal exactly when their manifests are:
 *
 *   <path> type=<f|d|l|c|b|p|s> mode=<octal> uid=<n> gid=<n> size=<n|-> mtime=<s.ns>
 *     [dev=<major:minor>] [target=<symlink target>] [alloc=<sparse|dense>]
 *     xattrs=<name:hexvalue,...|-> [sha256=<hex>] [link=<first path of its hard-link group>]
 *
 * Paths and link targets are escaped (backslash, space, control bytes as
 * \xHH; UTF-8 is kept as is), so a name with a newline stays on one line.
 * The xattrs include system.posix_acl_access and system.posix_acl_default,
 * so ACLs count. Left out on purpose: directory sizes (a directory's size
 * remembers entries it once had), atime, ctime, inode numbers. A regular
 * file is "sparse" when it has fewer blocks allocated than its size needs.
 * Exit status: 0, or 1 (with a message) when any entry cannot be read.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <openssl/evp.h>

struct entry {
	char *path;       /* relative, raw bytes */
	char *line;       /* everything after the path but link= */
	dev_t dev;
	ino_t ino;
	int grouped;      /* a non-directory with more than one name */
	const char *link; /* borrowed: first path of its hard-link group */
};

static struct entry *entries;
static size_t nentries, capentries;
static size_t prefix_len; /* of "DIR/" in the paths nftw gives */
static int failed;

static void *xrealloc_or_die(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fprintf(stderr, "tree-manifest: out of memory\n");
		exit(1);
	}
	return q;
}

/* A growing string. */
struct buf {
	char *s;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = xrealloc_or_die(b->s, b->cap);
	}
	memcpy(b->s + b->len, data, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_addf(struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		buf_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void buf_add_escaped(struct buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\')
			buf_add(b, "\\\\", 2);
		else if (c <= ' ' || c == 0x7f)
			buf_addf(b, "\\x%02x", c);
		else
			buf_add(b, &s[i], 1);
	}
}

static void buf_add_hex(struct buf *b, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_addf(b, "%02x", p[i]);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends " xattrs=name:hex,..." (sorted by name) or " xattrs=-". */
static int add_xattrs(struct buf *b, const char *path)
{
	ssize_t n = llistxattr(path, NULL, 0);
	if (n < 0) {
		fprintf(stderr, "tree-manifest: llistxattr %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (n == 0) {
		buf_add(b, " xattrs=-", 9);
		return 0;
	}
	char *names = xrealloc_or_die(NULL, (size_t)n);
	n = llistxattr(path, names, (size_t)n);
	if (n < 0) {
		fprintf(stderr, "tree-manifest: llistxattr %s: %s\n", path, strerror(errno));
		free(names);
		return -1;
	}
	size_t count = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		count++;
	char **sorted = xrealloc_or_die(NULL, count * sizeof(*sorted));
	count = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		sorted[count++] = names + i;
	qsort(sorted, count, sizeof(*sorted), cmp_str);
	int rc = 0;
	buf_add(b, " xattrs=", 8);
	for (size_t i = 0; i < count; i++) {
		ssize_t vlen = lgetxattr(path, sorted[i], NULL, 0);
		unsigned char *value = NULL;
		if (vlen >= 0) {
			value = xrealloc_or_die(NULL, (size_t)vlen);
			vlen = lgetxattr(path, sorted[i], value, (size_t)vlen);
		}
		if (vlen < 0) {
			fprintf(stderr, "tree-manifest: lgetxattr %s %s: %s\n", path, sorted[i], strerror(errno));
			free(value);
			rc = -1;
			break;
		}
		if (i)
			buf_add(b, ",", 1);
		buf_add_escaped(b, sorted[i], strlen(sorted[i]));
		buf_add(b, ":", 1);
		buf_add_hex(b, value, (size_t)vlen);
		free(value);
	}
	free(sorted);
	free(names);
	return rc;
}

/* Appends " sha256=<hex>" of the content of the regular file at path. */
static int add_sha256(struct buf *b, const char *path)
{
	static unsigned char data[1 << 20];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int rc = -1;
	EVP_MD_CTX *ctx = NULL;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "tree-manifest: open %s: %s\n", path, strerror(errno));
		goto out;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		goto out;
	for (;;) {
		ssize_t n = read(fd, data, sizeof(data));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "tree-manifest: read %s: %s\n", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (!EVP_DigestUpdate(ctx, data, (size_t)n))
			goto out;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen))
		goto out;
	buf_add(b, " sha256=", 8);
	buf_add_hex(b, md, mdlen);
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return rc;
}

static char type_char(mode_t m)
{
	if (S_ISREG(m))
		return 'f';
	if (S_ISDIR(m))
		return 'd';
	if (S_ISLNK(m))
		return 'l';
	if (S_ISCHR(m))
		return 'c';
	if (S_ISBLK(m))
		return 'b';
	if (S_ISFIFO(m))
		return 'p';
	return 's';
}

static int visit(const char *fpath, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	struct buf b = {0};
	if (flag == FTW_NS || flag == FTW_DNR) {
		fprintf(stderr, "tree-manifest: cannot read %s\n", fpath);
		failed = 1;
		return 0;
	}
	const char *rel = strlen(fpath) > prefix_len ? fpath + prefix_len : ".";

	buf_addf(&b, " type=%c mode=%04o uid=%lu gid=%lu", type_char(st->st_mode), (unsigned)(st->st_mode & 07777),
		 (unsigned long)st->st_uid, (unsigned long)st->st_gid);
	if (S_ISDIR(st->st_mode))
		buf_add(&b, " size=-", 7);
	else
		buf_addf(&b, " size=%lld", (long long)st->st_size);
	buf_addf(&b, " mtime=%lld.%09ld", (long long)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		buf_addf(&b, " dev=%u:%u", major(st->st_rdev), minor(st->st_rdev));
	if (S_ISLNK(st->st_mode)) {
		char target[8192];
		ssize_t n = readlink(fpath, target, sizeof(target));
		if (n < 0 || (size_t)n >= sizeof(target)) {
			fprintf(stderr, "tree-manifest: readlink %s: %s\n", fpath, n < 0 ? strerror(errno) : "too long");
			failed = 1;
		} else {
			buf_add(&b, " target=", 8);
			buf_add_escaped(&b, target, (size_t)n);
		}
	}
	if (S_ISREG(st->st_mode))
		buf_add(&b, (long long)st->st_blocks * 512 < (long long)st->st_size ? " alloc=sparse" : " alloc=dense",
			(long long)st->st_blocks * 512 < (long long)st->st_size ? 13 : 12);
	if (add_xattrs(&b, fpath) < 0)
		failed = 1;
	if (S_ISREG(st->st_mode) && add_sha256(&b, fpath) < 0)
		failed = 1;

	if (nentries == capentries) {
		capentries = capentries ? capentries * 2 : 1024;
		entries = xrealloc_or_die(entries, capentries * sizeof(*entries));
	}
	struct entry *e = &entries[nentries++];
	e->path = xrealloc_or_die(NULL, strlen(rel) + 1);
	memcpy(e->path, rel, strlen(rel) + 1);
	e->line = b.s;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->grouped = !S_ISDIR(st->st_mode) && st->st_nlink > 1;
	e->link = NULL;
	return 0;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

/* By inode, then by path: the first of each run is its group's first path. */
static int cmp_inode(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return strcmp(x->path, y->path);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: tree-manifest DIR\n");
		return 2;
	}
	char *root = argv[1];
	size_t root_len = strlen(root);
	while (root_len > 1 && root[root_len - 1] == '/')
		root[--root_len] = '\0';
	prefix_len = strcmp(root, "/") == 0 ? 1 : root_len + 1;
	if (nftw(root, visit, 64, FTW_PHYS) != 0) {
		fprintf(stderr, "tree-manifest: %s: %s\n", root, strerror(errno));
		return 1;
	}
	qsort(entries, nentries, sizeof(*entries), cmp_path);

	struct entry **linked = xrealloc_or_die(NULL, nentries * sizeof(*linked));
	size_t nlinked = 0;
	for (size_t i = 0; i < nentries; i++)
		if (entries[i].grouped)
			linked[nlinked++] = &entries[i];
	qsort(linked, nlinked, sizeof(*linked), cmp_inode);
	for (size_t i = 0; i < nlinked; i++) {
		struct entry *e = linked[i];
		e->link = (i > 0 && linked[i - 1]->dev == e->dev && linked[i - 1]->ino == e->ino) ? linked[i - 1]->link
												: e->path;
	}

	struct buf out = {0};
	for (size_t i = 0; i < nentries; i++) {
		struct entry *e = &entries[i];
		out.len = 0;
		buf_add_escaped(&out, e->path, strlen(e->path));
		buf_add(&out, e->line, strlen(e->line));
		if (e->link) {
			buf_add(&out, " link=", 6);
			buf_add_escaped(&out, e->link, strlen(e->link));
		}
		buf_add(&out, "\n", 1);
		fwrite(out.s, 1, out.len, stdout);
	}
	free(out.s);
	free(linked);
	for (size_t i = 0; i < nentries; i++) {
		free(entries[i].path);
		free(entries[i].line);
	}
	free(entries);
	if (fflush(stdout) != 0)
		failed = 1;
	return failed;
}
