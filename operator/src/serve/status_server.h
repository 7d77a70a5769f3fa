/* status_server.h - the HTTPS server of the chiefs' training reports
 * (--status-addr, default :8443; status_endpoint.h says what it answers).
 *
 * libmicrohttpd with TLS (GnuTLS), a small pool of threads: a request
 * may wait on a TokenReview, and the others must not wait behind it.
 * Plain HTTP is never served. The serving certificate is issued by the
 * CA (serving_cert.h) for the names given, and made anew two thirds
 * through its life: a new daemon takes over the listening socket from
 * the old one (MHD_quiesce_daemon), which finishes what it was answering,
 * so no connection is refused during the change.
 *
 * Bodies are read up to TRAINING_REPORT_MAX bytes; a longer one is
 * answered 413 at once, without reading the rest. Connections idle for
 * STATUS_SERVER_IDLE_S are closed.
 */
#ifndef MWJ_STATUS_SERVER_H
#define MWJ_STATUS_SERVER_H

#include <pthread.h>

#include "serving_cert.h"
#include "status_endpoint.h"

#define STATUS_SERVER_THREADS     4
#define STATUS_SERVER_IDLE_S      10
#define STATUS_SERVER_CONNECTIONS 256

struct MHD_Daemon;

struct status_server {
	struct status_endpoint *endpoint;
	const struct pem_pair *ca;
	const char *names[SERVING_NAMES_MAX];
	int nnames;
	int port; /* bound; 0 before */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct MHD_Daemon *daemon;
	struct pem_pair cert; /* the serving certificate in use */
	pthread_t renewer;
	int running, stopping;
	unsigned long renewals;
};

/* Serves endpoint on addr ("host:port", ":port", "[v6]:port") with a
 * certificate that ca signs for names (1 to SERVING_NAMES_MAX; ca and
 * names must outlive s). Returns 0, or -1 with a message (the address,
 * the certificate). */
int status_server_start(struct status_server *s, struct status_endpoint *endpoint, const char *addr,
                        const struct pem_pair *ca, const char *const *names, int nnames, char *err);

/* Makes a new certificate now and serves with it (what the renewer does
 * when one is due; exposed for tests). Returns 0, or -1 with a message:
 * the old certificate then stays. */
int status_server_renew(struct status_server *s, char *err);

/* Stops serving and waits for the threads. Accepts a zeroed s. */
void status_server_stop(struct status_server *s);

#endif
