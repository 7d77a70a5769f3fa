/* main.c - mwj-operator: parse the command line, find the API server, run
 * the controller until SIGTERM or SIGINT, then stop cleanly and exit 0. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "controller.h"
#include "err.h"
#include "http_endpoints.h"
#include "kube_api.h"
#include "kube_curl.h"
#include "kubeconfig.h"
#include "leader.h"
#include "log.h"
#include "serving_cert.h"
#include "status_server.h"

/* How long the caches may take to fill at start before the operator gives
 * up (its Deployment then restarts it, with back-off). */
#define SYNC_TIMEOUT_MS 120000

struct stopper {
	sigset_t set;
	struct kube_api *api;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int signal; /* the signal that came, 0 before */
};

/* SIGTERM and SIGINT are caught by a handler that writes the signal's
 * number into a pipe, not taken with sigwait(): a thread that does not
 * block them (a sanitizer's, a library's started before main) would
 * otherwise receive them with the default action, and die at once. */
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	ssize_t n = write(signal_pipe[1], &b, 1);

	(void)n;
}

/* Waits for SIGTERM or SIGINT, then ends every request in progress so the
 * controller's threads return soon. The only thread of ours that takes
 * the signals. */
static void *wait_signal(void *arg)
{
	struct stopper *s = arg;
	unsigned char b = 0;
	int sig;

	pthread_sigmask(SIG_UNBLOCK, &s->set, NULL);
	while (read(signal_pipe[0], &b, 1) < 0 && errno == EINTR)
		;
	sig = b ? b : SIGTERM;
	/* The client stops before the main thread is told: it resumes the
	 * client later to release the Lease, and a stop arriving after that
	 * would cut the release off. */
	kube_api_stop(s->api);
	pthread_mutex_lock(&s->lock);
	s->signal = sig;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Waits for SIGTERM or SIGINT. */
static void wait_for_signal(struct stopper *s)
{
	pthread_mutex_lock(&s->lock);
	while (!s->signal)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

/* Raises the soft limit on open descriptors to the hard one, as Go's
 * runtime does for every Go controller: the soft limit is often 1,024,
 * far below what the hard limit allows, and the HTTP endpoints size their
 * connection limit from it (common/http_listen.c). */
static void raise_nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("setrlimit RLIMIT_NOFILE: %s", strerror(errno));
}

static void on_started_leading(void *ctx)
{
	controller_lead(ctx);
}

/* Fills lc from the command line and the kubeconfig: whether to elect a
 * leader at all (on by default in-cluster), and the Lease's namespace
 * (by default the pod's, or the context's). Returns 1 when on, 0 when
 * off, -1 with a message. */
static int leader_setup(struct leader_config *lc, const struct operator_cli *cli,
                        const struct kube_config *kc, const char *identity, struct controller *c,
                        char *err)
{
	int on = cli->leader_elect >= 0 ? cli->leader_elect : strcmp(kc->source, "in-cluster") == 0;

	if (!on)
		return 0;
	*lc = (struct leader_config){
	    .namespace = cli->leader_namespace[0] ? cli->leader_namespace : kc->namespace,
	    .name = cli->leader_id,
	    .identity = identity,
	    .lease_ms = (int)cli->lease_ms,
	    .renew_ms = (int)cli->renew_ms,
	    .retry_ms = (int)cli->retry_ms,
	    .on_started = on_started_leading,
	    .ctx = c,
	};
	if (leader_config_check(lc, err) < 0)
		return -1;
	return 1;
}

/* The chiefs' reports, when --status-url asks for them: the CA (the
 * chart's, or one made now), and what every job's chief is given.
 * Returns 1 when on, 0 when off, -1 with a message. */
static int reporting_setup(struct job_reporting *r, struct pem_pair *ca,
                           const struct operator_cli *cli, char *err)
{
	if (!cli->status_url[0])
		return 0;
	if (strcmp(cli->status_addr, "0") == 0)
		return err_set(err, "--status-url is set but --status-addr is 0: the reports would "
		                    "reach nothing");
	if (cli->status_ca_dir[0]) {
		if (serving_cert_load_ca(ca, cli->status_ca_dir, err) < 0)
			return err_prefix(err, "--status-ca-dir");
	} else {
		if (serving_cert_make_ca(ca, "mwj-operator status CA", SERVING_CA_DAYS, err) < 0)
			return -1;
		log_warn("status: no --status-ca-dir, so a CA made now, which goes with this "
		         "process: the chiefs of jobs started before a restart cannot verify the "
		         "next one and stop reporting (they train on); the chart keeps a CA in a "
		         "Secret");
	}
	snprintf(r->url_base, sizeof(r->url_base), "%s", cli->status_url);
	snprintf(r->audience, sizeof(r->audience), "%s", cli->status_audience);
	r->ca_pem = ca->cert;
	return 1;
}

static int run(const struct operator_cli *cli, const struct kube_config *kc, struct kube_api *api,
               struct stopper *s, char *err)
{
	static struct job_reporting reporting;
	static struct pem_pair ca;
	static struct status_endpoint endpoint;
	static struct status_server server;
	const char *names[1] = {cli->status_host};
	int reports;
	static struct controller c;
	static struct leader l;
	static struct http_endpoints h;
	static char identity[LEADER_IDENTITY_LEN];
	char host[256] = "mwj-operator";
	struct leader_config lc;
	struct controller_config cfg = {
	    .namespace = cli->namespace,
	    .workers = cli->workers,
	    .instance = host,
	    .resync_s = cli->resync_s,
	};
	struct operator_metrics m = {
	    .controller = &c,
	    .api = api,
	    .version = OPERATOR_VERSION,
	    .start_time_s = (double)time(NULL),
	};
	int electing, rc = 0;

	if (gethostname(host, sizeof(host)) < 0 || !host[0])
		snprintf(host, sizeof(host), "mwj-operator");
	host[sizeof(host) - 1] = '\0';
	leader_identity(identity);
	electing = leader_setup(&lc, cli, kc, identity, &c, err);
	if (electing < 0)
		return -1;
	if (electing) {
		cfg.active = leader_active;
		cfg.active_ctx = &l;
		leader_init(&l, api, &lc);
		/* Before any thread shares the client: no write leaves this
		 * replica unless it leads. */
		api->write_guard = leader_active;
		api->write_guard_ctx = &l;
		m.leader = &l;
	}
	reports = reporting_setup(&reporting, &ca, cli, err);
	if (reports < 0)
		return -1;
	if (reports)
		cfg.reporting = &reporting;
	if (controller_init(&c, api, &cfg, err) < 0) {
		pem_pair_release(&ca);
		return -1;
	}
	if (reports) {
		/* Before the metrics are served, which read its counters. */
		status_endpoint_init(&endpoint, &c, api, cli->status_audience);
		if (electing) {
			endpoint.active = leader_active;
			endpoint.active_ctx = &l;
		}
		m.status = &endpoint;
	}
	if (http_endpoints_start(&h, &m, cli->metrics_addr, cli->health_addr, err) < 0) {
		controller_stop(&c);
		return -1;
	}
	/* The caches fill first: a leader must never act on empty ones. */
	if (controller_start(&c, SYNC_TIMEOUT_MS, err) < 0)
		rc = s->signal ? 0 : -1;
	if (rc == 0 && reports) {
		if (status_server_start(&server, &endpoint, cli->status_addr, &ca, names, 1, err) <
		    0)
			rc = -1;
		else
			log_info("status: chiefs report to %s (served on %s, port %d, audience %s)",
			         cli->status_url, cli->status_addr, server.port,
			         cli->status_audience);
	}
	if (rc == 0 && electing && leader_start(&l, err) < 0)
		rc = -1;
	if (rc == 0 && !s->signal && !electing && strcmp(kc->source, "in-cluster") == 0)
		log_warn(
		    "leader election off in a cluster (--leader-elect=false): nothing keeps "
		    "another replica from acting beside this one (a rollout, a scale-up, a pod "
		    "on an unreachable node replaced while it still runs); leave it on");
	else if (rc == 0 && !s->signal && !electing)
		log_info("leader election off: this replica reconciles (run one replica only)");
	if (rc == 0)
		wait_for_signal(s);
	if (s->signal)
		log_info("%s: stopping", strsignal(s->signal));
	if (electing)
		leader_stop(&l); /* no write from here on */
	status_server_stop(&server);
	kube_api_stop(api);
	controller_stop(&c);
	status_endpoint_release(&endpoint);
	pem_pair_release(&ca);
	if (electing && l.leading) {
		char rerr[ERR_LEN];

		/* Everything else has stopped: the Lease goes now, so that a
		 * standby takes over at its next try. */
		kube_api_resume(api);
		if (leader_release(&l, rerr) < 0)
			log_warn("%s: a standby takes over when the Lease expires", rerr);
	}
	http_endpoints_stop(&h);
	if (electing)
		leader_destroy(&l);
	log_info("stopped after %lu reconciles (%lu failed): %lu pods created, %lu deleted",
	         c.reconciles, c.reconcile_errors, c.counts.pods_created, c.counts.pods_deleted);
	return rc;
}

int main(int argc, char **argv)
{
	static struct operator_cli cli;
	static struct kube_config kc;
	static struct kube_api api;
	static struct stopper s = {.lock = PTHREAD_MUTEX_INITIALIZER,
	                           .cond = PTHREAD_COND_INITIALIZER};
	char err[ERR_LEN] = "";
	pthread_t signal_thread;
	int rc;

	rc = operator_cli_parse(&cli, argc, argv, stdout, err);
	if (rc != 0) {
		if (rc < 0)
			fprintf(stderr, "mwj-operator: %s\n", err);
		return rc < 0 ? 1 : 0;
	}
	log_set_level(cli.log_level);
	log_set_format(cli.log_format);
	/* glibc gives each new thread a malloc arena of its own, up to eight
	 * per core, each keeping its own free memory. The operator's threads
	 * mostly wait, so two arenas cost no speed and hold less: about 1 MB
	 * less RSS with 100 jobs cached. */
	mallopt(M_ARENA_MAX, 2);
	raise_nofile_limit();
	/* Every thread started from here on leaves these signals to one. */
	sigemptyset(&s.set);
	sigaddset(&s.set, SIGTERM);
	sigaddset(&s.set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &s.set, NULL);
	if (pipe2(signal_pipe, O_CLOEXEC) < 0)
		die("pipe2: %s", strerror(errno));
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("curl_global_init failed");
		return 1;
	}
	if (kube_config_resolve(&kc, cli.kubeconfig[0] ? cli.kubeconfig : NULL,
	                        cli.context[0] ? cli.context : NULL, err) < 0 ||
	    kube_curl_init(&api, &kc, "mwj-operator/" OPERATOR_VERSION, err) < 0) {
		log_error("%s", err);
		kube_config_release(&kc);
		curl_global_cleanup();
		return 1;
	}
	log_info("mwj-operator %s: API server %s (from %s%s%s), %d workers", OPERATOR_VERSION,
	         kc.server, kc.source, kc.context[0] ? ", context " : "", kc.context, cli.workers);
	s.api = &api;
	rc = pthread_create(&signal_thread, NULL, wait_signal, &s);
	if (rc != 0)
		die("pthread_create: %s", strerror(rc));
	rc = run(&cli, &kc, &api, &s, err);
	if (rc < 0)
		log_error("%s", err);
	if (!s.signal)
		pthread_cancel(signal_thread);
	pthread_join(signal_thread, NULL);
	kube_api_release(&api);
	kube_config_release(&kc);
	curl_global_cleanup();
	return rc < 0 ? 1 : 0;
}
