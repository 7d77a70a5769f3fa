/* status_server.c - the reports' HTTPS server over libmicrohttpd, and
 * the renewal of its certificate; see status_server.h. */
#include "status_server.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http_listen.h"
#include "log.h"

/* GnuTLS' defaults, with TLS 1.2 and 1.3 only. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* What one request has sent so far. */
struct upload {
	char *body; /* up to TRAINING_REPORT_MAX bytes */
	size_t len; /* bytes received, kept or not */
	int answered;
};

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct status_reply *r)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(r->body), r->body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result rc;

	if (resp == NULL) {
		free(r->body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (r->retry_after_s > 0) {
		char s[16];

		snprintf(s, sizeof(s), "%d", r->retry_after_s);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, s);
	}
	rc = MHD_queue_response(conn, r->status, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* The body is over the cap: answered before the rest is read. */
static enum MHD_Result too_large(struct status_server *s, struct MHD_Connection *conn,
                                 const char *method, const char *url, struct upload *u)
{
	struct status_reply r;

	u->answered = 1;
	status_endpoint_handle(s->endpoint, method, url,
	                       MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
	                       "", TRAINING_REPORT_MAX + 1, &r);
	return send_reply(conn, &r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
	struct status_server *s = cls;
	struct upload *u = *con_cls;
	struct status_reply r;
	const char *length;

	(void)version;
	if (u == NULL) {
		u = xcalloc(1, sizeof(*u));
		*con_cls = u;
		length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (length != NULL && strtoull(length, NULL, 10) > TRAINING_REPORT_MAX)
			return too_large(s, conn, method, url, u);
		return MHD_YES;
	}
	if (u->answered) {
		*data_size = 0; /* what comes after the answer is dropped */
		return MHD_YES;
	}
	if (*data_size > 0) {
		if (u->len + *data_size > TRAINING_REPORT_MAX) {
			*data_size = 0;
			return too_large(s, conn, method, url, u);
		}
		if (u->body == NULL)
			u->body = xcalloc(TRAINING_REPORT_MAX, 1);
		memcpy(u->body + u->len, data, *data_size);
		u->len += *data_size;
		*data_size = 0;
		return MHD_YES;
	}
	u->answered = 1;
	status_endpoint_handle(s->endpoint, method, url,
	                       MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
	                       u->body != NULL ? u->body : "", u->len, &r);
	return send_reply(conn, &r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
	struct upload *u = *con_cls;

	(void)cls;
	(void)conn;
	(void)why;
	if (u != NULL)
		free(u->body);
	free(u);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	log_debug("status server: %s", line);
}

/* A daemon on the listening socket fd with the certificate cert. */
static struct MHD_Daemon *start_daemon(struct status_server *s, int fd, const struct pem_pair *cert)
{
	unsigned int flags =
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG | MHD_USE_ITC |
	    (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL);

	return MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
	    MHD_OPTION_HTTPS_MEM_KEY, cert->key, MHD_OPTION_HTTPS_MEM_CERT, cert->cert,
	    MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES, MHD_OPTION_THREAD_POOL_SIZE,
	    (unsigned int)STATUS_SERVER_THREADS, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned int)STATUS_SERVER_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned int)STATUS_SERVER_IDLE_S, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
}

int status_server_renew(struct status_server *s, char *err)
{
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *old, *fresh;
	struct pem_pair cert;
	MHD_socket gone;
	int fd;

	if (serving_cert_issue(&cert, s->ca, s->names, s->nnames, SERVING_CERT_DAYS, err) < 0)
		return -1;
	pthread_mutex_lock(&s->lock);
	old = s->daemon;
	info = MHD_get_daemon_info(old, MHD_DAEMON_INFO_LISTEN_FD);
	/* The new daemon listens on a copy of the socket, so that the old
	 * one keeps serving if the new one cannot start. */
	fd = info != NULL ? dup(info->listen_fd) : -1;
	fresh = fd >= 0 ? start_daemon(s, fd, &cert) : NULL;
	if (fresh == NULL) {
		pthread_mutex_unlock(&s->lock);
		if (fd >= 0)
			close(fd);
		pem_pair_release(&cert);
		return err_set(err, "status server: cannot start with a new certificate");
	}
	s->daemon = fresh;
	pthread_mutex_unlock(&s->lock);
	/* The old one stops accepting, finishes what it was answering, and
	 * leaves the socket to the new one. */
	gone = MHD_quiesce_daemon(old);
	MHD_stop_daemon(old);
	if (gone != MHD_INVALID_SOCKET)
		close(gone);
	pthread_mutex_lock(&s->lock);
	pem_pair_release(&s->cert);
	s->cert = cert;
	s->renewals++;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Sleeps until the certificate is due, then renews it; a failed renewal
 * is tried again a minute later. */
static void *renewer_main(void *arg)
{
	struct status_server *s = arg;
	char err[ERR_LEN];

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		long long due = serving_cert_due(&s->cert), now = (long long)time(NULL);
		struct timespec until;

		if (now < due) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += (time_t)(due - now);
			pthread_cond_timedwait(&s->wake, &s->lock, &until);
			continue;
		}
		pthread_mutex_unlock(&s->lock);
		if (status_server_renew(s, err) == 0) {
			log_info("status server: serving certificate renewed, valid until %lld",
			         s->cert.not_after_s);
		} else {
			log_warn("%s; trying again in a minute", err);
			sleep(60);
		}
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int status_server_start(struct status_server *s, struct status_endpoint *endpoint, const char *addr,
                        const struct pem_pair *ca, const char *const *names, int nnames, char *err)
{
	int fd;

	memset(s, 0, sizeof(*s));
	s->endpoint = endpoint;
	s->ca = ca;
	if (nnames < 1 || nnames > SERVING_NAMES_MAX)
		return err_set(err, "status server: 1 to %d names, not %d", SERVING_NAMES_MAX,
		               nnames);
	for (int i = 0; i < nnames; i++)
		s->names[i] = names[i];
	s->nnames = nnames;
	if (serving_cert_issue(&s->cert, ca, names, nnames, SERVING_CERT_DAYS, err) < 0)
		return err_prefix(err, "status server");
	fd = http_listen_socket(addr, &s->port, err);
	if (fd < 0) {
		pem_pair_release(&s->cert);
		return err_prefix(err, "--status-addr");
	}
	s->daemon = start_daemon(s, fd, &s->cert);
	if (s->daemon == NULL) {
		close(fd);
		pem_pair_release(&s->cert);
		return err_set(err,
		               "--status-addr '%s': cannot serve TLS (libmicrohttpd without "
		               "GnuTLS?)",
		               addr);
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL); /* CLOCK_REALTIME: the certificate's end is wall time */
	if (pthread_create(&s->renewer, NULL, renewer_main, s) != 0)
		die("pthread_create: the status server's renewer");
	s->running = 1;
	return 0;
}

void status_server_stop(struct status_server *s)
{
	if (s == NULL || !s->running)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = 1;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->renewer, NULL);
	if (s->daemon != NULL)
		MHD_stop_daemon(s->daemon);
	pem_pair_release(&s->cert);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->wake);
	s->running = 0;
}
