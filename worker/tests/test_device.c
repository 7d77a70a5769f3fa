/* test_device.c - what --device, --collective and --gpus resolve to, for
 * every combination a user can give, on machines with and without GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "device.h"
#include "err.h"

struct resolve_case {
	const char *device, *collective;
	const char *error; /* expected: a part of the message, or NULL for success */
	int gpus_wanted, workers, gpus;
	/* expected on success: */
	enum device_kind dev;
	enum collective_kind coll;
	int replicas;
};

static const struct resolve_case CASES[] = {
    /* auto: a GPU when one is visible */
    {"auto", "auto", NULL, 0, 1, 0, DEVICE_CPU, COLLECTIVE_RING, 0},
    {"auto", "auto", NULL, 0, 1, 1, DEVICE_CUDA, COLLECTIVE_RING, 1},
    {"auto", "auto", NULL, 0, 2, 1, DEVICE_CUDA, COLLECTIVE_NCCL, 1},
    {"auto", "auto", NULL, 0, 1, 4, DEVICE_CUDA, COLLECTIVE_NCCL, 4},
    {"auto", "auto", NULL, 2, 1, 4, DEVICE_CUDA, COLLECTIVE_NCCL, 2},
    {"auto", "auto", NULL, 0, 3, 0, DEVICE_CPU, COLLECTIVE_RING, 0},
    /* asked for explicitly */
    {"cpu", "auto", NULL, 0, 2, 4, DEVICE_CPU, COLLECTIVE_RING, 0},
    {"cuda", "ring", NULL, 0, 2, 1, DEVICE_CUDA, COLLECTIVE_RING, 1},
    {"cuda", "nccl", NULL, 0, 1, 1, DEVICE_CUDA, COLLECTIVE_NCCL, 1},
    /* what cannot be honoured */
    {"cuda", "auto", "--device cuda: no driver", 0, 1, 0, DEVICE_CPU, COLLECTIVE_RING, 0},
    {"cpu", "nccl", "--collective nccl sums GPU buffers", 0, 2, 1, DEVICE_CPU, COLLECTIVE_RING, 0},
    {"auto", "nccl", "needs --device cuda", 0, 2, 0, DEVICE_CPU, COLLECTIVE_RING, 0},
    {"cpu", "auto", "--gpus 2 needs --device cuda", 2, 1, 4, DEVICE_CPU, COLLECTIVE_RING, 0},
    {"cuda", "auto", "--gpus 3: only 2 GPU(s) visible", 3, 1, 2, DEVICE_CPU, COLLECTIVE_RING, 0},
    {"cuda", "ring", "with 2 GPUs use --collective nccl", 0, 2, 2, DEVICE_CPU, COLLECTIVE_RING, 0},
};

static void test_every_choice_resolves_as_the_table_says(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		const struct resolve_case *c = &CASES[i];
		enum device_kind want_dev, dev = DEVICE_AUTO;
		enum collective_kind want_coll, coll = COLLECTIVE_AUTO;
		int replicas = -1;
		char err[ERR_LEN] = "";
		assert_int_equal(device_parse(c->device, &want_dev), 0);
		assert_int_equal(collective_parse(c->collective, &want_coll), 0);
		int rc = device_resolve(want_dev, want_coll, c->gpus_wanted, c->workers, c->gpus,
		                        "no driver", &dev, &coll, &replicas, err);
		if (c->error) {
			if (rc != -1 || !strstr(err, c->error))
				fail_msg("case %zu: got %d '%s', expected an error saying '%s'", i,
				         rc, err, c->error);
			continue;
		}
		if (rc != 0)
			fail_msg("case %zu: %s", i, err);
		if (dev != c->dev || coll != c->coll || replicas != c->replicas)
			fail_msg("case %zu: got %s, %s, %d replicas; expected %s, %s, %d", i,
			         device_name(dev), collective_name(coll), replicas,
			         device_name(c->dev), collective_name(c->coll), c->replicas);
	}
}

static void test_names_parse_and_print_back(void **state)
{
	enum device_kind d;
	enum collective_kind c;

	(void)state;
	assert_int_equal(device_parse("gpu", &d), -1);
	assert_int_equal(collective_parse("mpi", &c), -1);
	assert_int_equal(device_parse("cuda", &d), 0);
	assert_string_equal(device_name(d), "cuda");
	assert_int_equal(collective_parse("nccl", &c), 0);
	assert_string_equal(collective_name(c), "nccl");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_choice_resolves_as_the_table_says),
	    cmocka_unit_test(test_names_parse_and_print_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
