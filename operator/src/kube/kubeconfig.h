/* kubeconfig.h - where the API server is and how to prove who we are:
 * in-cluster (the pod's service-account token, CA and namespace files and
 * KUBERNETES_SERVICE_HOST/_PORT), else a kubeconfig file, as kubectl and
 * client-go read them.
 *
 * A kubeconfig is read with libyaml: the current context (or the one
 * asked for), its cluster's server, certificate-authority (a file) or
 * certificate-authority-data (base64 PEM), insecure-skip-tls-verify, and
 * its user's token, tokenFile, client-certificate(-data) and
 * client-key(-data). Relative file paths are relative to the kubeconfig's
 * folder, as client-go resolves them. A user with `exec` or
 * `auth-provider` is refused with a message naming it: the operator runs
 * no plugins. TLS is verified unless the kubeconfig says
 * insecure-skip-tls-verify. A bad file is refused naming the file and the
 * field ("'/k/config': users[0].user.client-key-data: invalid base64").
 *
 * A bound service-account token rotates: kube_config_token() reads the
 * token file again whenever it changed, so a long-running operator keeps
 * a valid token.
 */
#ifndef MWJ_KUBECONFIG_H
#define MWJ_KUBECONFIG_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "err.h"

#define KUBE_CONFIG_PATH_LEN  4096
#define KUBE_CONFIG_NAME_LEN  256
#define KUBE_CONFIG_TOKEN_LEN 16384

/* Where the in-cluster files are. Tests point this elsewhere. */
#define KUBE_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_config {
	char server[KUBE_CONFIG_PATH_LEN];    /* "https://10.96.0.1:443" */
	char source[KUBE_CONFIG_PATH_LEN];    /* the kubeconfig file, or "in-cluster" */
	char context[KUBE_CONFIG_NAME_LEN];   /* the context used ("" in-cluster) */
	char namespace[KUBE_CONFIG_NAME_LEN]; /* the context's or the pod's; "" none */
	char ca_file[KUBE_CONFIG_PATH_LEN];   /* "" when ca_pem or none */
	char *ca_pem;                         /* malloc'd PEM from -data, or NULL */
	size_t ca_pem_len;
	int insecure;                         /* insecure-skip-tls-verify */
	char cert_file[KUBE_CONFIG_PATH_LEN]; /* client certificate file, or "" */
	char key_file[KUBE_CONFIG_PATH_LEN];  /* client key file, or "" */
	char *cert_pem, *key_pem;             /* malloc'd PEM from -data, or NULL */
	size_t cert_pem_len, key_pem_len;
	char token_file[KUBE_CONFIG_PATH_LEN]; /* re-read when it changes, or "" */
	char token[KUBE_CONFIG_TOKEN_LEN];     /* a literal token, or the file's last read */
	struct timespec token_mtime;           /* the token file's, when last read */
	off_t token_size;
	pthread_mutex_t lock; /* guards the token; set up by the loaders */
	int locked_init;      /* lock was initialised */
};

/* --- Loading --- */

/* Reads the kubeconfig at path, using context (NULL or "": the current
 * one). Returns 0, or -1 with a message naming the file and the field. */
int kube_config_load_file(struct kube_config *c, const char *path, const char *context, char *err);

/* The in-cluster configuration from the files in sa_dir (normally
 * KUBE_SERVICE_ACCOUNT_DIR) and the environment. Returns 0, or -1 with a
 * message (not in a cluster: the variables or the token are missing). */
int kube_config_in_cluster(struct kube_config *c, const char *sa_dir, char *err);

/* What the operator uses, in client-go's order: the kubeconfig given by
 * flag (kubeconfig_flag, may be NULL), else in-cluster when
 * KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG, else ~/.kube/config;
 * context (may be NULL) picks a kubeconfig context. Returns 0, or -1 with
 * a message that says what was tried. */
int kube_config_resolve(struct kube_config *c, const char *kubeconfig_flag, const char *context,
                        char *err);

/* kube_config_resolve with the in-cluster files in sa_dir instead of
 * KUBE_SERVICE_ACCOUNT_DIR: how tests see the order with in-cluster in it.
 * (Added by kubeconfig.c's author: the fixed directory cannot be pointed
 * elsewhere from a test.) */
int kube_config_resolve_from(struct kube_config *c, const char *kubeconfig_flag,
                             const char *context, const char *sa_dir, char *err);

/* --- Using --- */

/* The bearer token to send now (out, n bytes; "" when the user has none):
 * the literal one, or the token file's content, read again if its
 * modification time or size changed since the last read. Returns 0, or
 * -1 with a message when the file cannot be read (the last token is
 * kept and returned in out). Thread-safe. */
int kube_config_token(struct kube_config *c, char *out, size_t n, char *err);

/* Frees what c holds and wipes the token and key. Accepts NULL. */
void kube_config_release(struct kube_config *c);

#endif
