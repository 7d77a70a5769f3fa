/* fuzz_operator_cli.c - a libFuzzer target for operator_cli_parse
 * (operator/src/cli.h): the mwj-operator command line, from the
 * Deployment that runs it.
 *
 * Input: the arguments after "mwj-operator", separated by NUL bytes (at
 * most FUZZ_ARGS_MAX of them). Help and the version go to /dev/null. The
 * MWJ_* variables the parser reads are cleared once, so that only the
 * input decides.
 * Checked beyond "no crash": a refusal says why; help and version exit 0;
 * accepted values lie in the ranges the flags allow, and names fit their
 * buffers. Each input is parsed twice, and must give the same answer both
 * times (fuzz_cli_parse_twice): nothing of the command line before may
 * leak into the next one.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../src/cmd/cli.h" /* not worker/src/app/cli.h, which -I finds first */
#include "controller.h"
#include "err.h"
#include "fuzz/harness.h"

static int parse(void *out, int argc, char **argv, FILE *help, char *err)
{
	return operator_cli_parse(out, argc, argv, help, err);
}

/* It reads MWJ_* variables only, which the harness clears. */
static const struct fuzz_cli CLI = {"mwj-operator", NULL, 0, parse};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERR_LEN];
	struct operator_cli c, again;
	int rc = fuzz_cli_parse_twice(&CLI, data, size, &c, &again, err);

	if (rc < 0) {
		FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL);
		return 0;
	}
	if (rc == 1)
		return 0; /* help or the version, printed */
	FUZZ_CHECK(rc == 0 && !c.version);
	/* operator_cli_parse zeroes the struct first, padding and all: its
	 * bytes are what the flags made of it. */
	FUZZ_CHECK(memcmp((const unsigned char *)&c, (const unsigned char *)&again, sizeof(c)) ==
	           0);
	FUZZ_CHECK(memchr(c.kubeconfig, '\0', sizeof(c.kubeconfig)) != NULL);
	FUZZ_CHECK(memchr(c.context, '\0', sizeof(c.context)) != NULL);
	FUZZ_CHECK(memchr(c.namespace, '\0', sizeof(c.namespace)) != NULL);
	FUZZ_CHECK(c.workers >= 1 && c.workers <= CONTROLLER_WORKERS_MAX);
	FUZZ_CHECK(c.resync_s >= 0 && c.resync_s <= 86400);
	return 0;
}
