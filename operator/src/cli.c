/* cli.c - the mwj-operator's flags and environment; see cli.h. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "err.h"
#include "flags.h"
#include "parse.h"

enum flag_id {
	F_KUBECONFIG = 256,
	F_CONTEXT,
	F_NAMESPACE,
	F_WORKERS,
	F_RESYNC,
	F_LOG_FORMAT,
	F_LOG_LEVEL,
	F_VERSION,
	F_HELP,
};

static const struct flag FLAGS[] = {
    {"kubeconfig", F_KUBECONFIG, "PATH",
     "the kubeconfig to use (default: $MWJ_KUBECONFIG, else in-cluster, $KUBECONFIG, "
     "~/.kube/config)"},
    {"context", F_CONTEXT, "NAME",
     "the kubeconfig context (default: $MWJ_CONTEXT or its current-context)"},
    {"namespace", F_NAMESPACE, "NAME",
     "watch one namespace only (default: $MWJ_NAMESPACE, or every namespace)"},
    {"workers", F_WORKERS, "N", "jobs reconciled at once (default: $MWJ_WORKERS or 4)"},
    {"resync-seconds", F_RESYNC, "N",
     "look at every job again this often, whatever happened (default: $MWJ_RESYNC_SECONDS "
     "or 300)"},
    {"log-format", F_LOG_FORMAT, "FMT", "text or json (default: $MWJ_LOG_FORMAT or text)"},
    {"log-level", F_LOG_LEVEL, "LEVEL",
     "debug, info, warn or error (default: $MWJ_LOG_LEVEL or info)"},
    {"version", F_VERSION, NULL, "print the version and exit"},
    {"help", F_HELP, NULL, "print this help and exit"},
};

static int set_str(char *dst, size_t n, const char *src, char *err)
{
	if (!src[0])
		return err_set(err, "'' is empty");
	if (strlen(src) >= n)
		return err_set(err, "longer than %zu characters", n - 1);
	strcpy(dst, src);
	return 0;
}

static int apply(void *ctx, int id, const char *v, char *err)
{
	struct operator_cli *c = ctx;

	switch (id) {
	case F_KUBECONFIG:
		return set_str(c->kubeconfig, sizeof(c->kubeconfig), v, err);
	case F_CONTEXT:
		return set_str(c->context, sizeof(c->context), v, err);
	case F_NAMESPACE:
		return set_str(c->namespace, sizeof(c->namespace), v, err);
	case F_WORKERS:
		return parse_int(v, 1, CONTROLLER_WORKERS_MAX, &c->workers, err);
	case F_RESYNC:
		return parse_int(v, 0, 86400, &c->resync_s, err);
	case F_LOG_FORMAT:
		if (log_parse_format(v, &c->log_format) < 0)
			return err_set(err, "'%s' is not text or json", v);
		return 0;
	case F_LOG_LEVEL:
		if (log_parse_level(v, &c->log_level) < 0)
			return err_set(err, "'%s' is not debug, info, warn or error", v);
		return 0;
	case F_VERSION:
		c->version = 1;
		return 0;
	}
	return 0;
}

/* Each MWJ_* variable goes through the same code as its flag. */
static int apply_env(struct operator_cli *c, char *err)
{
	static const struct {
		const char *var;
		int id;
	} vars[] = {
	    {"MWJ_KUBECONFIG", F_KUBECONFIG}, {"MWJ_CONTEXT", F_CONTEXT},
	    {"MWJ_NAMESPACE", F_NAMESPACE},   {"MWJ_WORKERS", F_WORKERS},
	    {"MWJ_RESYNC_SECONDS", F_RESYNC}, {"MWJ_LOG_FORMAT", F_LOG_FORMAT},
	    {"MWJ_LOG_LEVEL", F_LOG_LEVEL},
	};

	for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) {
		const char *v = getenv(vars[k].var);
		if (v && v[0] && apply(c, vars[k].id, v, err) < 0)
			return err_prefix(err, "%s", vars[k].var);
	}
	return 0;
}

int operator_cli_parse(struct operator_cli *c, int argc, char **argv, FILE *out, char *err)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->workers = 4;
	c->resync_s = 300;
	c->log_level = LOG_INFO;
	c->log_format = LOG_TEXT;
	if (apply_env(c, err) < 0)
		return -1;
	rc = flags_parse(FLAGS, FLAGS_COUNT(FLAGS), F_HELP, argc, argv, apply, c, err);
	if (rc == 1)
		flags_print_help(out, "mwj-operator [flags]", FLAGS, FLAGS_COUNT(FLAGS));
	if (rc == 0 && c->version) {
		fprintf(out, "mwj-operator %s\n", OPERATOR_VERSION);
		return 1;
	}
	return rc;
}
