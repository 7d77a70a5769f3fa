/* main.c - mwj-worker: parse the command line, set up logging, run. */
#include <stdio.h>

#include "cli.h"
#include "err.h"
#include "evaluate.h"
#include "log.h"
#include "trainer.h"

int main(int argc, char **argv)
{
	struct cli c;
	char err[ERR_LEN] = "";
	int rc;

	rc = cli_parse(&c, argc, argv, stdout, err);
	if (rc == 1)
		return 0;
	if (rc < 0) {
		fprintf(stderr, "mwj-worker: %s\n", err);
		return 1;
	}
	log_set_level(c.log_level);
	log_set_format(c.log_format);
	cli_log_config(&c);
	if (c.cmd == CLI_TRAIN)
		rc = trainer_fit(&c.train, stdout, NULL, err);
	else
		rc = evaluate_run(&c.eval, stdout, err);
	if (rc < 0) {
		log_error("%s", err);
		return 1;
	}
	return 0;
}
