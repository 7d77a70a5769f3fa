/* test_err.c - error buffers, die() and the allocation wrappers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_err_set_formats_message_and_returns_minus_one(void **state)
{
	char err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(err_set(err, "open '%s': %s", "/x", strerror(ENOENT)), -1);
	assert_string_equal(err, "open '/x': No such file or directory");
}

static void test_err_set_truncates_long_message_and_terminates_it(void **state)
{
	char err[ERR_LEN + 8];
	char big[2 * ERR_LEN];

	(void)state;
	memset(err, 'Z', sizeof(err));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(err_set(err, "%s", big), -1);
	assert_int_equal(strlen(err), ERR_LEN - 1);
	/* Nothing written past ERR_LEN bytes. */
	for (size_t i = ERR_LEN; i < sizeof(err); i++)
		assert_int_equal(err[i], 'Z');
}

static void test_err_set_with_null_buffer_only_returns_minus_one(void **state)
{
	(void)state;
	assert_int_equal(err_set(NULL, "ignored %d", 1), -1);
	assert_int_equal(err_prefix(NULL, "ignored %d", 1), -1);
}

static void test_err_prefix_adds_context_before_message(void **state)
{
	char err[ERR_LEN];

	(void)state;
	err_set(err, "open '/m/ckpt': %s", strerror(ENOENT));
	assert_int_equal(err_prefix(err, "load checkpoint '%s'", "/m"), -1);
	assert_string_equal(err, "load checkpoint '/m': open '/m/ckpt': No such file or directory");
}

static void test_err_prefix_on_empty_message_gives_context_alone(void **state)
{
	char err[ERR_LEN] = "";

	(void)state;
	err_prefix(err, "step %d", 3);
	assert_string_equal(err, "step 3");
}

static void test_err_prefix_may_quote_the_buffer_it_rewrites(void **state)
{
	char err[ERR_LEN] = "inner";

	(void)state;
	err_prefix(err, "outer(%s)", err);
	assert_string_equal(err, "outer(inner): inner");
}

static void test_err_prefix_truncates_to_err_len(void **state)
{
	char err[ERR_LEN];
	char big[ERR_LEN];

	(void)state;
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	err_set(err, "%s", big);
	err_prefix(err, "ctx");
	assert_int_equal(strlen(err), ERR_LEN - 1);
	assert_memory_equal(err, "ctx: bbb", 8);
}

/* Runs fn in a child process with stderr captured; returns the exit status
 * as waitpid reports it and the child's stderr in out. */
static int run_in_child(void (*fn)(void), char *out, size_t out_size)
{
	int fds[2];
	size_t len = 0;
	int status = 0;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		fn();
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], out + len, out_size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void call_die_at(void)
{
	die_at("config.c", 42, "bad config '%s'", "x");
}

static void test_die_at_prints_file_line_and_exits_with_status_one(void **state)
{
	char out[1024];
	int status;

	(void)state;
	status = run_in_child(call_die_at, out, sizeof(out));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_string_equal(out, "fatal: config.c:42: bad config 'x'\n");
}

static void call_die(void)
{
	die("out of %s", "memory");
}

static void test_die_names_the_calling_file(void **state)
{
	char out[1024];
	char prefix[256];
	const char *tail = ": out of memory\n";
	int status;

	(void)state;
	status = run_in_child(call_die, out, sizeof(out));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	snprintf(prefix, sizeof(prefix), "fatal: %s:", __FILE__);
	assert_memory_equal(out, prefix, strlen(prefix));
	assert_true(strlen(out) > strlen(prefix) + strlen(tail));
	assert_string_equal(out + strlen(out) - strlen(tail), tail);
}

static void test_xmalloc_and_xcalloc_return_usable_memory(void **state)
{
	unsigned char *m = xmalloc(100);
	unsigned char *z = xcalloc(25, 4);
	void *empty = xmalloc(0);
	void *empty2 = xcalloc(0, 8);

	(void)state;
	memset(m, 0xab, 100);
	assert_int_equal(m[99], 0xab);
	for (int i = 0; i < 100; i++)
		assert_int_equal(z[i], 0);
	/* Zero-size requests still give a pointer that free() takes. */
	assert_non_null(empty);
	assert_non_null(empty2);
	free(m);
	free(z);
	free(empty);
	free(empty2);
}

static void call_xcalloc_overflow(void)
{
	void *p = xcalloc(SIZE_MAX / 2, 3);

	free(p);
}

static void test_xcalloc_dies_when_count_times_size_overflows(void **state)
{
	char out[1024];
	int status;

	(void)state;
	status = run_in_child(call_xcalloc_overflow, out, sizeof(out));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_non_null(strstr(out, "fatal: "));
	assert_non_null(strstr(out, "overflows"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_err_set_formats_message_and_returns_minus_one),
	    cmocka_unit_test(test_err_set_truncates_long_message_and_terminates_it),
	    cmocka_unit_test(test_err_set_with_null_buffer_only_returns_minus_one),
	    cmocka_unit_test(test_err_prefix_adds_context_before_message),
	    cmocka_unit_test(test_err_prefix_on_empty_message_gives_context_alone),
	    cmocka_unit_test(test_err_prefix_may_quote_the_buffer_it_rewrites),
	    cmocka_unit_test(test_err_prefix_truncates_to_err_len),
	    cmocka_unit_test(test_die_at_prints_file_line_and_exits_with_status_one),
	    cmocka_unit_test(test_die_names_the_calling_file),
	    cmocka_unit_test(test_xmalloc_and_xcalloc_return_usable_memory),
	    cmocka_unit_test(test_xcalloc_dies_when_count_times_size_overflows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
