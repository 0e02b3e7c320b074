/*
 * kubeconfig files -> struct kube_config.
 *
 * The YAML text is first turned into a jansson tree (util/yaml_json.c),
 * and the tree is then navigated. With several files
 * (KUBECONFIG=a:b) every named entry is looked up file by file, so the
 * first file that has a cluster, context or user of that name wins, and
 * current-context comes from the first file that sets it, as in kubectl.
 *
 * Every file is checked for shape (lists of named mappings, no duplicate
 * names); only the selected context, its cluster and its user are checked
 * in depth, so a stale entry elsewhere does not stop the operator.
 * Messages name the file and the field path ("users[1].user.token") and
 * never include a secret value.
 *
 * Thread-safety: kubeconfig_load reads the environment (KUBECONFIG, HOME);
 * call it at start-up, before threads that call setenv. kubeconfig_parse
 * and kube_config_release may be called from any thread on distinct data.
 */
#include "client/kube_config.h"
#include "client/kube_config_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/strbuf.h"
#include "util/yaml_json.h"
#include "util/xalloc.h"

#define WUR __attribute__((warn_unused_result))

#define KC_FILE_CAP (16u * 1024u * 1024u) /* larger than any real kubeconfig */

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

/* jansson reports out-of-memory as NULL / -1; the daemon aborts on OOM. */
static json_t *jcheck(json_t *v)
{
	if (!v) {
		fputs("stateful-operator: out of memory in jansson\n", stderr);
		abort();
	}
	return v;
}

/* Sets *err to a new "kubeconfig LABEL: MESSAGE" (label NULL: inline text). */
static void kc_fail(char **err, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void kc_fail(char **err, const char *label, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	free(*err);
	if (label)
		*err = xasprintf("kubeconfig %s: %s", label, msg);
	else
		*err = xasprintf("kubeconfig: %s", msg);
	free(msg);
}

/* ------------------------------------------------------------------ */
/* Base64                                                              */
/* ------------------------------------------------------------------ */

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Standard-alphabet base64 with or without '=' padding; whitespace (line
 * breaks of folded YAML) is skipped. On success out->data is a new,
 * NUL-terminated buffer. Refuses other characters, data after padding, a
 * dangling single character, and input that decodes to nothing.
 */
static WUR int b64_decode(const char *in, size_t inlen, struct kube_blob *out)
{
	unsigned char *buf = xmalloc(inlen / 4 * 3 + 4);
	unsigned acc = 0;
	int bits = 0;
	size_t n = 0, chars = 0, pad = 0;

	for (size_t i = 0; i < inlen; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = b64_value(c);
		if (v < 0 || pad)
			goto bad;
		acc = ((acc << 6) | (unsigned)v) & 0xffffu;
		bits += 6;
		chars++;
		if (bits >= 8) {
			bits -= 8;
			buf[n++] = (unsigned char)(acc >> bits);
		}
	}
	if (chars % 4 == 1 || pad > 2 || (pad && (chars + pad) % 4 != 0) || n == 0)
		goto bad;
	buf[n] = '\0';
	out->data = (char *)buf;
	out->len = n;
	return 0;
bad:
	free(buf);
	return -1;
}

/* ------------------------------------------------------------------ */
/* Parsed files and lookup                                             */
/* ------------------------------------------------------------------ */

struct kc_file {
	char *label;        /* owned; the file for messages, NULL for inline text */
	char *base_dir;     /* owned; relative paths resolve here; NULL = leave them as given */
	json_t *root;       /* owned reference; a JSON object */
};

struct kc_set {
	struct kc_file *files; /* owned; searched in order, first wins */
	size_t n;
	size_t cap;
	char *label;        /* owned; all files, for messages about the merged view */
};

enum kc_list { KC_CLUSTERS, KC_CONTEXTS, KC_USERS, KC_NLISTS };

static const char *const kc_list_names[KC_NLISTS] = {"clusters", "contexts", "users"};
static const char *const kc_body_names[KC_NLISTS] = {"cluster", "context", "user"};

struct kc_entry {
	const struct kc_file *file; /* borrowed */
	size_t index;               /* position in its file's list */
	json_t *body;               /* borrowed: the "cluster"/"context"/"user" mapping, or NULL */
	char *path;                 /* owned: e.g. "users[1].user" */
};

static void kc_set_release(struct kc_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->files[i].label);
		free(set->files[i].base_dir);
		json_decref(set->files[i].root);
	}
	FREE_AND_NULL(set->files);
	set->n = 0;
	set->cap = 0;
	FREE_AND_NULL(set->label);
}

/*
 * Text of a scalar that names or configures something: strings as they
 * are, integers and booleans as YAML wrote them in canonical form (so
 * "name: 1" works). Borrowed (from v or buf); NULL for other types.
 */
static const char *kc_scalar_text(json_t *v, char buf[static 32])
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(buf, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	}
	if (json_is_boolean(v))
		return json_is_true(v) ? "true" : "false";
	return NULL;
}

/*
 * Checks the shape every kubeconfig must have: a mapping with lists of
 * mappings, each with a unique non-empty name. Replaces an empty document
 * by an empty mapping.
 */
static WUR int kc_check_file(struct kc_file *f, char **err)
{
	char b1[32], b2[32];

	if (json_is_null(f->root)) {
		json_decref(f->root);
		f->root = jcheck(json_object());
	}
	if (!json_is_object(f->root)) {
		kc_fail(err, f->label, "the document is not a mapping of clusters, contexts and users");
		return -1;
	}
	json_t *kind = json_object_get(f->root, "kind");
	if (kind && !json_is_null(kind) &&
	    (!json_is_string(kind) || strcmp(json_string_value(kind), "Config"))) {
		kc_fail(err, f->label, "kind is not \"Config\"; is this a kubeconfig file?");
		return -1;
	}
	json_t *cur = json_object_get(f->root, "current-context");
	if (cur && !json_is_null(cur) && !kc_scalar_text(cur, b1)) {
		kc_fail(err, f->label, "current-context is not a string");
		return -1;
	}
	for (int l = 0; l < KC_NLISTS; l++) {
		const char *ln = kc_list_names[l], *bn = kc_body_names[l];
		json_t *list = json_object_get(f->root, ln);
		if (!list || json_is_null(list))
			continue;
		if (!json_is_array(list)) {
			kc_fail(err, f->label, "%s is not a list", ln);
			return -1;
		}
		for (size_t i = 0; i < json_array_size(list); i++) {
			json_t *e = json_array_get(list, i);
			if (!json_is_object(e)) {
				kc_fail(err, f->label, "%s[%zu] is not a mapping with name and %s", ln,
					i, bn);
				return -1;
			}
			json_t *name = json_object_get(e, "name");
			const char *nm = kc_scalar_text(name, b1);
			if (!name || json_is_null(name) || (nm && !*nm)) {
				kc_fail(err, f->label, "%s[%zu].name is missing", ln, i);
				return -1;
			}
			if (!nm) {
				kc_fail(err, f->label, "%s[%zu].name is not a string", ln, i);
				return -1;
			}
			json_t *body = json_object_get(e, bn);
			if (body && !json_is_null(body) && !json_is_object(body)) {
				kc_fail(err, f->label, "%s[%zu].%s is not a mapping", ln, i, bn);
				return -1;
			}
			for (size_t j = 0; j < i; j++) {
				const char *other =
					kc_scalar_text(json_object_get(json_array_get(list, j), "name"), b2);
				if (other && !strcmp(other, nm)) {
					kc_fail(err, f->label,
						"%s[%zu].name \"%s\" is also the name of %s[%zu]", ln,
						i, nm, ln, j);
					return -1;
				}
			}
		}
	}
	return 0;
}

/* Finds the named entry, first file first. On success e->path is new. */
static bool kc_find(const struct kc_set *set, enum kc_list l, const char *name, struct kc_entry *e)
{
	char buf[32];
	for (size_t fi = 0; fi < set->n; fi++) {
		json_t *list = json_object_get(set->files[fi].root, kc_list_names[l]);
		for (size_t i = 0; i < json_array_size(list); i++) {
			json_t *item = json_array_get(list, i);
			const char *nm = kc_scalar_text(json_object_get(item, "name"), buf);
			if (nm && !strcmp(nm, name)) {
				json_t *body = json_object_get(item, kc_body_names[l]);
				e->file = &set->files[fi];
				e->index = i;
				e->body = json_is_object(body) ? body : NULL;
				e->path = xasprintf("%s[%zu].%s", kc_list_names[l], i, kc_body_names[l]);
				return true;
			}
		}
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Field accessors. obj may be NULL (an empty mapping). path names obj. */
/* ------------------------------------------------------------------ */

static bool kc_has(json_t *obj, const char *key)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	return v && !json_is_null(v);
}

/*
 * v (borrowed, may be NULL) as a string; what is its full field path.
 * *val: new string, NULL when v is absent or null. Refuses lists,
 * mappings, numbers with a fraction (their text is lost) and NUL bytes.
 */
static WUR int kc_text(const struct kc_file *f, const char *what, json_t *v, char **val, char **err)
{
	char buf[32];
	*val = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_real(v)) {
		kc_fail(err, f->label, "%s is a number; quote it to make it a string", what);
		return -1;
	}
	const char *s = kc_scalar_text(v, buf);
	if (!s) {
		kc_fail(err, f->label, "%s is not a string", what);
		return -1;
	}
	if (json_is_string(v) && strlen(s) != json_string_length(v)) {
		kc_fail(err, f->label, "%s contains a NUL character", what);
		return -1;
	}
	*val = xstrdup(s);
	return 0;
}

/* obj[key] as a new string; NULL when absent, null or empty. */
static WUR int kc_get_str(const struct kc_file *f, const char *path, json_t *obj, const char *key,
		      char **val, char **err)
{
	char *what = xasprintf("%s.%s", path, key);
	int rc = kc_text(f, what, obj ? json_object_get(obj, key) : NULL, val, err);
	free(what);
	if (rc == 0 && *val && !**val)
		FREE_AND_NULL(*val);
	return rc;
}

/* obj[key] as a boolean; false when absent or null. */
static WUR int kc_get_bool(const struct kc_file *f, const char *path, json_t *obj, const char *key,
		       bool *val, char **err)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	*val = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		kc_fail(err, f->label, "%s.%s must be true or false", path, key);
		return -1;
	}
	*val = json_is_true(v);
	return 0;
}

/* A new path: p as is when absolute or when f has no base directory. */
static char *kc_resolve_path(const struct kc_file *f, const char *p)
{
	if (p[0] == '/' || !f->base_dir)
		return xstrdup(p);
	return xasprintf("%s/%s", f->base_dir, p);
}

/* obj[key] as a file path resolved against f's directory, which must be a readable file. */
static WUR int kc_get_path(const struct kc_file *f, const char *path, json_t *obj, const char *key,
		       char **val, char **err)
{
	char *raw = NULL;
	int rc = -1, fd = -1;
	struct stat stbuf;

	*val = NULL;
	if (kc_get_str(f, path, obj, key, &raw, err) < 0)
		goto out;
	if (!raw) {
		rc = 0;
		goto out;
	}
	*val = kc_resolve_path(f, raw);
	fd = open(*val, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		kc_fail(err, f->label, "%s.%s: cannot read %s: %s", path, key, *val, strerror(errno));
		goto out;
	}
	if (fstat(fd, &stbuf) == 0 && S_ISDIR(stbuf.st_mode)) {
		kc_fail(err, f->label, "%s.%s: %s is a directory, not a file", path, key, *val);
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		FREE_AND_NULL(*val);
	free(raw);
	return rc;
}

/* obj[key] as base64 of PEM text, decoded into val (data NULL when unset). */
static WUR int kc_get_data(const struct kc_file *f, const char *path, json_t *obj, const char *key,
		       struct kube_blob *val, char **err)
{
	char *raw = NULL;
	int rc = -1;

	val->data = NULL;
	val->len = 0;
	if (kc_get_str(f, path, obj, key, &raw, err) < 0)
		goto out;
	if (!raw) {
		rc = 0;
		goto out;
	}
	if (b64_decode(raw, strlen(raw), val) < 0) {
		kc_fail(err, f->label, "%s.%s is not valid base64 (it must be the base64 of the PEM text)",
			path, key);
		goto out;
	}
	if (!memmem(val->data, val->len, "-----BEGIN ", 11)) {
		kc_fail(err, f->label, "%s.%s is valid base64 but does not decode to PEM text "
			"(no \"-----BEGIN\" line)", path, key);
		FREE_AND_NULL(val->data);
		val->len = 0;
		goto out;
	}
	rc = 0;
out:
	free(raw);
	return rc;
}

/* A secret that goes into an HTTP header: trimmed; refuses control characters. */
static WUR int kc_check_header_value(const struct kc_file *f, const char *what, char **val, char **err)
{
	char *s = *val;
	if (!s)
		return 0;
	size_t len = strlen(s), start = 0;
	while (start < len && isspace((unsigned char)s[start]))
		start++;
	while (len > start && isspace((unsigned char)s[len - 1]))
		len--;
	memmove(s, s + start, len - start);
	s[len - start] = '\0';
	for (const char *p = s; *p; p++) {
		if (iscntrl((unsigned char)*p)) {
			kc_fail(err, f->label, "%s contains a line break or control character", what);
			return -1;
		}
	}
	if (!*s)
		FREE_AND_NULL(*val);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Cluster, user, exec                                                 */
/* ------------------------------------------------------------------ */

/*
 * Where the userinfo ("user:password@") of url is: *at its start, *len
 * bytes including the '@'; false when there is none. Without a scheme the
 * authority starts at the beginning (kubectl's host:port form).
 */
static bool url_userinfo(const char *url, size_t *at, size_t *len)
{
	const char *sep = strstr(url, "://");
	const char *auth = sep ? sep + 3 : url;
	size_t n = strcspn(auth, "/?#");
	const char *end = NULL;
	for (const char *p = auth; p < auth + n; p++) {
		if (*p == '@')
			end = p;
	}
	if (!end)
		return false;
	*at = (size_t)(auth - url);
	*len = (size_t)(end - auth) + 1;
	return true;
}

char *kube_url_redact(const char *url)
{
	size_t at, len;
	if (!url_userinfo(url, &at, &len))
		return xstrdup(url);
	return xasprintf("%.*s***@%s", (int)at, url, url + at + len);
}

/* raw server -> new "scheme://host[:port][/prefix]" without a trailing slash. */
int kube_server_url(const char *raw, char **out, char **why)
{
	*out = NULL;
	*why = NULL;
	for (const char *p = raw; *p; p++) {
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p)) {
			*why = xstrdup("contains whitespace");
			return -1;
		}
	}
	/* Messages quote the URL without its userinfo: it may hold a password. */
	char *shown = kube_url_redact(raw);
	const char *sep = strstr(raw, "://");
	char *s = NULL;
	size_t at, len;
	if (sep) {
		size_t slen = (size_t)(sep - raw);
		if (!((slen == 5 && !strncasecmp(raw, "https", 5)) ||
		      (slen == 4 && !strncasecmp(raw, "http", 4)))) {
			*why = xasprintf("\"%s\" is not an https:// (or http://) URL", shown);
			goto fail;
		}
	}
	if (url_userinfo(raw, &at, &len)) {
		/*
		 * libcurl would send it as Basic auth on every request, and the
		 * URL is logged; the API server has not taken passwords since 1.19.
		 */
		*why = xasprintf("\"%s\" carries a user name or password; authenticate with a token, client "
				 "certificate or exec plugin instead",
				 shown);
		goto fail;
	}
	s = sep ? xstrdup(raw) : xasprintf("https://%s", raw); /* kubectl accepts host:port */
	char *host = strstr(s, "://") + 3;
	if (*host == '\0' || *host == '/' || *host == '?' || *host == '#') {
		*why = xasprintf("\"%s\" has no host", shown);
		goto fail;
	}
	free(shown);
	size_t n = strlen(s);
	while (n > (size_t)(host - s) && s[n - 1] == '/')
		s[--n] = '\0';
	*out = s;
	return 0;
fail:
	free(shown);
	free(s);
	return -1;
}

static WUR int kc_server(const struct kc_file *f, const char *path, const char *raw, char **out,
		     char **err)
{
	char *why = NULL;
	if (kube_server_url(raw, out, &why) == 0)
		return 0;
	kc_fail(err, f->label, "%s.server %s", path, why);
	free(why);
	return -1;
}

static WUR int kc_fill_cluster(const struct kc_entry *e, struct kube_config *out, char **err)
{
	const struct kc_file *f = e->file;
	const char *path = e->path;
	json_t *c = e->body;
	char *raw = NULL;
	int rc = -1;

	if (kc_has(c, "proxy-url")) {
		kc_fail(err, f->label, "%s.proxy-url is not supported; set HTTPS_PROXY in the "
			"environment instead", path);
		goto out;
	}
	if (kc_get_str(f, path, c, "server", &raw, err) < 0)
		goto out;
	if (!raw) {
		kc_fail(err, f->label, "%s.server is missing", path);
		goto out;
	}
	if (kc_server(f, path, raw, &out->server, err) < 0)
		goto out;
	if (kc_get_str(f, path, c, "tls-server-name", &out->tls_server_name, err) < 0 ||
	    kc_get_bool(f, path, c, "insecure-skip-tls-verify", &out->insecure_skip_tls_verify, err) < 0 ||
	    kc_get_path(f, path, c, "certificate-authority", &out->ca_file, err) < 0 ||
	    kc_get_data(f, path, c, "certificate-authority-data", &out->ca_data, err) < 0)
		goto out;
	if (out->ca_file && out->ca_data.data) {
		kc_fail(err, f->label, "%s: certificate-authority and certificate-authority-data are "
			"both set; keep one", path);
		goto out;
	}
	if (out->insecure_skip_tls_verify && (out->ca_file || out->ca_data.data)) {
		kc_fail(err, f->label, "%s: insecure-skip-tls-verify is set together with a "
			"certificate authority; keep one", path);
		goto out;
	}
	rc = 0;
out:
	free(raw);
	return rc;
}

static bool one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(s, *words))
			return true;
	return false;
}

static const char *const kc_exec_versions[] = {
	"client.authentication.k8s.io/v1",
	"client.authentication.k8s.io/v1beta1",
	NULL,
};

static WUR int kc_fill_exec_env(const struct kc_file *f, const char *path, json_t *env,
			    struct kube_exec_config *x, char **err)
{
	char *what = NULL, *name = NULL, *value = NULL;
	int rc = -1;

	if (!json_is_array(env)) {
		kc_fail(err, f->label, "%s.env is not a list", path);
		goto out;
	}
	x->env = xcalloc(json_array_size(env) + 1, sizeof(*x->env));
	for (size_t i = 0; i < json_array_size(env); i++) {
		json_t *item = json_array_get(env, i);
		FREE_AND_NULL(what);
		what = xasprintf("%s.env[%zu]", path, i);
		if (!json_is_object(item)) {
			kc_fail(err, f->label, "%s is not a mapping with name and value", what);
			goto out;
		}
		if (kc_get_str(f, what, item, "name", &name, err) < 0)
			goto out;
		if (!name) {
			kc_fail(err, f->label, "%s.name is missing", what);
			goto out;
		}
		if (strchr(name, '=')) {
			kc_fail(err, f->label, "%s.name \"%s\" contains '='", what, name);
			goto out;
		}
		char *vwhat = xasprintf("%s.value", what);
		int r = kc_text(f, vwhat, json_object_get(item, "value"), &value, err);
		free(vwhat);
		if (r < 0)
			goto out;
		x->env[x->nenv++] = xasprintf("%s=%s", name, value ? value : "");
		FREE_AND_NULL(name);
		FREE_AND_NULL(value);
	}
	rc = 0;
out:
	free(what);
	free(name);
	free(value);
	return rc;
}

static WUR int kc_fill_exec(const struct kc_file *f, const char *upath, json_t *ex,
			struct kube_exec_config **xout, char **err)
{
	char *path = xasprintf("%s.exec", upath);
	char *cmd = NULL, *mode = NULL;
	struct kube_exec_config *x = xcalloc(1, sizeof(*x));
	int rc = -1;

	*xout = x; /* released by kube_config_release, complete or not */
	if (!json_is_object(ex)) {
		kc_fail(err, f->label, "%s is not a mapping", path);
		goto out;
	}
	if (kc_get_str(f, path, ex, "command", &cmd, err) < 0)
		goto out;
	if (!cmd) {
		kc_fail(err, f->label, "%s.command is missing", path);
		goto out;
	}
	/* Like kubectl: a command with a slash is a path (relative to the file); else PATH. */
	x->command = strchr(cmd, '/') ? kc_resolve_path(f, cmd) : xstrdup(cmd);
	if (strchr(x->command, '/') && access(x->command, X_OK) != 0) {
		kc_fail(err, f->label, "%s.command: cannot run %s: %s", path, x->command,
			strerror(errno));
		goto out;
	}

	if (kc_get_str(f, path, ex, "apiVersion", &x->api_version, err) < 0)
		goto out;
	if (!x->api_version) {
		kc_fail(err, f->label, "%s.apiVersion is missing (use %s)", path, kc_exec_versions[0]);
		goto out;
	}
	if (!one_of(x->api_version, kc_exec_versions)) {
		kc_fail(err, f->label, "%s.apiVersion \"%s\" is not supported (use %s or %s)", path,
			x->api_version, kc_exec_versions[0], kc_exec_versions[1]);
		goto out;
	}

	json_t *args = json_object_get(ex, "args");
	if (args && !json_is_null(args)) {
		if (!json_is_array(args)) {
			kc_fail(err, f->label, "%s.args is not a list", path);
			goto out;
		}
		x->args = xcalloc(json_array_size(args) + 1, sizeof(*x->args));
		for (size_t i = 0; i < json_array_size(args); i++) {
			char *what = xasprintf("%s.args[%zu]", path, i);
			int r = kc_text(f, what, json_array_get(args, i), &x->args[x->nargs], err);
			if (r == 0 && !x->args[x->nargs]) {
				kc_fail(err, f->label, "%s is null", what);
				r = -1;
			}
			free(what);
			if (r < 0)
				goto out;
			x->nargs++;
		}
	}

	json_t *env = json_object_get(ex, "env");
	if (env && !json_is_null(env) && kc_fill_exec_env(f, path, env, x, err) < 0)
		goto out;

	if (kc_get_bool(f, path, ex, "provideClusterInfo", &x->provide_cluster_info, err) < 0)
		goto out;

	/* The operator has no terminal: spec.interactive is always false. */
	if (kc_get_str(f, path, ex, "interactiveMode", &mode, err) < 0)
		goto out;
	if (mode && !strcmp(mode, "Always")) {
		kc_fail(err, f->label, "%s.interactiveMode is Always, but the operator has no terminal "
			"to give the plugin; use Never or IfAvailable", path);
		goto out;
	}
	if (mode && strcmp(mode, "Never") && strcmp(mode, "IfAvailable")) {
		kc_fail(err, f->label, "%s.interactiveMode \"%s\" is not Never, IfAvailable or Always",
			path, mode);
		goto out;
	}
	rc = 0;
out:
	free(path);
	free(cmd);
	free(mode);
	return rc;
}

/* as, as-uid and as-groups: who the requests act as (each a header value: checked like the token). */
static WUR int kc_fill_impersonation(const struct kc_file *f, const char *path, json_t *u, struct kube_config *out,
				     char **err)
{
	char *what = xasprintf("%s.as", path);
	int rc = -1;
	if (kc_get_str(f, path, u, "as", &out->impersonate_user, err) < 0 ||
	    kc_check_header_value(f, what, &out->impersonate_user, err) < 0)
		goto out;
	free(what);
	what = xasprintf("%s.as-uid", path);
	if (kc_get_str(f, path, u, "as-uid", &out->impersonate_uid, err) < 0 ||
	    kc_check_header_value(f, what, &out->impersonate_uid, err) < 0)
		goto out;
	json_t *groups = json_object_get(u, "as-groups");
	if (groups && !json_is_null(groups) && !json_is_array(groups)) {
		kc_fail(err, f->label, "%s.as-groups is not a list", path);
		goto out;
	}
	size_t i;
	json_t *g;
	json_array_foreach(groups, i, g) {
		char buf[32];
		const char *text = kc_scalar_text(g, buf);
		free(what);
		what = xasprintf("%s.as-groups[%zu]", path, i);
		char *v = text ? xstrdup(text) : NULL;
		if (!v || kc_check_header_value(f, what, &v, err) < 0 || !v) {
			if (!*err)
				kc_fail(err, f->label, "%s is not a group name", what);
			free(v);
			goto out;
		}
		out->impersonate_groups =
			xrealloc(out->impersonate_groups, (out->nimpersonate_groups + 1) * sizeof(char *));
		out->impersonate_groups[out->nimpersonate_groups++] = v;
	}
	rc = 0;
out:
	free(what);
	return rc;
}

static WUR int kc_fill_user(const struct kc_entry *e, struct kube_config *out, char **err)
{
	const struct kc_file *f = e->file;
	const char *path = e->path;
	json_t *u = e->body;
	char *what = NULL;
	int rc = -1;

	if (kc_has(u, "auth-provider")) {
		kc_fail(err, f->label, "%s.auth-provider is not supported (it is deprecated and was "
			"removed from kubectl); use an exec credential plugin such as kubelogin or "
			"gke-gcloud-auth-plugin", path);
		goto out;
	}
	if (kc_has(u, "username") || kc_has(u, "password")) {
		kc_fail(err, f->label, "%s.username/password (basic authentication) is not supported; "
			"use a token, a client certificate or an exec plugin", path);
		goto out;
	}
	if (kc_has(u, "as-user-extra")) {
		kc_fail(err, f->label, "%s.as-user-extra (impersonated extra fields) is not supported", path);
		goto out;
	}
	if (kc_fill_impersonation(f, path, u, out, err) < 0)
		goto out;

	if (kc_get_path(f, path, u, "client-certificate", &out->cert_file, err) < 0 ||
	    kc_get_data(f, path, u, "client-certificate-data", &out->cert_data, err) < 0 ||
	    kc_get_path(f, path, u, "client-key", &out->key_file, err) < 0 ||
	    kc_get_data(f, path, u, "client-key-data", &out->key_data, err) < 0)
		goto out;
	if (out->cert_file && out->cert_data.data) {
		kc_fail(err, f->label, "%s: client-certificate and client-certificate-data are both "
			"set; keep one", path);
		goto out;
	}
	if (out->key_file && out->key_data.data) {
		kc_fail(err, f->label, "%s: client-key and client-key-data are both set; keep one", path);
		goto out;
	}
	bool have_cert = out->cert_file || out->cert_data.data;
	bool have_key = out->key_file || out->key_data.data;
	if (have_cert && !have_key) {
		kc_fail(err, f->label, "%s.%s is set but client-key is not (set client-key or "
			"client-key-data)", path,
			out->cert_file ? "client-certificate" : "client-certificate-data");
		goto out;
	}
	if (have_key && !have_cert) {
		kc_fail(err, f->label, "%s.%s is set but client-certificate is not (set "
			"client-certificate or client-certificate-data)", path,
			out->key_file ? "client-key" : "client-key-data");
		goto out;
	}

	/* The client hands a certificate and its key to TLS the same way: both files or both data. */
	if (have_cert && (out->cert_file != NULL) != (out->key_file != NULL)) {
		kc_fail(err, f->label, "%s: %s and %s mix a file with inline data; give both as files "
			"or both as -data", path,
			out->cert_file ? "client-certificate" : "client-certificate-data",
			out->key_file ? "client-key" : "client-key-data");
		goto out;
	}

	what = xasprintf("%s.token", path);
	if (kc_get_str(f, path, u, "token", &out->token, err) < 0 ||
	    kc_check_header_value(f, what, &out->token, err) < 0)
		goto out;
	if (kc_get_path(f, path, u, "tokenFile", &out->token_file, err) < 0)
		goto out;

	json_t *ex = u ? json_object_get(u, "exec") : NULL;
	if (ex && !json_is_null(ex) && kc_fill_exec(f, path, ex, &out->exec, err) < 0)
		goto out;
	rc = 0;
out:
	free(what);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Selection                                                           */
/* ------------------------------------------------------------------ */

/* Fills out from the merged files. out must be zeroed; the caller releases it on failure. */
static WUR int kc_resolve(const struct kc_set *set, const struct kube_overrides *o, struct kube_config *out,
		      char **err)
{
	struct kc_entry ctx = {0}, cl = {0}, us = {0};
	char *cluster_name = NULL, *user_name = NULL;
	const char *context = o ? o->context : NULL;
	const char *ctx_name = context && *context ? context : NULL;
	const struct kc_file *cur_file = NULL;
	const char *any = set->n > 1 ? " of any KUBECONFIG file" : "";
	char buf[32];
	int rc = -1;

	for (size_t i = 0; !ctx_name && i < set->n; i++) {
		const char *c = kc_scalar_text(json_object_get(set->files[i].root, "current-context"), buf);
		if (c && *c) {
			ctx_name = c;
			cur_file = &set->files[i];
		}
	}
	if (!ctx_name) {
		kc_fail(err, set->label, "current-context is not set and no --context was given");
		goto out;
	}
	if (!kc_find(set, KC_CONTEXTS, ctx_name, &ctx)) {
		if (cur_file)
			kc_fail(err, cur_file->label, "current-context \"%s\" is not in contexts%s",
				ctx_name, any);
		else
			kc_fail(err, set->label, "context \"%s\" (from --context) is not in contexts",
				ctx_name);
		goto out;
	}
	out->context = xstrdup(ctx_name);

	if (kc_get_str(ctx.file, ctx.path, ctx.body, "cluster", &cluster_name, err) < 0 ||
	    kc_get_str(ctx.file, ctx.path, ctx.body, "user", &user_name, err) < 0 ||
	    kc_get_str(ctx.file, ctx.path, ctx.body, "namespace", &out->namespace, err) < 0)
		goto out;
	if (o && o->cluster && *o->cluster) {
		free(cluster_name);
		cluster_name = xstrdup(o->cluster);
		if (!kc_find(set, KC_CLUSTERS, cluster_name, &cl)) {
			kc_fail(err, set->label, "cluster \"%s\" (from --cluster) is not in clusters%s", cluster_name,
				any);
			goto out;
		}
	}
	if (o && o->user && *o->user) {
		free(user_name);
		user_name = xstrdup(o->user);
		if (!kc_find(set, KC_USERS, user_name, &us)) {
			kc_fail(err, set->label, "user \"%s\" (from --user) is not in users%s", user_name, any);
			goto out;
		}
	}
	if (!cluster_name) {
		kc_fail(err, ctx.file->label, "%s.cluster is missing (context \"%s\")", ctx.path,
			ctx_name);
		goto out;
	}
	if (!cl.file && !kc_find(set, KC_CLUSTERS, cluster_name, &cl)) {
		kc_fail(err, ctx.file->label, "context \"%s\" names cluster \"%s\", which is not in "
			"clusters%s", ctx_name, cluster_name, any);
		goto out;
	}
	if (kc_fill_cluster(&cl, out, err) < 0)
		goto out;
	/* A context without a user is anonymous, as in kubectl. */
	if (user_name) {
		if (!us.file && !kc_find(set, KC_USERS, user_name, &us)) {
			kc_fail(err, ctx.file->label, "context \"%s\" names user \"%s\", which is not in "
				"users%s", ctx_name, user_name, any);
			goto out;
		}
		if (kc_fill_user(&us, out, err) < 0)
			goto out;
	}
	rc = 0;
out:
	free(ctx.path);
	free(cl.path);
	free(us.path);
	free(cluster_name);
	free(user_name);
	return rc;
}

/* Parses text into a new entry of set; label and base_dir are copied. */
static WUR int kc_set_add_text(struct kc_set *set, const char *text, size_t len, const char *label,
			   const char *base_dir, char **err)
{
	json_t *root = NULL;
	char *msg = NULL;

	if (yaml_to_json(text, len, &root, &msg) < 0) {
		kc_fail(err, label, "%s", msg);
		free(msg);
		return -1;
	}
	set->files = xgrow(set->files, &set->cap, set->n + 1, sizeof(*set->files));
	struct kc_file *f = &set->files[set->n++];
	f->label = label ? xstrdup(label) : NULL;
	f->base_dir = base_dir ? xstrdup(base_dir) : NULL;
	f->root = root;
	return kc_check_file(f, err);
}

int kubeconfig_parse(const char *text, size_t len, const char *base_dir, const char *context,
		     struct kube_config *out, char **err)
{
	struct kube_overrides o = KUBE_OVERRIDES_INIT;
	o.context = context;
	return kubeconfig_parse_with(text, len, base_dir, &o, out, err);
}

int kubeconfig_parse_with(const char *text, size_t len, const char *base_dir, const struct kube_overrides *o,
			  struct kube_config *out, char **err)
{
	struct kc_set set = {0};
	int rc = -1;

	memset(out, 0, sizeof(*out));
	*err = NULL;
	if (kc_set_add_text(&set, text, len, NULL, base_dir, err) < 0)
		goto out;
	rc = kc_resolve(&set, o, out, err);
	if (rc == 0 && o)
		rc = kube_config_apply_overrides(out, o, err);
out:
	if (rc < 0)
		kube_config_release(out);
	kc_set_release(&set);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

/* A new absolute form of path (not resolving symlinks, like kubectl). */
static char *kc_abspath(const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return xstrdup(path);
	char *p = xasprintf("%s/%s", cwd, path);
	free(cwd);
	return p;
}

/* A new string: the directory part of an absolute path. */
static char *kc_dirname(const char *abs)
{
	const char *slash = strrchr(abs, '/');
	if (!slash || slash == abs)
		return xstrdup("/");
	return xstrndup(abs, (size_t)(slash - abs));
}

/*
 * Reads and parses one file into set. Returns 0, 1 when optional and the
 * file does not exist (nothing added), or -1 with *err set.
 */
static WUR int kc_set_add_file(struct kc_set *set, const char *path, bool optional, char **err)
{
	char *abs = kc_abspath(path), *dir = NULL;
	struct strbuf sb;
	struct stat stbuf;
	int fd = -1, rc = -1;

	strbuf_init(&sb, KC_FILE_CAP);
	for (size_t i = 0; i < set->n; i++) {
		if (set->files[i].label && !strcmp(set->files[i].label, abs)) {
			rc = 1; /* listed twice in KUBECONFIG: the first one counts */
			goto out;
		}
	}
	fd = open(abs, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (optional && errno == ENOENT) {
			rc = 1;
			goto out;
		}
		kc_fail(err, abs, "cannot read it: %s", strerror(errno));
		goto out;
	}
	if (fstat(fd, &stbuf) == 0 && S_ISDIR(stbuf.st_mode)) {
		kc_fail(err, abs, "is a directory, not a file");
		goto out;
	}
	for (;;) {
		char chunk[65536];
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			kc_fail(err, abs, "cannot read it: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (strbuf_add(&sb, chunk, (size_t)n) < 0) {
			kc_fail(err, abs, "is larger than %u MiB", KC_FILE_CAP / (1024u * 1024u));
			goto out;
		}
	}
	dir = kc_dirname(abs);
	if (kc_set_add_text(set, strbuf_str(&sb), sb.len, abs, dir, err) < 0)
		goto out;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	strbuf_release(&sb);
	free(abs);
	free(dir);
	return rc;
}

/* A new "$HOME/.kube/config", or NULL when no home directory is known. */
static char *kc_default_path(void)
{
	const char *home = getenv("HOME");
	if (home && *home)
		return xasprintf("%s/.kube/config", home);
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) == 0 && res && res->pw_dir &&
	    *res->pw_dir)
		return xasprintf("%s/.kube/config", res->pw_dir);
	return NULL;
}

int kubeconfig_load(const char *path, const char *context, struct kube_config *out, char **err)
{
	struct kube_overrides o = KUBE_OVERRIDES_INIT;
	o.context = context;
	return kubeconfig_load_with(path, &o, out, err);
}

/* No kubeconfig file, but --server: the flags are the whole configuration (kubectl's way). */
static WUR int from_flags_only(const struct kube_overrides *o, struct kube_config *out, char **err)
{
	if (o->context || o->cluster || o->user) {
		*err = xstrdup("--context, --cluster and --user name kubeconfig entries, and there is no kubeconfig");
		return -1;
	}
	return kube_config_apply_overrides(out, o, err);
}

int kubeconfig_load_with(const char *path, const struct kube_overrides *o, struct kube_config *out, char **err)
{
	struct kc_set set = {0};
	struct strbuf labels;
	char *list = NULL, *home_cfg = NULL;
	const char *env = getenv("KUBECONFIG");
	int rc = -1;

	memset(out, 0, sizeof(*out));
	*err = NULL;
	strbuf_init(&labels, 0);
	if (path) {
		if (kc_set_add_file(&set, path, false, err) < 0)
			goto out;
	} else if (env && *env) {
		list = xstrdup(env);
		char *save = NULL;
		for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
			if (kc_set_add_file(&set, p, true, err) < 0)
				goto out;
		}
		if (set.n == 0 && o && o->server) {
			rc = from_flags_only(o, out, err);
			goto out;
		}
		if (set.n == 0) {
			kc_fail(err, NULL, "none of the files in KUBECONFIG=%s exists", env);
			goto out;
		}
	} else {
		home_cfg = kc_default_path();
		if (!home_cfg) {
			kc_fail(err, NULL, "KUBECONFIG is not set and there is no home directory "
				"for ~/.kube/config");
			goto out;
		}
		int r = kc_set_add_file(&set, home_cfg, true, err);
		if (r < 0)
			goto out;
		if (r == 1 && o && o->server) {
			rc = from_flags_only(o, out, err);
			goto out;
		}
		if (r == 1) {
			kc_fail(err, home_cfg, "does not exist, and KUBECONFIG is not set (outside a "
				"cluster, give --kubeconfig or --server, or set KUBECONFIG)");
			goto out;
		}
	}
	for (size_t i = 0; i < set.n; i++) {
		if (strbuf_addstr(&labels, i ? ", " : "") < 0 ||
		    strbuf_addstr(&labels, set.files[i].label) < 0)
			abort(); /* unreachable: the buffer has no cap */
	}
	set.label = strbuf_detach(&labels);
	rc = kc_resolve(&set, o, out, err);
	if (rc == 0 && o)
		rc = kube_config_apply_overrides(out, o, err);
out:
	if (rc < 0)
		kube_config_release(out);
	kc_set_release(&set);
	strbuf_release(&labels);
	free(list);
	free(home_cfg);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Release                                                             */
/* ------------------------------------------------------------------ */

void kube_exec_config_free(struct kube_exec_config *x)
{
	if (!x)
		return;
	free(x->command);
	for (size_t i = 0; i < x->nargs; i++)
		free(x->args[i]);
	free(x->args);
	for (size_t i = 0; i < x->nenv; i++)
		free(x->env[i]);
	free(x->env);
	free(x->api_version);
	free(x);
}

/* Frees every string and blob; cfg is zeroed afterwards. Safe on a zeroed struct. */
void kube_config_release(struct kube_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->server);
	free(cfg->tls_server_name);
	free(cfg->ca_file);
	free(cfg->ca_data.data);
	kube_config_drop_credentials(cfg); /* the user's: keys and tokens wiped */
	free(cfg->namespace);
	free(cfg->context);
	free(cfg->impersonate_user);
	free(cfg->impersonate_uid);
	for (size_t i = 0; i < cfg->nimpersonate_groups; i++)
		free(cfg->impersonate_groups[i]);
	free(cfg->impersonate_groups);
	memset(cfg, 0, sizeof(*cfg));
}
