/* main.c - mwj-worker: parse the command line, set up logging, run. */
#include <stdio.h>

#include "blas_cpu.h"
#include "cli.h"
#include "err.h"
#include "evaluate.h"
#include "log.h"
#include "preempt.h"
#include "trainer.h"

/* The exit status for a failure that a restart can fix (sysexits' EX_TEMPFAIL):
 * the operator restarts the worker. */
#define EXIT_RETRYABLE 75

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
		preempt_install();
		rc = trainer_fit(&c.train, stdout, NULL, err);
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
