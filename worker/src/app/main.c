/* main.c - mwj-worker: parse the command line, set up logging, serve
 * /metrics when asked, run. */
#include <stdio.h>

#include "blas_cpu.h"
#include "cli.h"
#include "err.h"
#include "evaluate.h"
#include "log.h"
#include "metrics_endpoint.h"
#include "preempt.h"
#include "status_report.h"
#include "trainer.h"
#include "worker_metrics.h"

/* The exit status for a failure that a restart can fix (sysexits' EX_TEMPFAIL):
 * the operator restarts the worker. */
#define EXIT_RETRYABLE 75

/* train, counting into metrics, serving them on --metrics-addr, and
 * (the chief, when the operator says where) reporting them. */
static int train(struct cli *c, char *err)
{
	static struct worker_metrics metrics;
	static struct metrics_endpoint endpoint;
	struct status_report *report = NULL;
	int rc;

	worker_metrics_init(&metrics);
	c->train.worker_metrics = &metrics;
	/* Metrics that cannot be served (their port taken by another
	 * process in the pod) cost one warning, never the training. */
	if (c->metrics_addr[0] &&
	    metrics_endpoint_start(&endpoint, &metrics, c->metrics_addr, err) < 0) {
		log_warn(
		    "metrics: cannot serve /metrics on '%s' (%s); training goes on without them",
		    c->metrics_addr, err);
		err[0] = '\0';
	}
	if (c->cluster.rank == 0)
		report = status_report_start(&metrics);
	c->train.status_report = report;
	preempt_install();
	rc = trainer_fit(&c->train, stdout, NULL, err);
	/* The last report says where training ended: done, preempted or
	 * failed, before the process goes. */
	status_report_stop(report, 1);
	metrics_endpoint_stop(&endpoint);
	worker_metrics_release(&metrics);
	return rc;
}

int main(int argc, char **argv)
{
	static struct cli c;
	char err[ERR_LEN] = "";
	int rc;

	rc = cli_parse(&c, argc, argv, stdout, err);
	if (rc == 1)
		return 0;
	if (rc < 0) {
		fprintf(stderr, "mwj-worker: %s\n", err);
		cli_release(&c);
		return 1;
	}
	log_set_level(c.log_level);
	log_set_format(c.log_format);
	blas_cpu_check(argv);
	cli_log_config(&c);
	blas_cpu_log();
	if (c.cmd == CLI_TRAIN) {
		rc = train(&c, err);
	} else {
		rc = evaluate_run(&c.eval, stdout, err);
	}
	cli_release(&c);
	/* Stopped as asked, progress saved: what a shell reports for the
	 * signal, so that Kubernetes and the operator see a preemption. */
	if (rc == TRAIN_PREEMPTED) {
		log_warn("%s", err);
		return 128 + preempt_signal();
	}
	if (rc < 0) {
		log_error("%s", err);
		return rc == TRAIN_RETRYABLE ? EXIT_RETRYABLE : 1;
	}
	return 0;
}
