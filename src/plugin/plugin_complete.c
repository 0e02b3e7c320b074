#include <stdbool.h>
#include <string.h>

#include "plugin/plugin_complete.h"

static const char *const commands[] = {"status", "resize", "abort", "explain", "cleanup", "members", "uninstall",
				       "completion", NULL};
static const char *const flag_words[] = {
	"--kubeconfig", "--context", "--cluster", "--user", "--server", "--token", "--certificate-authority",
	"--client-certificate", "--client-key", "--insecure-skip-tls-verify", "--tls-server-name", "--as", "--as-group",
	"--as-uid", "--request-timeout", "--namespace", "--all-namespaces", "--output", "--strategy", "--class",
	"--no-headers", "--wait", "--no-wait", "--timeout", "--retry", "--dry-run", "--force", "--operator-namespace",
	"--help", NULL};
static const char *const shells[] = {"bash", "zsh", NULL};
static const char *const outputs[] = {"json", "yaml", "wide", "name", "jsonpath=", NULL};
static const char *const strategies[] = {"auto", "expand", "copy", NULL};
static const char *const member_ops[] = {"remove", "replace", NULL};

/* Flags followed by a value (a separate word unless written --flag=value). */
static const char *const value_flags[] = {
	"--kubeconfig", "--context", "--cluster", "--user", "--server", "-s", "--token", "--certificate-authority",
	"--client-certificate", "--client-key", "--tls-server-name", "--as", "--as-group", "--as-uid",
	"--request-timeout", "--namespace", "-n", "--output", "-o", "--strategy", "--class", "--timeout",
	"--operator-namespace", NULL};

static bool takes_value(const char *w)
{
	for (const char *const *f = value_flags; *f; f++)
		if (!strcmp(*f, w))
			return true;
	return false;
}

const char *const *complete_words(enum complete_kind kind)
{
	switch (kind) {
	case COMPLETE_COMMANDS: return commands;
	case COMPLETE_FLAGS: return flag_words;
	case COMPLETE_SHELLS: return shells;
	case COMPLETE_OUTPUTS: return outputs;
	case COMPLETE_STRATEGIES: return strategies;
	case COMPLETE_STC_OR_MEMBER_OPS: return member_ops;
	default: return NULL;
	}
}

enum complete_kind complete_what(int n, char *const *words, struct complete_where *where)
{
	memset(where, 0, sizeof(*where));
	const char *cmd = NULL, *first = NULL, *second = NULL;
	int npos = 0;
	for (int i = 0; i + 1 < n; i++) {
		const char *w = words[i];
		if (takes_value(w)) {
			const char *v = i + 2 < n ? words[i + 1] : NULL;
			if (!strcmp(w, "--kubeconfig"))
				where->kubeconfig = v;
			else if (!strcmp(w, "--context"))
				where->context = v;
			else if (!strcmp(w, "--namespace") || !strcmp(w, "-n"))
				where->namespace = v;
			if (i + 2 == n) /* the word being typed is this flag's value */
				return !strcmp(w, "-o") || !strcmp(w, "--output") ? COMPLETE_OUTPUTS
				       : !strcmp(w, "--strategy")		   ? COMPLETE_STRATEGIES
										   : COMPLETE_NOTHING;
			i++;
		} else if (!strncmp(w, "--namespace=", 12)) {
			where->namespace = w + 12;
		} else if (!strncmp(w, "--context=", 10)) {
			where->context = w + 10;
		} else if (!strncmp(w, "--kubeconfig=", 13)) {
			where->kubeconfig = w + 13;
		} else if (w[0] == '-') {
			/* a flag without a value */
		} else if (!cmd) {
			cmd = w;
		} else {
			if (npos == 0)
				first = w;
			else if (npos == 1)
				second = w;
			npos++;
		}
	}
	const char *cur = n > 0 ? words[n - 1] : "";
	if (cur[0] == '-')
		return COMPLETE_FLAGS;
	if (!cmd)
		return COMPLETE_COMMANDS;
	if (!strcmp(cmd, "members") && first && (!strcmp(first, "remove") || !strcmp(first, "replace"))) {
		where->object = second;
		return npos == 1 ? COMPLETE_STC : COMPLETE_MEMBERS;
	}
	if (npos > 0)
		return COMPLETE_NOTHING; /* resize's TEMPLATE=SIZE, or nothing more */
	if (!strcmp(cmd, "completion"))
		return COMPLETE_SHELLS;
	if (!strcmp(cmd, "status"))
		return COMPLETE_STS_STC;
	if (!strcmp(cmd, "members"))
		return COMPLETE_STC_OR_MEMBER_OPS;
	if (!strcmp(cmd, "resize") || !strcmp(cmd, "abort") || !strcmp(cmd, "explain") || !strcmp(cmd, "cleanup"))
		return COMPLETE_STS;
	return COMPLETE_NOTHING;
}
