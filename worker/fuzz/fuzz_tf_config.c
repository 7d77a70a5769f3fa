/* fuzz_tf_config.c - a libFuzzer target for tf_config_parse (common/
 * tf_config.h): the TF_CONFIG JSON a worker reads from its environment, and
 * the cluster and task checks that follow the parse; and for the same text
 * as the MWJ_TF_CONFIG_FILE a large job's workers read instead, whose task
 * may be left out for MWJ_WORKER_INDEX (here 0).
 *
 * Input: the text of TF_CONFIG, and of the file.
 * Checked beyond "no crash": a refusal says why, with the "TF_CONFIG: "
 * prefix, and leaves the struct zeroed; an accepted config keeps its
 * invariants (1..TF_CONFIG_MAX_WORKERS tasks, the rank the task type and
 * index give, addresses well formed and all different), and a cluster of
 * workers only round-trips through tf_config_format, the operator's
 * writer, to the same ranks and addresses. The file is accepted whenever
 * TF_CONFIG is, with the same result; it refuses with its own prefix.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "fuzz/harness.h"
#include "tf_config.h"

static void check_address(const struct tf_address *a)
{
	size_t len = strnlen(a->host, sizeof(a->host));

	FUZZ_CHECK(len > 0 && len < sizeof(a->host));
	FUZZ_CHECK(a->port >= 1 && a->port <= 65535);
}

static void check_accepted(const struct tf_config *c)
{
	int workers = c->world - c->has_chief_task;

	FUZZ_CHECK(c->world >= 1 && c->world <= TF_CONFIG_MAX_WORKERS);
	FUZZ_CHECK(c->has_chief_task == 0 || c->has_chief_task == 1);
	FUZZ_CHECK(c->rank >= 0 && c->rank < c->world);
	if (strcmp(c->task_type, "chief") == 0) {
		FUZZ_CHECK(c->has_chief_task && c->task_index == 0 && c->rank == 0);
	} else {
		FUZZ_CHECK(strcmp(c->task_type, "worker") == 0);
		FUZZ_CHECK(c->task_index >= 0 && c->task_index < workers);
		FUZZ_CHECK(c->rank == c->has_chief_task + c->task_index);
	}
	for (int i = 0; i < c->world; i++) {
		check_address(&c->addrs[i]);
		for (int j = 0; j < i && c->world <= 64; j++)
			FUZZ_CHECK(c->addrs[i].port != c->addrs[j].port ||
			           strcasecmp(c->addrs[i].host, c->addrs[j].host) != 0);
	}
}

/* Writes the workers back as the operator would and parses the result. */
static void check_round_trip(const struct tf_config *c)
{
	char(*text)[TF_CONFIG_HOST_LEN + 16] = xcalloc((size_t)c->world, sizeof(*text));
	const char **list = xcalloc((size_t)c->world, sizeof(*list));
	struct tf_config back = {0};
	char err[ERR_LEN];
	char *json;

	for (int i = 0; i < c->world; i++) {
		tf_address_format(&c->addrs[i], text[i], sizeof(text[i]));
		list[i] = text[i];
	}
	json = tf_config_format(list, c->world, c->task_index, err);
	FUZZ_CHECK(json != NULL);
	FUZZ_CHECK(tf_config_parse(&back, json, strlen(json), err) == 0);
	FUZZ_CHECK(back.world == c->world && back.rank == c->rank && !back.has_chief_task);
	for (int i = 0; i < c->world; i++) {
		FUZZ_CHECK(strcmp(back.addrs[i].host, c->addrs[i].host) == 0);
		FUZZ_CHECK(back.addrs[i].port == c->addrs[i].port);
	}
	tf_config_release(&back);
	free(json);
	free(list);
	free(text);
}

/* The same text as MWJ_TF_CONFIG_FILE, with MWJ_WORKER_INDEX 0; parsed is
 * what tf_config_parse made of it, or NULL if it refused it. */
static void check_file(const uint8_t *data, size_t size, const struct tf_config *parsed)
{
	static const char prefix[] = "MWJ_TF_CONFIG_FILE '";
	struct tf_config c;
	char err[ERR_LEN] = "";

	unsetenv("TF_CONFIG");
	setenv("MWJ_TF_CONFIG_FILE", fuzz_file("tf-config.json", data, size), 1);
	setenv("MWJ_WORKER_INDEX", "0", 1);
	if (tf_config_from_env(&c, err) < 0) {
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		FUZZ_CHECK(strncmp(err, prefix, sizeof(prefix) - 1) == 0);
		FUZZ_CHECK(c.world == 0 && c.addrs == NULL);
		FUZZ_CHECK(parsed == NULL);
		return;
	}
	check_accepted(&c);
	if (parsed) {
		FUZZ_CHECK(c.world == parsed->world && c.rank == parsed->rank);
		FUZZ_CHECK(strcmp(c.task_type, parsed->task_type) == 0);
		for (int i = 0; i < c.world; i++)
			FUZZ_CHECK(strcmp(c.addrs[i].host, parsed->addrs[i].host) == 0 &&
			           c.addrs[i].port == parsed->addrs[i].port);
	}
	tf_config_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tf_config c;
	char err[ERR_LEN] = "";

	if (tf_config_parse(&c, (const char *)data, size, err) < 0) {
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		FUZZ_CHECK(strncmp(err, "TF_CONFIG: ", 11) == 0 && err[11] != '\0');
		FUZZ_CHECK(c.world == 0 && c.addrs == NULL);
		check_file(data, size, NULL);
		return 0;
	}
	check_accepted(&c);
	if (!c.has_chief_task)
		check_round_trip(&c);
	check_file(data, size, &c);
	tf_config_release(&c);
	return 0;
}
