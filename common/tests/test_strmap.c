/* test_strmap.c - the string-keyed hash map: what is put is found, what is
 * removed is gone, growing and many removals keep every key, and
 * iteration visits each present key once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

static void test_put_get_and_replace(void **state)
{
	struct strmap m;
	int a = 1, b = 2;

	(void)state;
	strmap_init(&m);
	assert_null(strmap_get(&m, "x"));
	assert_false(strmap_has(&m, "x"));
	assert_null(strmap_put(&m, "ns/x", &a));
	assert_ptr_equal(strmap_get(&m, "ns/x"), &a);
	assert_ptr_equal(strmap_put(&m, "ns/x", &b), &a); /* the replaced value comes back */
	assert_ptr_equal(strmap_get(&m, "ns/x"), &b);
	assert_int_equal(m.len, 1);
	assert_null(strmap_put(&m, "ns/empty", NULL));
	assert_true(strmap_has(&m, "ns/empty"));
	strmap_release(&m, NULL);
	strmap_release(NULL, NULL);
}

/* Values the maps below hold: addresses, one per key. */
static long values[5000];

static void test_many_keys_survive_growth_and_removal(void **state)
{
	struct strmap m;
	char key[32];

	(void)state;
	strmap_init(&m);
	for (long i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "ns/pod-%ld", i);
		strmap_put(&m, key, &values[i]);
	}
	for (long i = 0; i < 5000; i += 2) {
		snprintf(key, sizeof(key), "ns/pod-%ld", i);
		assert_ptr_equal(strmap_remove(&m, key), &values[i]);
	}
	assert_int_equal(m.len, 2500);
	/* Removal and insertion many times over: tombstones must not fill it. */
	for (int round = 0; round < 20; round++)
		for (long i = 0; i < 1000; i++) {
			snprintf(key, sizeof(key), "churn-%ld", i);
			strmap_put(&m, key, &values[0]);
			strmap_remove(&m, key);
		}
	for (long i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "ns/pod-%ld", i);
		assert_int_equal(strmap_has(&m, key), i % 2 == 1);
	}
	assert_true(m.cap <= 8192);
	strmap_release(&m, NULL);
}

static void test_iteration_visits_each_key_once(void **state)
{
	struct strmap m;
	struct strmap_slot *s;
	char key[32];
	int seen[100] = {0};
	size_t i = 0;

	(void)state;
	strmap_init(&m);
	for (long k = 0; k < 100; k++) {
		snprintf(key, sizeof(key), "k%ld", k);
		strmap_put(&m, key, &values[k]);
	}
	strmap_remove(&m, "k7");
	while ((s = strmap_next(&m, &i)) != NULL)
		seen[(long *)s->value - values]++;
	for (int k = 0; k < 100; k++)
		assert_int_equal(seen[k], k == 7 ? 0 : 1);
	strmap_release(&m, NULL);
}

static void count_free(void *v)
{
	(*(int *)v)++;
}

static void test_release_hands_every_value_to_the_free_function(void **state)
{
	struct strmap m;
	int freed = 0;

	(void)state;
	strmap_init(&m);
	strmap_put(&m, "a", &freed);
	strmap_put(&m, "b", &freed);
	strmap_put(&m, "c", &freed);
	strmap_remove(&m, "c");
	strmap_release(&m, count_free);
	assert_int_equal(freed, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_get_and_replace),
	    cmocka_unit_test(test_many_keys_survive_growth_and_removal),
	    cmocka_unit_test(test_iteration_visits_each_key_once),
	    cmocka_unit_test(test_release_hands_every_value_to_the_free_function),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
