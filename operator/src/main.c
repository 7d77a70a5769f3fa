/* main.c - mwj-operator: parse the command line, find the API server, run
 * the controller until SIGTERM or SIGINT, then stop cleanly and exit 0. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "controller.h"
#include "err.h"
#include "kube_api.h"
#include "kube_curl.h"
#include "kubeconfig.h"
#include "log.h"

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
	pthread_mutex_lock(&s->lock);
	s->signal = sig;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	kube_api_stop(s->api);
	return NULL;
}

static int run(const struct operator_cli *cli, struct kube_api *api, struct stopper *s, char *err)
{
	static struct controller c;
	char host[256] = "mwj-operator";
	struct controller_config cfg = {
	    .namespace = cli->namespace,
	    .workers = cli->workers,
	    .instance = host,
	    .resync_s = cli->resync_s,
	};

	if (gethostname(host, sizeof(host)) < 0 || !host[0])
		snprintf(host, sizeof(host), "mwj-operator");
	host[sizeof(host) - 1] = '\0';
	if (controller_start(&c, api, &cfg, SYNC_TIMEOUT_MS, err) < 0)
		return s->signal ? 0 : -1;
	pthread_mutex_lock(&s->lock);
	while (!s->signal)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	log_info("%s: stopping: letting reconciles in progress finish", strsignal(s->signal));
	controller_stop(&c);
	log_info("stopped after %lu reconciles (%lu failed): %lu pods created, %lu deleted",
	         c.reconciles, c.reconcile_errors, c.pods_created, c.pods_deleted);
	return 0;
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
	rc = run(&cli, &api, &s, err);
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
