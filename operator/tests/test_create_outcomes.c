/* test_create_outcomes.c - what this replica remembers of its creates:
 * per job and index, the last attempt sent and its answer, with the
 * API's words; per job and object, its last create's answer; nothing is
 * known of indices, attempts, objects or jobs it never recorded, and a job
 * forgotten (or every job, when leadership begins) knows nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "create_outcomes.h"

#define N 12

static void assert_unknown(const struct create_outcome *o)
{
	assert_int_equal(o->attempt, -1);
	assert_int_equal(o->result, CREATE_UNKNOWN);
}

static void test_nothing_recorded_is_unknown(void **state)
{
	struct create_outcomes o;
	struct create_outcome got[N];

	(void)state;
	create_outcomes_init(&o);
	create_outcomes_get(&o, "ns/job", N, got, NULL);
	for (int i = 0; i < N; i++)
		assert_unknown(&got[i]);
	create_outcomes_release(&o);
}

static void test_the_last_answer_per_index_is_kept(void **state)
{
	struct create_outcomes o;
	struct create_outcome got[N];

	(void)state;
	create_outcomes_init(&o);
	create_outcomes_record(&o, "ns/job", 1, 0, CREATE_REFUSED, NULL);
	create_outcomes_record(&o, "ns/job", 1, 0, CREATE_DONE, NULL);
	create_outcomes_record(&o, "ns/job", 10, 7, CREATE_REFUSED, NULL); /* past the first room */
	create_outcomes_record(&o, "ns/job", -1, 7, CREATE_DONE, NULL);    /* no such index */
	create_outcomes_record(&o, "ns/other", 0, 3, CREATE_DONE, NULL);
	create_outcomes_get(&o, "ns/job", N, got, NULL);
	assert_unknown(&got[0]);
	assert_int_equal(got[1].attempt, 0);
	assert_int_equal(got[1].result, CREATE_DONE);
	assert_int_equal(got[10].attempt, 7);
	assert_int_equal(got[10].result, CREATE_REFUSED);
	assert_unknown(&got[11]);
	/* Fewer asked for than recorded: only those. */
	create_outcomes_get(&o, "ns/job", 2, got, NULL);
	assert_int_equal(got[1].result, CREATE_DONE);
	create_outcomes_release(&o);
}

static void test_forget_drops_a_job_or_every_job(void **state)
{
	struct create_outcomes o;
	struct create_outcome got[2];

	(void)state;
	create_outcomes_init(&o);
	create_outcomes_record(&o, "ns/a", 0, 1, CREATE_DONE, NULL);
	create_outcomes_record(&o, "ns/b", 0, 2, CREATE_DONE, NULL);
	create_outcomes_forget(&o, "ns/a");
	create_outcomes_get(&o, "ns/a", 1, got, NULL);
	assert_unknown(&got[0]);
	create_outcomes_get(&o, "ns/b", 1, got, NULL);
	assert_int_equal(got[0].attempt, 2);
	create_outcomes_forget(&o, NULL);
	create_outcomes_get(&o, "ns/b", 1, got, NULL);
	assert_unknown(&got[0]);
	/* Still usable after. */
	create_outcomes_record(&o, "ns/b", 1, 4, CREATE_REFUSED, NULL);
	create_outcomes_get(&o, "ns/b", 2, got, NULL);
	assert_unknown(&got[0]);
	assert_int_equal(got[1].attempt, 4);
	create_outcomes_release(&o);
}

static void test_objects_and_messages_are_kept_per_job(void **state)
{
	struct create_outcomes o;
	struct create_outcome got[2], objects[JOB_OBJECTS];
	char long_message[2 * CREATE_MESSAGE_LEN];

	(void)state;
	memset(long_message, 'x', sizeof(long_message) - 1);
	long_message[sizeof(long_message) - 1] = '\0';
	create_outcomes_init(&o);
	create_outcomes_record(&o, "ns/a", 1, 0, CREATE_REFUSED, "exceeded quota: q");
	create_outcomes_record_object(&o, "ns/a", OBJ_SECRET, CREATE_REFUSED, long_message);
	create_outcomes_record_object(&o, "ns/a", OBJ_SERVICE, CREATE_NOT_OWNED, "taken");
	create_outcomes_record_object(&o, "ns/b", OBJ_SERVICE, CREATE_DONE, NULL);
	create_outcomes_get(&o, "ns/a", 2, got, objects);
	assert_unknown(&got[0]);
	assert_string_equal(got[1].message, "exceeded quota: q");
	assert_int_equal(objects[OBJ_SECRET].result, CREATE_REFUSED);
	/* A message too long is cut, never overflows. */
	assert_int_equal(strlen(objects[OBJ_SECRET].message), CREATE_MESSAGE_LEN - 1);
	assert_int_equal(objects[OBJ_SERVICE].result, CREATE_NOT_OWNED);
	assert_string_equal(objects[OBJ_SERVICE].message, "taken");
	assert_int_equal(objects[OBJ_CONFIG_MAP].result, CREATE_UNKNOWN);
	assert_int_equal(objects[OBJ_NETWORK_POLICY].result, CREATE_UNKNOWN);
	create_outcomes_get(&o, "ns/other", 2, got, objects);
	for (int k = 0; k < JOB_OBJECTS; k++)
		assert_unknown(&objects[k]);
	create_outcomes_forget(&o, NULL);
	create_outcomes_get(&o, "ns/b", 2, got, objects);
	assert_unknown(&objects[OBJ_SERVICE]);
	create_outcomes_release(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nothing_recorded_is_unknown),
	    cmocka_unit_test(test_the_last_answer_per_index_is_kept),
	    cmocka_unit_test(test_forget_drops_a_job_or_every_job),
	    cmocka_unit_test(test_objects_and_messages_are_kept_per_job),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
