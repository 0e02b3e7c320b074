/*
 * kubectl-stateful's command line. Flags may come anywhere (kubectl's
 * habit), as --flag value, --flag=value, -n value or -nvalue; "--" ends
 * them. Each flag belongs to the subcommands that use it, and is refused
 * elsewhere rather than silently ignored.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_args.h"
#include "plugin/plugin_jsonpath.h"
#include "util/duration.h"
#include "util/xalloc.h"

/* members replace stc NAME MEMBER...: the verb, the object (two words) and the members. */
#define NPOSITIONAL (PLUGIN_MAX_MEMBERS + 3)

static const struct {
	const char *name;
	enum plugin_cmd cmd;
} commands[] = {
	{"status", PLUGIN_STATUS},   {"resize", PLUGIN_RESIZE},   {"abort", PLUGIN_ABORT},
	{"explain", PLUGIN_EXPLAIN}, {"cleanup", PLUGIN_CLEANUP}, {"members", PLUGIN_MEMBERS},
	{"uninstall", PLUGIN_UNINSTALL},
	{"completion", PLUGIN_COMPLETION}, {"help", PLUGIN_HELP}, {"version", PLUGIN_VERSION},
};

/* Which subcommands a flag applies to (bit per enum plugin_cmd). */
#define ONLY(c) (1u << (c))
#define ANY_CLUSTER_CMD                                                                            \
	(ONLY(PLUGIN_STATUS) | ONLY(PLUGIN_RESIZE) | ONLY(PLUGIN_ABORT) | ONLY(PLUGIN_EXPLAIN) |    \
	 ONLY(PLUGIN_CLEANUP) | ONLY(PLUGIN_MEMBERS) | ONLY(PLUGIN_UNINSTALL))
/* The commands that print a list (a table): -o and --no-headers. explain writes prose. */
#define LISTS (ONLY(PLUGIN_STATUS) | ONLY(PLUGIN_MEMBERS) | ONLY(PLUGIN_CLEANUP))

enum flag_id {
	F_KUBECONFIG, F_CONTEXT, F_CLUSTER, F_USER, F_SERVER, F_TOKEN, F_CA, F_CLIENT_CERT, F_CLIENT_KEY,
	F_INSECURE, F_TLS_SERVER_NAME, F_AS, F_AS_GROUP, F_AS_UID, F_REQUEST_TIMEOUT, F_NAMESPACE, F_ALL_NAMESPACES, F_OUTPUT, F_STRATEGY, F_CLASS, F_WAIT,
	F_NO_WAIT, F_TIMEOUT, F_RETRY, F_DRY_RUN, F_FORCE, F_OPERATOR_NS, F_HELP, F_VERSION, F_NO_HEADERS,
};

static const struct flag {
	const char *long_name;
	char short_name;
	bool takes_value;
	unsigned cmds;
	enum flag_id id;
} flags[] = {
	{"kubeconfig", 0, true, ANY_CLUSTER_CMD, F_KUBECONFIG},
	{"context", 0, true, ANY_CLUSTER_CMD, F_CONTEXT},
	{"cluster", 0, true, ANY_CLUSTER_CMD, F_CLUSTER},
	{"user", 0, true, ANY_CLUSTER_CMD, F_USER},
	{"server", 's', true, ANY_CLUSTER_CMD, F_SERVER},
	{"token", 0, true, ANY_CLUSTER_CMD, F_TOKEN},
	{"certificate-authority", 0, true, ANY_CLUSTER_CMD, F_CA},
	{"client-certificate", 0, true, ANY_CLUSTER_CMD, F_CLIENT_CERT},
	{"client-key", 0, true, ANY_CLUSTER_CMD, F_CLIENT_KEY},
	{"insecure-skip-tls-verify", 0, false, ANY_CLUSTER_CMD, F_INSECURE},
	{"tls-server-name", 0, true, ANY_CLUSTER_CMD, F_TLS_SERVER_NAME},
	{"as", 0, true, ANY_CLUSTER_CMD, F_AS},
	{"as-group", 0, true, ANY_CLUSTER_CMD, F_AS_GROUP},
	{"as-uid", 0, true, ANY_CLUSTER_CMD, F_AS_UID},
	{"request-timeout", 0, true, ANY_CLUSTER_CMD, F_REQUEST_TIMEOUT},
	{"namespace", 'n', true, ANY_CLUSTER_CMD, F_NAMESPACE},
	{"all-namespaces", 'A', false, ONLY(PLUGIN_STATUS), F_ALL_NAMESPACES},
	{"output", 'o', true, LISTS, F_OUTPUT},
	{"no-headers", 0, false, LISTS, F_NO_HEADERS},
	{"strategy", 0, true, ONLY(PLUGIN_RESIZE), F_STRATEGY},
	{"class", 0, true, ONLY(PLUGIN_RESIZE), F_CLASS},
	{"wait", 0, false, ONLY(PLUGIN_RESIZE), F_WAIT},
	{"no-wait", 0, false, ONLY(PLUGIN_RESIZE), F_NO_WAIT},
	{"timeout", 0, true, ONLY(PLUGIN_RESIZE), F_TIMEOUT},
	{"retry", 0, false, ONLY(PLUGIN_CLEANUP), F_RETRY},
	{"dry-run", 0, false, ONLY(PLUGIN_RESIZE) | ONLY(PLUGIN_UNINSTALL), F_DRY_RUN},
	{"force", 0, false, ONLY(PLUGIN_UNINSTALL), F_FORCE},
	{"operator-namespace", 0, true, ANY_CLUSTER_CMD, F_OPERATOR_NS},
	{"help", 'h', false, ~0u, F_HELP},
	{"version", 0, false, ~0u, F_VERSION},
};


void plugin_args_release(struct plugin_args *a)
{
	free(a->template_name);
	a->template_name = NULL;
	free((void *)a->connection.as_groups);
	a->connection.as_groups = NULL;
	a->connection.nas_groups = 0;
	free(a->object);
	a->object = NULL;
}

static int fail(char **err, char *msg)
{
	*err = msg;
	return -1;
}

/* kubectl's --request-timeout: 0 (none), a duration (1s, 2m), or whole seconds. */
static int parse_request_timeout(const char *flag, const char *v, int64_t *ms, char **err)
{
	size_t digits = strspn(v, "0123456789");
	if (digits && !v[digits] && digits < 10) {
		*ms = (int64_t)strtoll(v, NULL, 10) * 1000;
		return 0;
	}
	char *derr = NULL;
	if (duration_parse(v, ms, &derr) < 0 || *ms < 0) {
		char *m = xasprintf("%s: %s", flag, derr ? derr : "not a duration (e.g. 30s, 2m; 0: none)");
		free(derr);
		return fail(err, m);
	}
	return 0;
}


/*
 * -o's value: json, yaml, wide, name, jsonpath=TEMPLATE (also
 * jsonpath='TEMPLATE', as a shell leaves it when quoted inside). The
 * template is parsed here, so a mistake in it is shown before any request.
 */
static int parse_output(const char *flag, const char *v, struct plugin_args *out, char **err)
{
	static const struct {
		const char *name;
		enum plugin_output o;
	} formats[] = {{"json", PLUGIN_OUT_JSON}, {"yaml", PLUGIN_OUT_YAML}, {"wide", PLUGIN_OUT_WIDE},
		       {"name", PLUGIN_OUT_NAME},  {"table", PLUGIN_OUT_TABLE}};
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(v, formats[i].name)) {
			out->output = formats[i].o;
			return 0;
		}
	if (strncmp(v, "jsonpath=", 9))
		return fail(err, xasprintf("%s: unknown output format \"%s\"; use json, yaml, wide, name or "
					   "jsonpath=TEMPLATE",
					   flag, v));
	const char *t = v + 9;
	if (!*t)
		return fail(err, xasprintf("%s: jsonpath= needs a template, e.g. jsonpath='{.name}'", flag));
	struct jsonpath *jp = NULL;
	char *jerr = NULL;
	if (jsonpath_parse(t, &jp, &jerr) < 0) {
		char *m = xasprintf("%s: %s", flag, jerr);
		free(jerr);
		return fail(err, m);
	}
	jsonpath_free(jp);
	out->output = PLUGIN_OUT_JSONPATH;
	out->jsonpath = t;
	return 0;
}

static const struct flag *find_long(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strlen(flags[i].long_name) == len && !strncmp(flags[i].long_name, name, len))
			return &flags[i];
	return NULL;
}

static const struct flag *find_short(char c)
{
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (flags[i].short_name == c)
			return &flags[i];
	return NULL;
}

struct seen_flag {
	const struct flag *flag;
	const char *value;
	const char *as_typed;
};

/* One flag with its value (may be NULL) applied to out. */
static int apply_flag(const struct seen_flag *f, struct plugin_args *out, char **err)
{
	const char *v = f->value;
	switch (f->flag->id) {
	case F_KUBECONFIG: out->kubeconfig = v; break;
	case F_CONTEXT: out->connection.context = v; break;
	case F_CLUSTER: out->connection.cluster = v; break;
	case F_USER: out->connection.user = v; break;
	case F_SERVER: out->connection.server = v; break;
	case F_TOKEN: out->connection.token = v; break;
	case F_CA: out->connection.certificate_authority = v; break;
	case F_CLIENT_CERT: out->connection.client_certificate = v; break;
	case F_CLIENT_KEY: out->connection.client_key = v; break;
	case F_TLS_SERVER_NAME: out->connection.tls_server_name = v; break;
	case F_AS: out->connection.as = v; break;
	case F_AS_UID: out->connection.as_uid = v; break;
	case F_AS_GROUP: {
		struct kube_overrides *o = &out->connection;
		const char **groups = xrealloc((void *)o->as_groups, (o->nas_groups + 1) * sizeof(*groups));
		groups[o->nas_groups++] = v;
		o->as_groups = groups;
		break;
	}
	case F_INSECURE:
		if (!v || !strcmp(v, "true"))
			out->connection.insecure_skip_tls_verify = 1;
		else if (!strcmp(v, "false"))
			out->connection.insecure_skip_tls_verify = 0;
		else
			return fail(err, xasprintf("%s: use true or false", f->as_typed));
		break;
	case F_REQUEST_TIMEOUT:
		if (parse_request_timeout(f->as_typed, v, &out->request_timeout_ms, err) < 0)
			return -1;
		break;
	case F_NAMESPACE: out->namespace = v; break;
	case F_ALL_NAMESPACES: out->all_namespaces = true; break;
	case F_OPERATOR_NS: out->operator_namespace = v; break;
	case F_OUTPUT:
		if (parse_output(f->as_typed, v, out, err) < 0)
			return -1;
		break;
	case F_NO_HEADERS: out->no_headers = true; break;
	case F_STRATEGY:
		if (strcmp(v, "auto") && strcmp(v, "expand") && strcmp(v, "copy"))
			return fail(err, xasprintf("%s: unknown strategy \"%s\"; use auto, expand or copy", f->as_typed, v));
		out->strategy = v;
		break;
	case F_CLASS:
		if (!*v)
			return fail(err, xasprintf("%s: name a StorageClass", f->as_typed));
		out->storage_class = v;
		break;
	case F_WAIT:
		if (!v || !strcmp(v, "true"))
			out->wait = PLUGIN_WAIT_ON;
		else if (!strcmp(v, "false"))
			out->wait = PLUGIN_WAIT_OFF;
		else
			return fail(err, xasprintf("%s: use --wait, --wait=true or --wait=false", f->as_typed));
		break;
	case F_NO_WAIT: out->wait = PLUGIN_WAIT_OFF; break;
	case F_TIMEOUT: {
		char *derr = NULL;
		int64_t ms;
		if (duration_parse(v, &ms, &derr) < 0 || ms < 0) {
			char *m = xasprintf("%s: %s", f->as_typed, derr ? derr : "not a duration (e.g. 30m, 1h)");
			free(derr);
			return fail(err, m);
		}
		out->timeout_ms = ms;
		break;
	}
	case F_RETRY: out->retry = true; break;
	case F_DRY_RUN:
		if (!v || !strcmp(v, "client"))
			out->dry_run = PLUGIN_DRY_RUN_CLIENT;
		else if (!strcmp(v, "server"))
			out->dry_run = PLUGIN_DRY_RUN_SERVER;
		else if (!strcmp(v, "none"))
			out->dry_run = PLUGIN_DRY_RUN_NONE;
		else
			return fail(err, xasprintf("%s: use --dry-run=client, --dry-run=server or --dry-run=none", f->as_typed));
		break;
	case F_FORCE: out->force = true; break;
	case F_HELP: out->help_topic_set = true; break;
	case F_VERSION: out->cmd = PLUGIN_VERSION; break;
	}
	return 0;
}

/* kubectl's spellings of the two kinds. */
static const struct {
	const char *word;
	enum plugin_kind kind;
} kinds[] = {
	{"sts", PLUGIN_KIND_STS}, {"statefulset", PLUGIN_KIND_STS}, {"statefulsets", PLUGIN_KIND_STS},
	{"statefulset.apps", PLUGIN_KIND_STS}, {"statefulsets.apps", PLUGIN_KIND_STS},
	{"stc", PLUGIN_KIND_STC}, {"statefulcluster", PLUGIN_KIND_STC}, {"statefulclusters", PLUGIN_KIND_STC},
	{"statefulcluster.stateful-operator.io", PLUGIN_KIND_STC},
	{"statefulclusters.stateful-operator.io", PLUGIN_KIND_STC},
};

static bool is_kind_word(const char *s)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].word, s))
			return true;
	return false;
}

/*
 * kubectl's other ways to name the object, turned into TYPE/NAME (in
 * out->object): "TYPE NAME" (two arguments), and a bare NAME where the
 * command takes one kind only (sts for resize, abort, explain, cleanup;
 * stc for members). pos and *npos are updated.
 */
static void join_object(const char **pos, int *npos, struct plugin_args *out)
{
	if (*npos == 0 || strchr(pos[0], '/'))
		return;
	if (is_kind_word(pos[0]) && *npos >= 2 && !strchr(pos[1], '/') && !strchr(pos[1], '=')) {
		out->object = xasprintf("%s/%s", pos[0], pos[1]);
		pos[0] = out->object;
		for (int i = 1; i + 1 < *npos; i++)
			pos[i] = pos[i + 1];
		--*npos;
		return;
	}
	const char *only = NULL;
	switch (out->cmd) {
	case PLUGIN_RESIZE:
	case PLUGIN_ABORT:
	case PLUGIN_EXPLAIN:
	case PLUGIN_CLEANUP: only = "sts"; break;
	case PLUGIN_MEMBERS: only = "stc"; break;
	default: return;
	}
	if (is_kind_word(pos[0]) || strchr(pos[0], '='))
		return;
	out->object = xasprintf("%s/%s", only, pos[0]);
	pos[0] = out->object;
}

/* "sts/NAME" or "stc/NAME" and kubectl's longer spellings. */
static int parse_object(const char *s, struct plugin_args *out, char **err)
{
	const char *slash = strchr(s, '/');
	if (!slash)
		return fail(err, xasprintf("\"%s\": name the object as sts/NAME or stc/NAME (or sts NAME)", s));
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strlen(kinds[i].word) == (size_t)(slash - s) && !strncmp(kinds[i].word, s, (size_t)(slash - s))) {
			if (!slash[1] || strchr(slash + 1, '/'))
				return fail(err, xasprintf("\"%s\": no object name after \"/\"", s));
			out->kind = kinds[i].kind;
			out->name = slash + 1;
			return 0;
		}
	}
	return fail(err, xasprintf("\"%s\": unknown kind \"%.*s\"; use sts (StatefulSet) or stc (StatefulCluster)", s,
				   (int)(slash - s), s));
}

/* TEMPLATE=SIZE; the size must be a positive quantity. */
static int parse_target(const char *s, struct plugin_args *out, char **err)
{
	const char *eq = strchr(s, '=');
	if (!eq || eq == s)
		return fail(err, xasprintf("\"%s\": give the size as TEMPLATE=SIZE, e.g. data=20Gi", s));
	char *qerr = NULL;
	if (quantity_parse(eq + 1, &out->size, &qerr) < 0) {
		char *m = xasprintf("bad size for template \"%.*s\": %s", (int)(eq - s), s, qerr);
		free(qerr);
		return fail(err, m);
	}
	if (quantity_sign(&out->size) <= 0)
		return fail(err, xasprintf("bad size for template \"%.*s\": \"%s\" is not more than zero", (int)(eq - s), s,
					   eq + 1));
	out->template_name = xstrndup(s, (size_t)(eq - s));
	out->size_text = eq + 1;
	return 0;
}

static const char *cmd_name(enum plugin_cmd c)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].cmd == c)
			return commands[i].name;
	return "?";
}

/* "remove" or "replace" first after members: the operation (taken off pos). */
static void take_members_op(const char **pos, int *npos, struct plugin_args *out)
{
	if (out->cmd != PLUGIN_MEMBERS || *npos == 0 || (strcmp(pos[0], "remove") && strcmp(pos[0], "replace")))
		return;
	out->members_op = !strcmp(pos[0], "remove") ? PLUGIN_MEMBERS_REMOVE : PLUGIN_MEMBERS_REPLACE;
	for (int i = 0; i + 1 < *npos; i++)
		pos[i] = pos[i + 1];
	--*npos;
}

/*
 * members remove|replace: the StatefulCluster, then its members by name
 * (<name>-<n>, n in canonical decimal, each once), checked before any
 * request so a typo never names another member.
 */
static int parse_member_names(const char **pos, int npos, struct plugin_args *out, char **err)
{
	const char *verb = out->members_op == PLUGIN_MEMBERS_REMOVE ? "remove" : "replace";
	if (npos < 2)
		return fail(err, xasprintf("members %s takes a StatefulCluster and its members: members %s stc/NAME "
					   "MEMBER...",
					   verb, verb));
	if (npos - 1 > PLUGIN_MAX_MEMBERS)
		return fail(err, xasprintf("members %s: at most %d members at once", verb, PLUGIN_MAX_MEMBERS));
	if (parse_object(pos[0], out, err) < 0)
		return -1;
	if (out->kind != PLUGIN_KIND_STC)
		return fail(err, xasprintf("members %s: \"%s\" is not a StatefulCluster; use stc/NAME", verb, pos[0]));
	size_t len = strlen(out->name);
	for (int i = 1; i < npos; i++) {
		const char *m = pos[i];
		bool prefixed = !strncmp(m, out->name, len) && m[len] == '-';
		const char *n = prefixed ? m + len + 1 : "";
		size_t digits = strspn(n, "0123456789");
		if (!prefixed || !digits || n[digits] || (n[0] == '0' && digits > 1) || digits > 18)
			return fail(err, xasprintf("members %s: \"%s\" is not a member name of stc/%s: members are %s-<n> "
						   "(kubectl stateful members stc/%s lists them)",
						   verb, m, out->name, out->name, out->name));
		for (int k = 0; k < out->nmember_names; k++)
			if (!strcmp(out->member_names[k], m))
				return fail(err, xasprintf("members %s: %s is named twice", verb, m));
		out->member_names[out->nmember_names++] = m;
	}
	return 0;
}

/* The positional arguments of the subcommand: what each takes. */
static int parse_positionals(const char **pos, int npos, struct plugin_args *out, char **err)
{
	const char *cmd = cmd_name(out->cmd);
	take_members_op(pos, &npos, out);
	join_object(pos, &npos, out);
	switch (out->cmd) {
	case PLUGIN_HELP:
	case PLUGIN_VERSION:
		return 0;
	case PLUGIN_STATUS:
		if (npos > 1)
			return fail(err, xstrdup("status takes at most one object: status [sts/NAME|stc/NAME]"));
		if (npos == 1 && parse_object(pos[0], out, err) < 0)
			return -1;
		if (npos == 1 && out->all_namespaces)
			return fail(err, xstrdup("status: -A lists every namespace; it does not go with one object"));
		return 0;
	case PLUGIN_COMPLETION:
		if (npos != 1 || (strcmp(pos[0], "bash") && strcmp(pos[0], "zsh")))
			return fail(err, xstrdup("completion takes one shell: completion bash|zsh"));
		out->shell = pos[0];
		return 0;
	case PLUGIN_RESIZE:
		if (npos != 2)
			return fail(err, xstrdup("resize takes an object and a size: resize sts/NAME TEMPLATE=SIZE"));
		if (parse_object(pos[0], out, err) < 0 || parse_target(pos[1], out, err) < 0)
			return -1;
		break;
	case PLUGIN_MEMBERS:
		if (out->members_op != PLUGIN_MEMBERS_LIST)
			return parse_member_names(pos, npos, out, err);
		if (npos != 1)
			return fail(err, xstrdup("members takes one StatefulCluster: members stc/NAME (or members "
						 "remove|replace stc/NAME MEMBER...)"));
		if (parse_object(pos[0], out, err) < 0)
			return -1;
		if (out->kind != PLUGIN_KIND_STC)
			return fail(err, xasprintf("members: \"%s\" is not a StatefulCluster; use stc/NAME", pos[0]));
		return 0;
	case PLUGIN_UNINSTALL:
		if (npos)
			return fail(err, xasprintf("uninstall takes no object (\"%s\"): it looks at every StatefulSet "
						   "(-n: of one namespace)",
						   pos[0]));
		return 0;
	case PLUGIN_ABORT:
	case PLUGIN_EXPLAIN:
	case PLUGIN_CLEANUP:
		if (npos != 1)
			return fail(err, xasprintf("%s takes one StatefulSet: %s sts/NAME", cmd, cmd));
		if (parse_object(pos[0], out, err) < 0)
			return -1;
		break;
	}
	if (out->kind != PLUGIN_KIND_STS)
		return fail(err, xasprintf("%s: \"%s\" is not a StatefulSet; use sts/NAME", cmd, pos[0]));
	return 0;
}

/* Flags that each make sense alone but not together. */
static int check_combinations(const struct plugin_args *a, char **err)
{
	if (a->cmd == PLUGIN_UNINSTALL && a->dry_run == PLUGIN_DRY_RUN_SERVER)
		return fail(err, xstrdup("uninstall: --dry-run=server is not supported (it deletes through several "
					 "requests); use --dry-run (client)"));
	if (a->cmd == PLUGIN_RESIZE && a->dry_run && a->wait == PLUGIN_WAIT_ON)
		return fail(err, xstrdup("resize: --wait does not go with --dry-run: nothing is started to wait for"));
	if (a->cmd == PLUGIN_MEMBERS && a->members_op != PLUGIN_MEMBERS_LIST &&
	    (a->output == PLUGIN_OUT_WIDE || a->no_headers))
		return fail(err, xstrdup("members remove|replace: -o wide and --no-headers are for lists; use -o json, "
					 "yaml, name or jsonpath=TEMPLATE"));
	if (a->cmd == PLUGIN_CLEANUP && a->retry && (a->output != PLUGIN_OUT_TABLE || a->no_headers))
		return fail(err, xstrdup("cleanup: -o and --no-headers list the cleanups; --retry lists nothing"));
	return 0;
}

/* The flag at argv[*i]: its value taken from "=", the rest of "-nVALUE" or the next argument. */
static int read_flag(int argc, char *const *argv, int *i, struct seen_flag *f, char **err)
{
	const char *a = argv[*i];
	const char *inline_value = NULL;
	if (a[1] == '-') {
		const char *eq = strchr(a + 2, '=');
		size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		f->flag = find_long(a + 2, len);
		inline_value = eq ? eq + 1 : NULL;
	} else {
		f->flag = find_short(a[1]);
		inline_value = a[2] ? a + 2 + (a[2] == '=') : NULL; /* -ojson, -o=json (pflag's) */
		if (f->flag && !f->flag->takes_value && inline_value)
			f->flag = NULL; /* -Ax: no grouped short flags */
	}
	f->as_typed = a;
	if (!f->flag)
		return fail(err, xasprintf("unknown flag \"%s\" (see kubectl stateful --help)", a));
	if (!f->flag->takes_value) {
		/* Booleans take =true or =false, as in kubectl. */
		if (inline_value && f->flag->id != F_WAIT && f->flag->id != F_INSECURE && f->flag->id != F_DRY_RUN)
			return fail(err, xasprintf("%s takes no value", a));
		f->value = inline_value;
		return 0;
	}
	if (inline_value) {
		f->value = inline_value;
	} else if (*i + 1 < argc) {
		f->value = argv[++*i];
	} else {
		return fail(err, xasprintf("%s needs a value", a));
	}
	return 0;
}

int plugin_args_parse(int argc, char *const *argv, struct plugin_args *out, char **err)
{
	memset(out, 0, sizeof(*out));
	out->connection = (struct kube_overrides)KUBE_OVERRIDES_INIT;
	out->request_timeout_ms = -1;
	*err = NULL;
	const char *pos[NPOSITIONAL];
	int npos = 0;
	struct seen_flag seen[32];
	int nseen = 0;
	bool have_cmd = false, flags_done = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!flags_done && !strcmp(a, "--")) {
			flags_done = true;
		} else if (!flags_done && a[0] == '-' && a[1]) {
			if (nseen == (int)(sizeof(seen) / sizeof(seen[0])))
				return fail(err, xstrdup("too many flags"));
			if (read_flag(argc, argv, &i, &seen[nseen], err) < 0)
				return -1;
			nseen++;
		} else if (!have_cmd) {
			size_t k;
			for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
				if (!strcmp(commands[k].name, a))
					break;
			if (k == sizeof(commands) / sizeof(commands[0]))
				return fail(err, xasprintf("unknown command \"%s\"; use status, resize, abort, explain, "
							   "cleanup, members, uninstall or completion",
							   a));
			out->cmd = commands[k].cmd;
			have_cmd = true;
		} else if (npos == NPOSITIONAL) {
			return fail(err, xasprintf("unexpected argument \"%s\"", a));
		} else {
			pos[npos++] = a;
		}
	}
	if (!have_cmd && nseen == 0)
		out->cmd = PLUGIN_HELP;
	for (int k = 0; k < nseen; k++) {
		if (have_cmd && !(seen[k].flag->cmds & ONLY(out->cmd)) && out->cmd != PLUGIN_HELP) {
			plugin_args_release(out);
			return fail(err, xasprintf("%s does not apply to %s", seen[k].as_typed, cmd_name(out->cmd)));
		}
		if (apply_flag(&seen[k], out, err) < 0) {
			plugin_args_release(out);
			return -1;
		}
	}
	if (out->help_topic_set) {
		/* --help anywhere: the help of the command named, else the general one. */
		out->help_topic = have_cmd ? out->cmd : PLUGIN_HELP;
		out->cmd = PLUGIN_HELP;
		return 0;
	}
	if (out->cmd == PLUGIN_HELP && npos == 1) {
		/* help COMMAND */
		size_t k;
		for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
			if (!strcmp(commands[k].name, pos[0]))
				break;
		if (k == sizeof(commands) / sizeof(commands[0])) {
			plugin_args_release(out);
			return fail(err, xasprintf("help: unknown command \"%s\"", pos[0]));
		}
		out->help_topic_set = true;
		out->help_topic = commands[k].cmd;
		return 0;
	}
	bool asked = nseen == 0;
	for (int k = 0; k < nseen; k++)
		asked |= seen[k].flag->id == F_VERSION;
	if ((out->cmd == PLUGIN_HELP && (have_cmd || asked)) || out->cmd == PLUGIN_VERSION)
		return 0;
	if (!have_cmd) {
		plugin_args_release(out);
		return fail(err, xstrdup("name a command: status, resize, abort, explain, cleanup, members, uninstall or "
					"completion"));
	}
	if (parse_positionals(pos, npos, out, err) < 0 || check_combinations(out, err) < 0) {
		plugin_args_release(out);
		return -1;
	}
	return 0;
}
