/* kubeconfig.c - where the API server is and who we are (see kubeconfig.h):
 * the pod's service account, or a kubeconfig's context, cluster and user,
 * decided as client-go decides wherever a file could say two things. */
#include "kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "kubeconfig_file.h"
#include "parse.h"

#define IN_CLUSTER "in-cluster"
#define MAX_FILES  32        /* in $KUBECONFIG */
#define CA_MAX     (1 << 20) /* the in-cluster CA bundle */
#define NS_MAX     4096      /* the in-cluster namespace file */

/* --- Small checks --- */

/* A namespace name: an RFC 1123 label, as client-go checks a context's. */
static int is_dns_label(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	}
	return 1;
}

/* Whether s has a byte that would end or split an HTTP header line. */
static int has_control(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 1;
	}
	return 0;
}

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* Trims white space at both ends of buf[0..*len), as Go's strings.TrimSpace
 * (client-go trims token and namespace files), and returns the start. */
static char *trim(char *buf, size_t *len)
{
	while (*len > 0 && is_space(buf[*len - 1]))
		(*len)--;
	while (*len > 0 && is_space(buf[0])) {
		buf++;
		(*len)--;
	}
	return buf;
}

/* Opens and closes path, as client-go's validation does with every file a
 * kubeconfig names: the mistake shows now, not at the first request.
 * O_NONBLOCK: a FIFO in its place must not hang the start. */
static int check_readable(const char *path, char *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return err_set(err, "open '%s': %s", path, strerror(errno));
	close(fd);
	return 0;
}

/* --- The token file --- */

/* Reads up to n bytes, fewer only at the end of the file. */
static ssize_t read_up_to(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);

		if (k == 0)
			break;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

/* Reads c->token_file into c->token and notes its modification time and
 * size. On failure c->token is unchanged. Called with c->lock held, or
 * before c is shared. */
static int read_token_file(struct kube_config *c, char *err)
{
	char buf[KUBE_CONFIG_TOKEN_LEN + 1]; /* one more than fits: a long file shows */
	struct stat st;
	char *tok;
	size_t len;
	ssize_t n;
	int fd, rc = -1;

	fd = open(c->token_file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return err_set(err, "token file '%s': %s", c->token_file, strerror(errno));
	if (fstat(fd, &st) < 0) {
		err_set(err, "token file '%s': stat: %s", c->token_file, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set(err, "token file '%s': not a regular file", c->token_file);
		goto out;
	}
	n = read_up_to(fd, buf, sizeof(buf));
	if (n < 0) {
		err_set(err, "token file '%s': read: %s", c->token_file, strerror(errno));
		goto out;
	}
	len = (size_t)n;
	tok = trim(buf, &len);
	if ((size_t)n == sizeof(buf) || len >= sizeof(c->token)) {
		err_set(err, "token file '%s': more than %zu bytes", c->token_file,
		        sizeof(c->token) - 1);
		goto out;
	}
	if (len == 0) {
		err_set(err, "token file '%s': empty", c->token_file);
		goto out;
	}
	if (has_control(tok, len)) {
		err_set(err, "token file '%s': holds control characters", c->token_file);
		goto out;
	}
	OPENSSL_cleanse(c->token, sizeof(c->token));
	memcpy(c->token, tok, len);
	c->token_mtime = st.st_mtim;
	c->token_size = st.st_size;
	rc = 0;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return rc;
}

int kube_config_token(struct kube_config *c, char *out, size_t n, char *err)
{
	struct stat st;
	size_t len;
	int rc = 0;

	if (n > 0)
		out[0] = '\0';
	if (c == NULL || !c->locked_init)
		return err_set(err, "token: the configuration is not loaded");
	pthread_mutex_lock(&c->lock);
	if (c->token_file[0] != '\0') {
		/* stat follows the ..data link that the kubelet swaps to
		 * rotate a projected token, so a new token shows here. */
		if (stat(c->token_file, &st) < 0)
			rc = err_set(err, "token file '%s': %s", c->token_file, strerror(errno));
		else if (st.st_size != c->token_size ||
		         st.st_mtim.tv_sec != c->token_mtime.tv_sec ||
		         st.st_mtim.tv_nsec != c->token_mtime.tv_nsec)
			rc = read_token_file(c, err);
	}
	len = strlen(c->token);
	if (len < n)
		memcpy(out, c->token, len + 1);
	else
		rc = err_set(err, "token: %zu bytes do not fit in %zu", len, n);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* --- A kubeconfig's cluster, user and context --- */

/* The server, with client-go's reading of one without a scheme: url.Parse
 * fails or finds no host, and with no TLS settled yet it becomes http://
 * (rest.DefaultServerURL). Sets *tls for an https server. */
static int load_server(struct kube_config *c, const struct kubeconfig_entry *e, const char *name,
                       int *tls, char *err)
{
	char server[KUBE_CONFIG_PATH_LEN];
	const char *sep;
	int rc = kubeconfig_entry_string(e, "server", server, sizeof(server), err);

	if (rc < 0)
		return -1;
	if (rc == 0)
		return kubeconfig_entry_fail(e, "server", err,
		                             "missing: cluster '%s' has no server", name);
	for (const char *p = server; *p != '\0'; p++) {
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return kubeconfig_entry_fail(e, "server", err, "'%s' is not a URL", server);
	}
	sep = strstr(server, "://");
	if (sep == NULL || sep == server) {
		if (strlen(server) + strlen("http://") >= sizeof(c->server))
			return kubeconfig_entry_fail(e, "server", err, "too long");
		snprintf(c->server, sizeof(c->server), "http://%s", server);
		*tls = 0;
		return 0;
	}
	*tls = sep - server == 5 && strncasecmp(server, "https", 5) == 0;
	if (!*tls && !(sep - server == 4 && strncasecmp(server, "http", 4) == 0))
		return kubeconfig_entry_fail(e, "server", err, "'%s': not an http or https URL",
		                             server);
	memcpy(c->server, server, sizeof(c->server));
	return 0;
}

static int load_cluster(struct kube_config *c, const struct kubeconfig_entry *e, const char *name,
                        int *tls, char *err)
{
	static const char *const UNSUPPORTED[] = {"tls-server-name", "proxy-url"};
	char why[ERR_LEN];

	for (size_t i = 0; i < sizeof(UNSUPPORTED) / sizeof(UNSUPPORTED[0]); i++) {
		if (kubeconfig_entry_has(e, UNSUPPORTED[i]))
			return kubeconfig_entry_fail(e, UNSUPPORTED[i], err, "not supported");
	}
	if (load_server(c, e, name, tls, err) < 0 ||
	    kubeconfig_entry_bool(e, "insecure-skip-tls-verify", &c->insecure, err) < 0 ||
	    kubeconfig_entry_path(e, "certificate-authority", c->ca_file, sizeof(c->ca_file), err) <
	        0 ||
	    kubeconfig_entry_data(e, "certificate-authority-data", &c->ca_pem, &c->ca_pem_len,
	                          err) < 0)
		return -1;
	if (c->ca_file[0] != '\0' && c->ca_pem != NULL)
		return kubeconfig_entry_fail(e, "certificate-authority", err,
		                             "cannot be given with certificate-authority-data");
	/* client-go's transport refuses this pair rather than guess. */
	if (c->insecure && (c->ca_file[0] != '\0' || c->ca_pem != NULL))
		return kubeconfig_entry_fail(e, "insecure-skip-tls-verify", err,
		                             "cannot be true with a certificate authority given");
	if (c->ca_file[0] != '\0' && check_readable(c->ca_file, why) < 0)
		return kubeconfig_entry_fail(e, "certificate-authority", err, "%s", why);
	return 0;
}

/* A user's plugins and identities that the operator cannot honour. */
static const struct {
	const char *key, *why;
} REFUSED_USER[] = {
    {"exec", "an exec credential plugin, and the operator runs no plugins"},
    {"auth-provider", "an auth-provider plugin, and the operator runs no plugins"},
    {"username", "basic authentication, which the operator does not support"},
    {"password", "basic authentication, which the operator does not support"},
    {"as", "impersonation, which the operator does not support"},
    {"as-uid", "impersonation, which the operator does not support"},
    {"as-groups", "impersonation, which the operator does not support"},
    {"as-user-extra", "impersonation, which the operator does not support"},
};

/* The client certificate and key, either as files or as -data. A key
 * without a certificate is unused, as in client-go. */
static int load_client_cert(struct kube_config *c, const struct kubeconfig_entry *e, char *err)
{
	char why[ERR_LEN];

	if (kubeconfig_entry_path(e, "client-certificate", c->cert_file, sizeof(c->cert_file),
	                          err) < 0 ||
	    kubeconfig_entry_data(e, "client-certificate-data", &c->cert_pem, &c->cert_pem_len,
	                          err) < 0)
		return -1;
	if (c->cert_file[0] == '\0' && c->cert_pem == NULL)
		return 0;
	if (c->cert_file[0] != '\0' && c->cert_pem != NULL)
		return kubeconfig_entry_fail(e, "client-certificate", err,
		                             "cannot be given with client-certificate-data");
	if (kubeconfig_entry_path(e, "client-key", c->key_file, sizeof(c->key_file), err) < 0 ||
	    kubeconfig_entry_data(e, "client-key-data", &c->key_pem, &c->key_pem_len, err) < 0)
		return -1;
	if (c->key_file[0] != '\0' && c->key_pem != NULL)
		return kubeconfig_entry_fail(e, "client-key", err,
		                             "cannot be given with client-key-data");
	if (c->key_file[0] == '\0' && c->key_pem == NULL)
		return kubeconfig_entry_fail(e, "client-key", err,
		                             "missing: a client certificate needs client-key or "
		                             "client-key-data");
	if (c->cert_file[0] != '\0' && check_readable(c->cert_file, why) < 0)
		return kubeconfig_entry_fail(e, "client-certificate", err, "%s", why);
	if (c->key_file[0] != '\0' && check_readable(c->key_file, why) < 0)
		return kubeconfig_entry_fail(e, "client-key", err, "%s", why);
	return 0;
}

static int load_user(struct kube_config *c, const struct kubeconfig_entry *e, const char *name,
                     int tls, char *err)
{
	char why[ERR_LEN];
	int have_token;

	for (size_t i = 0; i < sizeof(REFUSED_USER) / sizeof(REFUSED_USER[0]); i++) {
		if (kubeconfig_entry_has(e, REFUSED_USER[i].key))
			return kubeconfig_entry_fail(e, REFUSED_USER[i].key, err,
			                             "user '%s' needs %s", name,
			                             REFUSED_USER[i].why);
	}
	/* client-go sends no credentials to a server it does not reach over
	 * TLS (rest.IsConfigTransportTLS); nor do we. */
	if (!tls)
		return 0;
	have_token = kubeconfig_entry_string(e, "token", c->token, sizeof(c->token), err);
	if (have_token < 0)
		return -1;
	if (has_control(c->token, strlen(c->token)))
		return kubeconfig_entry_fail(e, "token", err, "holds control characters");
	if (kubeconfig_entry_path(e, "tokenFile", c->token_file, sizeof(c->token_file), err) < 0)
		return -1;
	/* With both, client-go starts with the literal token and prefers the
	 * file's whenever it can read it; kube_config_token() does the same. */
	if (c->token_file[0] != '\0' && read_token_file(c, why) < 0 && !have_token)
		return kubeconfig_entry_fail(e, "tokenFile", err, "%s", why);
	return load_client_cert(c, e, err);
}

/* The first entry named name in files, in order: with several files the
 * first one to define a name wins, as client-go merges them. */
static int find(struct kubeconfig_file *files, int n, const char *list, const char *name,
                struct kubeconfig_entry *e)
{
	for (int i = 0; i < n; i++) {
		if (kubeconfig_file_find(&files[i], list, name, e))
			return 1;
	}
	return 0;
}

/* Picks the context (context, or the first current-context) and loads it,
 * its cluster and its user from the open files into c. label names the
 * files for messages that belong to none of them. */
static int load_context(struct kube_config *c, struct kubeconfig_file *files, int n,
                        const char *label, const char *context, char *err)
{
	struct kubeconfig_entry ctx, cluster, user;
	char cluster_name[KUBE_CONFIG_PATH_LEN], user_name[KUBE_CONFIG_PATH_LEN];
	const char *named_in = "contexts", *where = label;
	int tls = 0;

	if (context != NULL && context[0] != '\0') {
		if (strlen(context) >= sizeof(c->context))
			return err_set(err, "'%s': context name longer than %zu bytes", label,
			               sizeof(c->context) - 1);
		memcpy(c->context, context, strlen(context) + 1);
	} else {
		for (int i = 0; i < n && c->context[0] == '\0'; i++) {
			if (kubeconfig_file_current_context(&files[i], c->context,
			                                    sizeof(c->context), err) < 0)
				return -1;
			where = files[i].path;
		}
		if (c->context[0] == '\0')
			return err_set(
			    err, "'%s': current-context: not set, and no context was asked for",
			    label);
		named_in = "current-context";
	}
	if (!find(files, n, "contexts", c->context, &ctx))
		return err_set(err, "'%s': %s: no context named '%s'", where, named_in, c->context);
	if (kubeconfig_entry_string(&ctx, "cluster", cluster_name, sizeof(cluster_name), err) < 0 ||
	    kubeconfig_entry_string(&ctx, "user", user_name, sizeof(user_name), err) < 0 ||
	    kubeconfig_entry_string(&ctx, "namespace", c->namespace, sizeof(c->namespace), err) < 0)
		return -1;
	if (cluster_name[0] == '\0')
		return kubeconfig_entry_fail(&ctx, "cluster", err, "missing in context '%s'",
		                             c->context);
	if (user_name[0] == '\0')
		return kubeconfig_entry_fail(&ctx, "user", err, "missing in context '%s'",
		                             c->context);
	if (c->namespace[0] != '\0' && !is_dns_label(c->namespace))
		return kubeconfig_entry_fail(&ctx, "namespace", err, "'%s' is not a namespace name",
		                             c->namespace);
	if (!find(files, n, "clusters", cluster_name, &cluster))
		return kubeconfig_entry_fail(&ctx, "cluster", err, "no cluster named '%s'",
		                             cluster_name);
	if (!find(files, n, "users", user_name, &user))
		return kubeconfig_entry_fail(&ctx, "user", err, "no user named '%s'", user_name);
	if (load_cluster(c, &cluster, cluster_name, &tls, err) < 0 ||
	    load_user(c, &user, user_name, tls, err) < 0)
		return -1;
	memcpy(c->source, ctx.f->path, sizeof(c->source));
	return 0;
}

/* Loads from the n files at paths, all of which exist; label names them
 * together ("'a:b'") in messages. */
static int load_files(struct kube_config *c, const char *const *paths, int n, const char *label,
                      const char *context, char *err)
{
	struct kubeconfig_file *files = xcalloc((size_t)n, sizeof(*files));
	int opened = 0, rc = -1;

	memset(c, 0, sizeof(*c));
	for (; opened < n; opened++) {
		if (kubeconfig_file_open(&files[opened], paths[opened], err) < 0)
			goto out;
	}
	if (load_context(c, files, n, label, context, err) < 0)
		goto out;
	if (pthread_mutex_init(&c->lock, NULL) != 0)
		die("pthread_mutex_init failed");
	c->locked_init = 1;
	rc = 0;
out:
	for (int i = 0; i < opened; i++)
		kubeconfig_file_close(&files[i]);
	free(files);
	if (rc < 0)
		kube_config_release(c);
	return rc;
}

int kube_config_load_file(struct kube_config *c, const char *path, const char *context, char *err)
{
	const char *paths[1] = {path};

	if (path == NULL || path[0] == '\0') {
		memset(c, 0, sizeof(*c));
		return err_set(err, "kubeconfig: empty path");
	}
	return load_files(c, paths, 1, path, context, err);
}

/* --- In a pod --- */

/* Whether the bundle at path holds a certificate: client-go logs and goes
 * on with the system's roots when the in-cluster CA cannot be loaded. */
static int has_certificate(const char *path)
{
	unsigned char *pem = NULL;
	size_t len = 0;
	char ignored[ERR_LEN];
	int found;

	if (file_read_all(path, CA_MAX, &pem, &len, ignored) < 0)
		return 0;
	found = memmem(pem, len, "-----BEGIN CERTIFICATE-----", 27) != NULL;
	free(pem);
	return found;
}

/* POD_NAMESPACE (the downward API), else the service account's namespace
 * file, else "" - clientcmd's inClusterClientConfig.Namespace order. */
static int in_cluster_namespace(struct kube_config *c, const char *sa_dir, char *err)
{
	const char *env = getenv("POD_NAMESPACE");
	char path[KUBE_CONFIG_PATH_LEN], ns[64];
	unsigned char *text = NULL;
	char ignored[ERR_LEN];
	size_t len = 0;
	char *start;

	if (env != NULL && env[0] != '\0') {
		if (!is_dns_label(env))
			return err_set(err, "POD_NAMESPACE '%.64s': not a namespace name", env);
		memcpy(c->namespace, env, strlen(env) + 1);
		return 0;
	}
	if (snprintf(path, sizeof(path), "%s/namespace", sa_dir) >= (int)sizeof(path))
		return err_set(err, "in-cluster: '%s': path too long", sa_dir);
	/* client-go ignores a namespace file it cannot read. */
	if (file_read_all(path, NS_MAX, &text, &len, ignored) < 0)
		return 0;
	start = trim((char *)text, &len);
	snprintf(ns, sizeof(ns), "%.*s", (int)(len < sizeof(ns) ? len : sizeof(ns) - 1), start);
	free(text);
	if (len > 0 && (len >= sizeof(ns) || !is_dns_label(ns)))
		return err_set(err, "namespace file '%s': '%s' is not a namespace name", path, ns);
	memcpy(c->namespace, ns, strlen(ns) + 1);
	return 0;
}

/* KUBERNETES_SERVICE_HOST, which the kubelet sets to the API Service's IP:
 * letters, digits and the punctuation of names and IPv4 and IPv6
 * addresses, nothing that could change what the URL means. */
static int is_host(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 253)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == ':'))
			return 0;
	}
	return 1;
}

int kube_config_in_cluster(struct kube_config *c, const char *sa_dir, char *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char why[ERR_LEN];
	int port_num = 0;

	memset(c, 0, sizeof(*c));
	/* rest.InClusterConfig needs both, and says "not in a cluster". */
	if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
		return err_set(err, "not in a cluster: KUBERNETES_SERVICE_HOST and "
		                    "KUBERNETES_SERVICE_PORT must both be set");
	if (!is_host(host))
		return err_set(err, "KUBERNETES_SERVICE_HOST '%.64s': not a host name or address",
		               host);
	if (parse_int(port, 1, 65535, &port_num, why) < 0)
		return err_set(err, "KUBERNETES_SERVICE_PORT: %s", why);
	/* net.JoinHostPort: an IPv6 address goes in brackets. */
	snprintf(c->server, sizeof(c->server),
	         strchr(host, ':') ? "https://[%s]:%d" : "https://%s:%d", host, port_num);
	if (snprintf(c->token_file, sizeof(c->token_file), "%s/token", sa_dir) >=
	        (int)sizeof(c->token_file) ||
	    snprintf(c->ca_file, sizeof(c->ca_file), "%s/ca.crt", sa_dir) >=
	        (int)sizeof(c->ca_file))
		return err_set(err, "in-cluster: '%s': path too long", sa_dir);
	if (read_token_file(c, err) < 0) {
		err_prefix(err, "in-cluster");
		goto fail;
	}
	if (!has_certificate(c->ca_file))
		c->ca_file[0] = '\0';
	if (in_cluster_namespace(c, sa_dir, err) < 0)
		goto fail;
	memcpy(c->source, IN_CLUSTER, sizeof(IN_CLUSTER));
	if (pthread_mutex_init(&c->lock, NULL) != 0)
		die("pthread_mutex_init failed");
	c->locked_init = 1;
	return 0;
fail:
	kube_config_release(c);
	return -1;
}

/* --- Which one --- */

/* Appends to a buffer of ERR_LEN bytes, cutting what does not fit. */
static void append(char *buf, const char *what)
{
	size_t len = strnlen(buf, ERR_LEN - 1);

	snprintf(buf + len, ERR_LEN - len, "%s%s", len > 0 ? "; " : "", what);
}

/* The files named in list ($KUBECONFIG, colon-separated, cut in place):
 * the existing ones in order, each once, missing ones skipped, as
 * client-go's loading rules do. Returns how many went to paths. */
static int kubeconfig_env_files(char *list, const char **paths)
{
	int n = 0;
	struct stat st;

	for (char *save = NULL, *p = strtok_r(list, ":", &save); p != NULL && n < MAX_FILES;
	     p = strtok_r(NULL, ":", &save)) {
		int seen = 0;

		for (int i = 0; i < n; i++)
			seen |= strcmp(paths[i], p) == 0;
		if (!seen && !(stat(p, &st) < 0 && errno == ENOENT))
			paths[n++] = p;
	}
	return n;
}

int kube_config_resolve_from(struct kube_config *c, const char *kubeconfig_flag,
                             const char *context, const char *sa_dir, char *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *env = getenv("KUBECONFIG");
	const char *home = getenv("HOME");
	char tried[ERR_LEN] = "", why[ERR_LEN], path[KUBE_CONFIG_PATH_LEN];
	struct stat st;

	memset(c, 0, sizeof(*c));
	if (kubeconfig_flag != NULL && kubeconfig_flag[0] != '\0')
		return kube_config_load_file(c, kubeconfig_flag, context, err);
	/* clientcmd.BuildConfigFromFlags: in-cluster first, and when that
	 * fails the kubeconfig files after all. */
	if (host != NULL && host[0] != '\0') {
		if (kube_config_in_cluster(c, sa_dir, why) == 0)
			return 0;
		append(tried, why);
	} else {
		append(tried, "not in a cluster (KUBERNETES_SERVICE_HOST is not set)");
	}
	if (env != NULL && env[0] != '\0') {
		char *list = strdup(env);
		const char *paths[MAX_FILES];
		int n, rc;

		if (list == NULL)
			die("out of memory");
		n = kubeconfig_env_files(list, paths);
		if (n > 0)
			rc = load_files(c, paths, n, env, context, err);
		else
			rc = err_set(err, "no kubeconfig: %s; $KUBECONFIG: none of '%.200s' exists",
			             tried, env);
		free(list);
		return rc;
	}
	if (home == NULL || home[0] == '\0')
		return err_set(err, "no kubeconfig: %s; $KUBECONFIG and $HOME are not set", tried);
	if (snprintf(path, sizeof(path), "%s/.kube/config", home) >= (int)sizeof(path))
		return err_set(err, "no kubeconfig: %s; $HOME is too long", tried);
	if (stat(path, &st) < 0 && errno == ENOENT)
		return err_set(err,
		               "no kubeconfig: %s; $KUBECONFIG is not set; '%s' does not exist",
		               tried, path);
	return kube_config_load_file(c, path, context, err);
}

int kube_config_resolve(struct kube_config *c, const char *kubeconfig_flag, const char *context,
                        char *err)
{
	return kube_config_resolve_from(c, kubeconfig_flag, context, KUBE_SERVICE_ACCOUNT_DIR, err);
}

void kube_config_release(struct kube_config *c)
{
	if (c == NULL)
		return;
	if (c->key_pem != NULL)
		OPENSSL_cleanse(c->key_pem, c->key_pem_len);
	free(c->key_pem);
	free(c->cert_pem);
	free(c->ca_pem);
	if (c->locked_init)
		pthread_mutex_destroy(&c->lock);
	OPENSSL_cleanse(c->token, sizeof(c->token));
	memset(c, 0, sizeof(*c));
}
