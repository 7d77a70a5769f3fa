/* test_rendezvous.c - forming the ring: which differences between two
 * workers' hellos are refused and how each is explained, a refused peer
 * over real sockets, and giving up when a peer never comes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "err.h"
#include "net.h"
#include "rendezvous.h"
#include "tf_config.h"

static const struct hello BASE = {RENDEZVOUS_PROTOCOL, 2, 1, 11, 22, 42, 64, 0, 3, 0, 0.001, 0.0};

struct mismatch {
	void (*change)(struct hello *h);
	const char *says;
};

static void other_protocol(struct hello *h)
{
	h->protocol++;
}
static void other_job(struct hello *h)
{
	h->job_hash++;
}
static void other_world(struct hello *h)
{
	h->world = 3;
}
static void other_rank(struct hello *h)
{
	h->rank = 0;
}
static void other_model(struct hello *h)
{
	h->arch_hash++;
}
static void other_seed(struct hello *h)
{
	h->seed = 7;
}
static void other_batch(struct hello *h)
{
	h->batch_size = 32;
}
static void other_lr(struct hello *h)
{
	h->learning_rate = 0.01;
}
static void other_optimizer(struct hello *h)
{
	h->optimizer = 1;
}
static void other_epochs(struct hello *h)
{
	h->epochs = 4;
}
static void other_steps(struct hello *h)
{
	h->steps_per_epoch = 100;
}

static void test_every_difference_between_peers_is_refused_with_its_reason(void **state)
{
	static const struct mismatch table[] = {
	    {other_protocol, "protocol version differs"},
	    {other_job, "another job"},
	    {other_world, "world size differs: peer 3, this worker 2"},
	    {other_rank, "peer is rank 0 where rank 1 was expected"},
	    {other_model, "model differs"},
	    {other_seed, "--seed differs: peer 7, this worker 42"},
	    {other_batch, "--batch-size differs: peer 32, this worker 64"},
	    {other_lr, "optimizer settings differ: peer lr 0.01"},
	    {other_optimizer, "optimizer settings differ"},
	    {other_epochs, "--epochs or --steps-per-epoch differ: peer 4 x 0"},
	    {other_steps, "--epochs or --steps-per-epoch differ: peer 3 x 100"},
	};
	char why[ERR_LEN];

	(void)state;
	assert_int_equal(rendezvous_check(&BASE, &BASE, 1, why), 0);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		struct hello theirs = BASE;
		table[i].change(&theirs);
		why[0] = '\0';
		assert_int_equal(rendezvous_check(&BASE, &theirs, 1, why), -1);
		if (!strstr(why, table[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, why, table[i].says);
	}
}

static void test_the_job_identity_covers_name_and_addresses(void **state)
{
	const char *a = "{\"cluster\":{\"worker\":[\"a:1\",\"b:1\"]},\"task\":{\"type\":\"worker\","
	                "\"index\":0}}";
	const char *b = "{\"cluster\":{\"worker\":[\"a:1\",\"c:1\"]},\"task\":{\"type\":\"worker\","
	                "\"index\":0}}";
	struct tf_config ta = {0}, tb = {0};
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(tf_config_parse(&ta, a, strlen(a), err), 0);
	assert_int_equal(tf_config_parse(&tb, b, strlen(b), err), 0);
	assert_true(rendezvous_job_hash("job", &ta) == rendezvous_job_hash("job", &ta));
	assert_true(rendezvous_job_hash("job", &ta) != rendezvous_job_hash("job2", &ta));
	assert_true(rendezvous_job_hash("job", &ta) != rendezvous_job_hash("job", &tb));
	tf_config_release(&ta);
	tf_config_release(&tb);
}

struct side {
	struct tf_config tc;
	struct hello me;
	int lfd, rc, next, prev;
	long long deadline_ms;
	char err[ERR_LEN];
};

static void *join(void *arg)
{
	struct side *s = arg;

	s->rc = rendezvous_join(s->lfd, &s->tc, &s->me, net_now_ms() + s->deadline_ms, &s->next,
	                        &s->prev, s->err);
	return NULL;
}

/* Two workers of a world of 2 on 127.0.0.1; only the first `start` run. */
static void run_pair(struct side *s, int start)
{
	char json[512], err[ERR_LEN];
	pthread_t t[2];
	int ports[2];

	for (int r = 0; r < 2; r++) {
		s[r].lfd = net_listen(0, err);
		assert_true(s[r].lfd >= 0);
		ports[r] = net_local_port(s[r].lfd);
	}
	for (int r = 0; r < 2; r++) {
		snprintf(json, sizeof(json),
		         "{\"cluster\":{\"worker\":[\"127.0.0.1:%d\",\"127.0.0.1:%d\"]},"
		         "\"task\":{\"type\":\"worker\",\"index\":%d}}",
		         ports[0], ports[1], r);
		assert_int_equal(tf_config_parse(&s[r].tc, json, strlen(json), err), 0);
		s[r].me.rank = (uint32_t)r;
	}
	for (int r = 0; r < start; r++)
		assert_int_equal(pthread_create(&t[r], NULL, join, &s[r]), 0);
	for (int r = 0; r < start; r++)
		pthread_join(t[r], NULL);
	for (int r = 0; r < 2; r++) {
		net_close(s[r].lfd);
		tf_config_release(&s[r].tc);
		if (r < start && s[r].rc == 0) {
			net_close(s[r].next);
			net_close(s[r].prev);
		}
	}
}

static void test_workers_with_the_same_configuration_form_a_ring(void **state)
{
	struct side s[2] = {{.me = BASE, .deadline_ms = 20000}, {.me = BASE, .deadline_ms = 20000}};

	(void)state;
	run_pair(s, 2);
	assert_int_equal(s[0].rc, 0);
	assert_int_equal(s[1].rc, 0);
}

static void test_a_peer_running_another_model_is_refused_by_both(void **state)
{
	struct side s[2] = {{.me = BASE, .deadline_ms = 3000}, {.me = BASE, .deadline_ms = 3000}};

	(void)state;
	s[1].me.arch_hash++;
	run_pair(s, 2);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(s[r].rc, RENDEZVOUS_REFUSED);
		assert_non_null(strstr(s[r].err, "refused"));
		assert_non_null(strstr(s[r].err, "model differs"));
	}
}

static void test_a_peer_that_never_comes_times_out_and_is_named(void **state)
{
	struct side s[2] = {{.me = BASE, .deadline_ms = 500}, {.me = BASE}};

	(void)state;
	run_pair(s, 1);
	assert_int_equal(s[0].rc, -1);
	assert_non_null(strstr(s[0].err, "timed out"));
	assert_non_null(strstr(s[0].err, "rank 1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_difference_between_peers_is_refused_with_its_reason),
	    cmocka_unit_test(test_the_job_identity_covers_name_and_addresses),
	    cmocka_unit_test(test_workers_with_the_same_configuration_form_a_ring),
	    cmocka_unit_test(test_a_peer_running_another_model_is_refused_by_both),
	    cmocka_unit_test(test_a_peer_that_never_comes_times_out_and_is_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
