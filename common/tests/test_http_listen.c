/* test_http_listen.c - the listener both binaries serve /metrics with:
 * addresses checked as the flags take them, port 0 bound to a free port
 * that is then answered on over a real socket (GET and HEAD; 405
 * otherwise), a port in use or an unknown host refused naming the
 * address, a listening socket of one's own, and the connection limit cut
 * to the descriptors the process may open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"
#include "http_listen.h"

static int calls;

static enum MHD_Result hello(void *ctx, struct MHD_Connection *conn, const char *url)
{
	calls++;
	if (strcmp(url, "/hello") == 0)
		return http_listen_text(conn, MHD_HTTP_OK, ctx);
	return http_listen_text(conn, MHD_HTTP_NOT_FOUND, "404 page not found\n");
}

/* Sends request to 127.0.0.1:port and returns the whole answer, which the
 * caller frees. */
static char *ask(int port, const char *request)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	assert_non_null(buf);
	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		fail_msg("connect to port %d: %s", port, strerror(errno));
	assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	while ((n = read(fd, buf + len, cap - len - 1)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return buf;
}

static void test_addresses_are_checked_as_the_flags_take_them(void **state)
{
	static const char *const good[] = {"0",          ":8080",           "127.0.0.1:0",
	                                   "[::1]:9090", "localhost:65535", ":0"};
	static const struct {
		const char *addr, *says;
	} bad[] = {
	    {"8080", "expected host:port, :port or 0"},
	    {"::1:80", "write an IPv6 one as [address]:port"},
	    {"[::1]80", "expected [address]:port"},
	    {"[]:80", "bad address"},
	    {":65536", "the port must be a number from 0 to 65535"},
	    {"host:", "the port must be a number"},
	    {"host:-1", "the port must be a number"},
	    {"", "expected host:port"},
	};
	char err[ERR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (http_listen_check_addr(good[i], err) != 0)
			fail_msg("'%s' refused: %s", good[i], err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char quoted[64];
		err[0] = '\0';
		snprintf(quoted, sizeof(quoted), "'%s'", bad[i].addr);
		if (http_listen_check_addr(bad[i].addr, err) != -1 || !strstr(err, bad[i].says) ||
		    !strstr(err, quoted))
			fail_msg("'%s': '%s', want it refused saying '%s'", bad[i].addr, err,
			         bad[i].says);
	}
}

static void test_port_0_binds_a_free_port_that_answers_get_and_head_only(void **state)
{
	struct http_listener l;
	char err[ERR_LEN], *a;

	(void)state;
	calls = 0;
	assert_int_equal(http_listen_start(&l, "127.0.0.1:0", 16, hello, "hello\n", err), 0);
	assert_true(l.port > 0);
	a = ask(l.port, "GET /hello HTTP/1.0\r\n\r\n");
	assert_true(strncmp(a, "HTTP/1.0 200", 12) == 0 || strncmp(a, "HTTP/1.1 200", 12) == 0);
	assert_non_null(strstr(a, "Cache-Control: no-cache"));
	assert_non_null(strstr(a, "\r\n\r\nhello\n"));
	free(a);
	a = ask(l.port, "HEAD /hello HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(a, " 200 "));
	assert_null(strstr(a, "hello\n"));
	free(a);
	a = ask(l.port, "GET /other HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(a, " 404 "));
	free(a);
	/* Other methods never reach the handler. */
	a = ask(l.port, "POST /hello HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
	assert_non_null(strstr(a, " 405 "));
	free(a);
	assert_int_equal(calls, 3);
	http_listen_stop(&l);
	assert_null(l.daemon);
	http_listen_stop(&l); /* twice is fine */
}

static void test_a_port_in_use_is_refused_naming_the_address(void **state)
{
	struct http_listener l, again;
	char err[ERR_LEN], addr[32], want[96];

	(void)state;
	assert_int_equal(http_listen_start(&l, "127.0.0.1:0", 16, hello, "", err), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", l.port);
	assert_int_equal(http_listen_start(&again, addr, 16, hello, "", err), -1);
	assert_null(again.daemon);
	snprintf(want, sizeof(want), "'%s': cannot listen (in use, or not permitted)", addr);
	assert_string_equal(err, want);
	http_listen_stop(&l);
}

static void test_an_unknown_host_is_refused_naming_it(void **state)
{
	struct http_listener l;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(http_listen_start(&l, "no-such-host.invalid:0", 16, hello, "", err), -1);
	assert_non_null(strstr(err, "'no-such-host.invalid:0': "));
	assert_null(l.daemon);
	assert_int_equal(http_listen_start(&l, "0", 16, hello, "", err), -1);
}

/* A socket of one's own, for a daemon that takes it over: listening on
 * the port it says, refused where that port is taken. */
static void test_a_socket_of_ones_own_listens_on_the_port_it_says(void **state)
{
	static const char *const addrs[] = {"127.0.0.1:0", ":0"};
	char err[ERR_LEN], addr[32];
	int port, again;

	(void)state;
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		int fd = http_listen_socket(addrs[i], &port, err);
		if (fd < 0)
			fail_msg("%s: %s", addrs[i], err);
		assert_true(port > 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int c = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
		close(c);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
		assert_int_equal(http_listen_socket(addr, &again, err), -1);
		assert_non_null(strstr(err, "cannot listen"));
		assert_non_null(strstr(err, addr));
		close(fd);
	}
	assert_int_equal(http_listen_socket("8080", &port, err), -1);
	assert_non_null(strstr(err, "expected host:port"));
}

static void test_the_connection_limit_fits_the_descriptors_left(void **state)
{
	struct rlimit saved, rl;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	rl = saved;
	rl.rlim_cur = 1024 < saved.rlim_max ? 1024 : saved.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur == 1024) {
		assert_int_equal(http_listen_connection_limit(1), 1024 - 256);
		assert_int_equal(http_listen_connection_limit(2), (1024 - 256) / 2);
	}
	rl.rlim_cur = 200;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(http_listen_connection_limit(1), 16);
	if (saved.rlim_max >= 65536) {
		rl.rlim_cur = 65536;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
		assert_int_equal(http_listen_connection_limit(1), 2048);
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_addresses_are_checked_as_the_flags_take_them),
	    cmocka_unit_test(test_port_0_binds_a_free_port_that_answers_get_and_head_only),
	    cmocka_unit_test(test_a_port_in_use_is_refused_naming_the_address),
	    cmocka_unit_test(test_an_unknown_host_is_refused_naming_it),
	    cmocka_unit_test(test_a_socket_of_ones_own_listens_on_the_port_it_says),
	    cmocka_unit_test(test_the_connection_limit_fits_the_descriptors_left),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
