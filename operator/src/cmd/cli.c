/* cli.c - the mwj-operator's flags and environment; see cli.h. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "err.h"
#include "flags.h"
#include "http_endpoints.h"
#include "leader.h"
#include "parse.h"

/* Durations beyond a day are surely a slip (and must fit an int of ms). */
#define DURATION_MAX_MS (24LL * 3600 * 1000)

enum flag_id {
	F_KUBECONFIG = 256,
	F_CONTEXT,
	F_NAMESPACE,
	F_WORKERS,
	F_RESYNC,
	F_LOG_FORMAT,
	F_LOG_LEVEL,
	F_LEADER_ELECT,
	F_LEADER_NAMESPACE,
	F_LEADER_ID,
	F_LEASE,
	F_RENEW,
	F_RETRY,
	F_METRICS_ADDR,
	F_HEALTH_ADDR,
	F_STATUS_URL,
	F_STATUS_ADDR,
	F_STATUS_AUDIENCE,
	F_STATUS_CA_DIR,
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
    {"leader-elect", F_LEADER_ELECT, "[=BOOL]",
     "one active replica at a time, through a Lease (default: $MWJ_LEADER_ELECT, else on "
     "in-cluster and off outside)"},
    {"leader-election-namespace", F_LEADER_NAMESPACE, "NAME",
     "the Lease's namespace (default: $MWJ_LEADER_ELECTION_NAMESPACE, else the pod's own)"},
    {"leader-election-id", F_LEADER_ID, "NAME", "the Lease's name (default: mwj-operator)"},
    {"leader-elect-lease-duration", F_LEASE, "DURATION",
     "how long a standby waits on a Lease not renewed before it takes it (default: 15s)"},
    {"leader-elect-renew-deadline", F_RENEW, "DURATION",
     "how long the leader keeps trying to renew before it stops acting (default: 10s)"},
    {"leader-elect-retry-period", F_RETRY, "DURATION",
     "how often candidates try and the leader renews (default: 2s)"},
    {"metrics-addr", F_METRICS_ADDR, "ADDR",
     "where /metrics is served, host:port or :port, 0 for off (default: $MWJ_METRICS_ADDR or "
     ":8080)"},
    {"health-addr", F_HEALTH_ADDR, "ADDR",
     "where /healthz and /readyz are served, 0 for off (default: $MWJ_HEALTH_ADDR or :8081)"},
    {"status-url", F_STATUS_URL, "URL",
     "the https:// address (scheme, host, port) at which the chiefs of jobs report their "
     "training, as they dial it: the status Service; empty for no reports (default: "
     "$MWJ_STATUS_URL or empty)"},
    {"status-addr", F_STATUS_ADDR, "ADDR",
     "where the reports are served over HTTPS (default: $MWJ_STATUS_ADDR or :8443)"},
    {"status-audience", F_STATUS_AUDIENCE, "NAME",
     "the audience of the tokens the chiefs report with (default: $MWJ_STATUS_AUDIENCE or "
     "mwj-operator)"},
    {"status-ca-dir", F_STATUS_CA_DIR, "DIR",
     "a folder holding the CA the workers trust, tls.crt and tls.key (or ca.crt and ca.key); "
     "empty: a CA made at start (default: $MWJ_STATUS_CA_DIR or empty)"},
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

static int set_addr(char *dst, size_t n, const char *src, char *err)
{
	if (http_endpoints_check_addr(src, err) < 0)
		return -1;
	return set_str(dst, n, src, err);
}

/* An https:// URL of a host and an optional port, nothing after: the
 * workers add the report's path. Its host goes into host. */
static int set_status_url(struct operator_cli *c, const char *v, char *err)
{
	static const char scheme[] = "https://";
	const char *h = v + sizeof(scheme) - 1, *end;
	size_t n;

	if (strncmp(v, scheme, sizeof(scheme) - 1) != 0)
		return err_set(
		    err, "'%s' is not an https:// URL (reports are never sent in the clear)", v);
	end = h[0] == '[' ? strchr(h, ']') : h + strcspn(h, ":/");
	if (end == NULL || end == h)
		return err_set(err, "'%s' names no host", v);
	if (h[0] == '[')
		h++;
	n = (size_t)(end - h);
	if (n >= sizeof(c->status_host))
		return err_set(err, "'%s': the host is too long", v);
	end += *end == ']';
	if (*end == ':') {
		int port;
		char digits[8];
		size_t k = strspn(end + 1, "0123456789");

		if (k == 0 || k >= sizeof(digits) || end[1 + k] != '\0')
			return err_set(err, "'%s': the port must be a number, with nothing after",
			               v);
		memcpy(digits, end + 1, k);
		digits[k] = '\0';
		if (parse_int(digits, 1, 65535, &port, err) < 0)
			return err_prefix(err, "'%s'", v);
	} else if (*end != '\0') {
		return err_set(err, "'%s': the URL must end after the host and port", v);
	}
	if (set_str(c->status_url, sizeof(c->status_url), v, err) < 0)
		return -1;
	memcpy(c->status_host, h, n);
	c->status_host[n] = '\0';
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
	case F_LEADER_ELECT:
		if (v == NULL) {
			c->leader_elect = 1;
			return 0;
		}
		return parse_bool(v, &c->leader_elect, err);
	case F_LEADER_NAMESPACE:
		return set_str(c->leader_namespace, sizeof(c->leader_namespace), v, err);
	case F_LEADER_ID:
		return set_str(c->leader_id, sizeof(c->leader_id), v, err);
	case F_LEASE:
		return parse_duration_ms(v, 1000, DURATION_MAX_MS, &c->lease_ms, err);
	case F_RENEW:
		return parse_duration_ms(v, 1, DURATION_MAX_MS, &c->renew_ms, err);
	case F_RETRY:
		return parse_duration_ms(v, 1, DURATION_MAX_MS, &c->retry_ms, err);
	case F_METRICS_ADDR:
		return set_addr(c->metrics_addr, sizeof(c->metrics_addr), v, err);
	case F_HEALTH_ADDR:
		return set_addr(c->health_addr, sizeof(c->health_addr), v, err);
	case F_STATUS_URL:
		return set_status_url(c, v, err);
	case F_STATUS_ADDR:
		return set_addr(c->status_addr, sizeof(c->status_addr), v, err);
	case F_STATUS_AUDIENCE:
		return set_str(c->status_audience, sizeof(c->status_audience), v, err);
	case F_STATUS_CA_DIR:
		return set_str(c->status_ca_dir, sizeof(c->status_ca_dir), v, err);
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
	    {"MWJ_KUBECONFIG", F_KUBECONFIG},
	    {"MWJ_CONTEXT", F_CONTEXT},
	    {"MWJ_NAMESPACE", F_NAMESPACE},
	    {"MWJ_WORKERS", F_WORKERS},
	    {"MWJ_RESYNC_SECONDS", F_RESYNC},
	    {"MWJ_LOG_FORMAT", F_LOG_FORMAT},
	    {"MWJ_LOG_LEVEL", F_LOG_LEVEL},
	    {"MWJ_LEADER_ELECT", F_LEADER_ELECT},
	    {"MWJ_LEADER_ELECTION_NAMESPACE", F_LEADER_NAMESPACE},
	    {"MWJ_METRICS_ADDR", F_METRICS_ADDR},
	    {"MWJ_HEALTH_ADDR", F_HEALTH_ADDR},
	    {"MWJ_STATUS_URL", F_STATUS_URL},
	    {"MWJ_STATUS_ADDR", F_STATUS_ADDR},
	    {"MWJ_STATUS_AUDIENCE", F_STATUS_AUDIENCE},
	    {"MWJ_STATUS_CA_DIR", F_STATUS_CA_DIR},
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
	c->leader_elect = -1;
	snprintf(c->leader_id, sizeof(c->leader_id), "mwj-operator");
	c->lease_ms = LEADER_LEASE_MS;
	c->renew_ms = LEADER_RENEW_MS;
	c->retry_ms = LEADER_RETRY_MS;
	snprintf(c->metrics_addr, sizeof(c->metrics_addr), ":8080");
	snprintf(c->health_addr, sizeof(c->health_addr), ":8081");
	snprintf(c->status_addr, sizeof(c->status_addr), ":8443");
	snprintf(c->status_audience, sizeof(c->status_audience), "mwj-operator");
	if (apply_env(c, err) < 0)
		return -1;
	rc = flags_parse(FLAGS, FLAGS_COUNT(FLAGS), F_HELP, argc, argv, apply, c, err);
	if (rc == 0 && !c->version) {
		/* The durations' rules, checked here so that a bad set exits 1
		 * before anything starts. */
		struct leader_config lc = {.namespace = "ns",
		                           .name = c->leader_id,
		                           .identity = "x",
		                           .lease_ms = (int)c->lease_ms,
		                           .renew_ms = (int)c->renew_ms,
		                           .retry_ms = (int)c->retry_ms};
		if (leader_config_check(&lc, err) < 0)
			return -1;
	}
	if (rc == 1)
		flags_print_help(out, "mwj-operator [flags]", FLAGS, FLAGS_COUNT(FLAGS));
	if (rc == 0 && c->version) {
		fprintf(out, "mwj-operator %s\n", OPERATOR_VERSION);
		return 1;
	}
	return rc;
}
