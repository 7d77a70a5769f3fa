/* cli.h - the mwj-operator command line.
 *
 * Precedence, as mwj-worker's: defaults, then the environment
 * (MWJ_KUBECONFIG, MWJ_CONTEXT, MWJ_NAMESPACE, MWJ_WORKERS,
 * MWJ_RESYNC_SECONDS, MWJ_LOG_FORMAT, MWJ_LOG_LEVEL, MWJ_LEADER_ELECT,
 * MWJ_LEADER_ELECTION_NAMESPACE, MWJ_METRICS_ADDR, MWJ_HEALTH_ADDR,
 * MWJ_STATUS_URL, MWJ_STATUS_ADDR, MWJ_STATUS_AUDIENCE, MWJ_STATUS_CA_DIR), then
 * flags. Where
 * neither names a kubeconfig, kubeconfig.h's order applies: in-cluster,
 * $KUBECONFIG, ~/.kube/config.
 */
#ifndef MWJ_OPERATOR_CLI_H
#define MWJ_OPERATOR_CLI_H

#include <stdio.h>

#include "log.h"
#include "version.h"

#define OPERATOR_VERSION MWJ_RELEASE
#define CLI_PATH_LEN     4096
#define CLI_NAME_LEN     254

struct operator_cli {
	char kubeconfig[CLI_PATH_LEN]; /* "": resolve as kubeconfig.h says */
	char context[CLI_NAME_LEN];    /* "": the kubeconfig's current context */
	char namespace[CLI_NAME_LEN];  /* "": every namespace */
	int workers;                   /* reconcile threads */
	int resync_s;                  /* the informers' periodic resync */
	enum log_level log_level;
	enum log_format log_format;
	int leader_elect;                    /* 1, 0, or -1: on when in-cluster */
	char leader_namespace[CLI_NAME_LEN]; /* "": the pod's own */
	char leader_id[CLI_NAME_LEN];        /* the Lease's name */
	long long lease_ms, renew_ms, retry_ms;
	char metrics_addr[CLI_NAME_LEN]; /* "0": off */
	char health_addr[CLI_NAME_LEN];
	/* The chiefs' training reports (serve/status_server.h): the base URL
	 * the workers dial ("": no reports are taken), where it is served,
	 * the tokens' audience, and the folder of the CA ("": one made at
	 * start). */
	char status_url[CLI_PATH_LEN];
	char status_addr[CLI_NAME_LEN];
	char status_audience[CLI_NAME_LEN];
	char status_ca_dir[CLI_PATH_LEN];
	char status_host[CLI_NAME_LEN]; /* status_url's host, for the certificate */
	int version;                    /* --version was given */
};

/* Parses argv into c. Returns 0 to run; 1 when --help or --version was
 * printed on out (exit 0); -1 with a message in err on bad usage (exit 1). */
int operator_cli_parse(struct operator_cli *c, int argc, char **argv, FILE *out, char *err);

#endif
