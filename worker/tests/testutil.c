/* testutil.c - helpers shared by the worker tests; see testutil.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <regex.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"

#include "keras_model.h"
#include "model.h"

#include "bytes.h"

const char *testutil_data_dir(void)
{
	const char *d = getenv("MWJ_TEST_DATA");

	return d && d[0] ? d : TESTUTIL_DEFAULT_DATA_DIR;
}

const char *testutil_worker_bin(const char *prog)
{
	const char *bin = getenv("MWJ_WORKER_BIN");

	if (bin == NULL || bin[0] == '\0') {
		fprintf(stderr,
		        "%s: MWJ_WORKER_BIN is not set; it must name the mwj-worker binary "
		        "to test ('make test' sets it)\n",
		        prog);
		return NULL;
	}
	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "%s: MWJ_WORKER_BIN='%s' is not an executable: %s\n", prog, bin,
		        strerror(errno));
		return NULL;
	}
	return bin;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) == 0 ? 0 : -1; /* non-zero stops the walk */
}

int testutil_fixture_setup(void **state, size_t size, const char *name)
{
	/* The fixture, seen through its first member: the directory's path. */
	char *dir = size >= TESTUTIL_TMPDIR_LEN ? calloc(1, size) : NULL;
	int n;

	if (dir == NULL)
		return -1;
	n = snprintf(dir, TESTUTIL_TMPDIR_LEN, "/tmp/mwj-test-%s-XXXXXX", name);
	if (n < 0 || n >= TESTUTIL_TMPDIR_LEN || mkdtemp(dir) == NULL) {
		free(dir);
		return -1;
	}
	*state = dir;
	return 0;
}

int testutil_fixture_teardown(void **state)
{
	char *dir = *state;
	int rc = 0;

	/* Depth first, so that each directory is empty when its turn comes. */
	if (dir != NULL && nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		rc = -1;
	free(dir);
	*state = NULL;
	return rc;
}

void *testutil_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (f == NULL)
		fail_msg("open '%s': %s", path, strerror(errno));
	for (;;) {
		if (cap - n < 4096) {
			char *grown;

			cap = cap ? cap * 2 : 8192;
			grown = realloc(buf, cap);
			assert_non_null(grown);
			buf = grown;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	assert_int_equal(ferror(f), 0);
	fclose(f);
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}

void testutil_write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL)
		fail_msg("open '%s': %s", path, strerror(errno));
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

void testutil_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The number after name in a "name  value" line of /proc, or -1. */
static long long line_value(const char *line, const char *name)
{
	size_t n = strlen(name);
	char *end;
	long long v;

	if (strncmp(line, name, n) != 0)
		return -1;
	errno = 0;
	v = strtoll(line + n, &end, 10);
	return errno == 0 && end != line + n ? v : -1;
}

long long testutil_bytes_read(void)
{
	char line[128];
	long long v = -1;
	FILE *f = fopen("/proc/self/io", "r");

	if (f == NULL)
		fail_msg("open /proc/self/io: %s", strerror(errno));
	while (v < 0 && fgets(line, sizeof(line), f))
		v = line_value(line, "rchar:");
	fclose(f);
	if (v < 0)
		fail_msg("/proc/self/io has no rchar");
	return v;
}

long long testutil_peak_rss(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return (long long)ru.ru_maxrss * 1024;
}

#if defined(__SANITIZE_ADDRESS__)
#define TESTUTIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESTUTIL_ASAN 1
#endif
#endif

void testutil_limit_memory(long long extra)
{
#ifndef TESTUTIL_ASAN
	char line[128];
	long long kb = -1;
	struct rlimit lim;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (kb < 0 && fgets(line, sizeof(line), f))
		kb = line_value(line, "VmSize:");
	fclose(f);
	assert_true(kb > 0);
	assert_int_equal(getrlimit(RLIMIT_AS, &lim), 0);
	lim.rlim_cur = (rlim_t)(kb * 1024 + extra);
	assert_int_equal(setrlimit(RLIMIT_AS, &lim), 0);
#else
	(void)extra;
#endif
}

void testutil_unlimit_memory(void)
{
#ifndef TESTUTIL_ASAN
	struct rlimit lim;

	assert_int_equal(getrlimit(RLIMIT_AS, &lim), 0);
	lim.rlim_cur = lim.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_AS, &lim), 0);
#endif
}

uint8_t *testutil_gzip_header_and_zeros(const uint8_t *header, size_t len, size_t *out_len)
{
	static const uint8_t zeros[65536];
	z_stream zs = {0};
	size_t cap = len / 500 + 65536, left = len - 16;
	uint8_t *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_out = out;
	zs.avail_out = (unsigned)cap;
	zs.next_in = (uint8_t *)header;
	zs.avail_in = 16;
	assert_int_equal(deflate(&zs, Z_NO_FLUSH), Z_OK);
	while (left > 0) {
		size_t n = left < sizeof(zeros) ? left : sizeof(zeros);
		zs.next_in = (uint8_t *)zeros;
		zs.avail_in = (unsigned)n;
		left -= n;
		assert_int_equal(deflate(&zs, left ? Z_NO_FLUSH : Z_FINISH),
		                 left ? Z_OK : Z_STREAM_END);
		assert_true(zs.avail_out > 0);
	}
	*out_len = zs.total_out;
	deflateEnd(&zs);
	return out;
}

void testutil_write_big_split(const char *dir, const char *split, uint32_t count, uint32_t side,
                              uint32_t nlabels)
{
	uint8_t header[16], *gz, *labels = calloc(1, 8 + (size_t)nlabels);
	char path[PATH_MAX];
	size_t gz_len = 0;

	assert_non_null(labels);
	testutil_put_be32(header, 0x00000803);
	testutil_put_be32(header + 4, count);
	testutil_put_be32(header + 8, side);
	testutil_put_be32(header + 12, side);
	gz = testutil_gzip_header_and_zeros(header, 16 + (size_t)count * side * side, &gz_len);
	snprintf(path, sizeof(path), "%s/%s-images-idx3-ubyte.gz", dir, split);
	testutil_write_file(path, gz, gz_len);
	testutil_put_be32(labels, 0x00000801);
	testutil_put_be32(labels + 4, nlabels);
	snprintf(path, sizeof(path), "%s/%s-labels-idx1-ubyte", dir, split);
	testutil_write_file(path, labels, 8 + (size_t)nlabels);
	free(gz);
	free(labels);
}

double testutil_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

extern char **environ;

/* Whether the variables "NAME=value" a and b have the same name. */
static int same_name(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return strncmp(a, b, n) == 0 && b[n] == '=';
}

/* Whether var passes to a child: not TF_CONFIG or MWJ_*, and not one that
 * extra sets itself (the first of two with one name is the one getenv()
 * finds, so the inherited one would win). */
static int inherited(const char *var, const char *const *extra)
{
	if (strncmp(var, "MWJ_", 4) == 0 || strncmp(var, "TF_CONFIG=", 10) == 0)
		return 0;
	for (size_t i = 0; extra && extra[i]; i++)
		if (same_name(var, extra[i]))
			return 0;
	return 1;
}

/* The environment testutil_spawn() promises; the strings are borrowed. */
static char **child_env(const char *const *extra)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	for (size_t i = 0; extra && extra[i]; i++)
		n++;
	env = calloc(n + 1, sizeof(*env));
	assert_non_null(env);
	for (size_t i = 0; environ[i]; i++)
		if (inherited(environ[i], extra))
			env[k++] = environ[i];
	for (size_t i = 0; extra && extra[i]; i++)
		env[k++] = (char *)extra[i];
	env[k] = NULL;
	return env;
}

pid_t testutil_spawn(const char *bin, const char *const *args, const char *const *extra_env,
                     const char *out_path, const char *err_path)
{
	const char *argv[64];
	posix_spawn_file_actions_t fa;
	char **env = child_env(extra_env);
	pid_t pid = -1;
	size_t n = 0;
	int rc;

	argv[n++] = bin;
	for (size_t i = 0; args[i]; i++) {
		assert_true(n + 1 < sizeof(argv) / sizeof(argv[0]));
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0), 0);
	assert_int_equal(
	    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600),
	    0);
	assert_int_equal(
	    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600),
	    0);
	rc = posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (rc != 0)
		fail_msg("spawn '%s': %s", bin, strerror(rc));
	return pid;
}

int testutil_wait(pid_t pid, double deadline)
{
	return testutil_wait_peak(pid, deadline, NULL);
}

int testutil_wait_peak(pid_t pid, double deadline, long long *peak_rss)
{
	struct rusage ru;
	int st = 0;

	for (;;) {
		pid_t w = wait4(pid, &st, WNOHANG, &ru);
		if (w == pid && peak_rss)
			*peak_rss = (long long)ru.ru_maxrss * 1024;
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (w < 0 && errno != EINTR)
			fail_msg("waitpid %d: %s", (int)pid, strerror(errno));
		if (testutil_now() > deadline)
			return -1;
		nanosleep(&(struct timespec){0, 10L * 1000 * 1000}, NULL);
	}
}

void testutil_kill(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

void testutil_free_ports(int *ports, int n)
{
	int fds[64];

	assert_true(n > 0 && n <= 64);
	for (int i = 0; i < n; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
		socklen_t len = sizeof(a);

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(bind(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(getsockname(fds[i], (struct sockaddr *)&a, &len), 0);
		ports[i] = ntohs(a.sin_port);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

void testutil_tf_config(char *out, size_t len, const int *ports, int chiefs, int workers,
                        const char *type, int index)
{
	size_t n = 0;

	n += (size_t)snprintf(out + n, len - n, "TF_CONFIG={\"cluster\":{");
	if (chiefs)
		n += (size_t)snprintf(out + n, len - n, "\"chief\":[\"127.0.0.1:%d\"],", ports[0]);
	n += (size_t)snprintf(out + n, len - n, "\"worker\":[");
	for (int i = 0; i < workers && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s\"127.0.0.1:%d\"", i ? "," : "",
		                      ports[chiefs + i]);
	if (n < len)
		n += (size_t)snprintf(out + n, len - n,
		                      "]},\"task\":{\"type\":\"%s\",\"index\":%d}}", type, index);
	assert_true(n < len);
}

const struct hello testutil_job_hello = {HANDSHAKE_PROTOCOL,
                                         2,
                                         0,
                                         0x1122334455667788ull,
                                         0x99aabbccddeeff01ull,
                                         0x5eed5eed5eed5eedull,
                                         0x00012345,
                                         1,
                                         0x00054321,
                                         0x0000000abcdef012ull,
                                         0.123,
                                         0.9,
                                         HELLO_COLLECTIVE_HOST};

void testutil_assert_none_of_job(const unsigned char *bytes, size_t n, const struct hello *job,
                                 const char *what)
{
	unsigned char v[8];
	const uint64_t words[] = {job->job_hash,
	                          job->arch_hash,
	                          job->seed,
	                          job->steps_per_epoch,
	                          bytes_f64_bits(job->learning_rate),
	                          bytes_f64_bits(job->momentum)};
	const uint32_t halves[] = {job->batch_size, job->epochs};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		bytes_put_be64(v, words[i]);
		if (memmem(bytes, n, v, 8))
			fail_msg("%s holds value %zu of the job", what, i);
	}
	for (size_t i = 0; i < sizeof(halves) / sizeof(halves[0]); i++) {
		bytes_put_be32(v, halves[i]);
		if (memmem(bytes, n, v, 4))
			fail_msg("%s holds count %zu of the job", what, i);
	}
}

void testutil_assert_contains(const char *s, const char *part)
{
	if (strstr(s, part) == NULL)
		fail_msg("'%s' does not contain '%s'", s, part);
}

void testutil_assert_matches(const char *s, const char *pattern)
{
	regex_t re;
	int rc;

	assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
	rc = regexec(&re, s, 0, NULL, 0);
	regfree(&re);
	if (rc != 0)
		fail_msg("'%s' does not match /%s/", s, pattern);
}

cJSON *testutil_json_object(const char *text)
{
	cJSON *o = cJSON_Parse(text);

	if (o == NULL || !cJSON_IsObject(o))
		fail_msg("not a JSON object: '%s'", text);
	return o;
}

double testutil_json_number(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsNumber(v))
		fail_msg("member '%s' is missing or not a number", name);
	return v->valuedouble;
}

const char *testutil_json_string(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsString(v))
		fail_msg("member '%s' is missing or not a string", name);
	return v->valuestring;
}

void testutil_keras(struct keras_model *km, const char *name, int side, int classes)
{
	char json[4096], err[ERR_LEN];
	int pool = strcmp(name, "cnn-pool") == 0;
	int n;

	if (!pool && strcmp(name, "cnn") != 0)
		fail_msg("testutil_keras: no model '%s'", name);
	n = snprintf(json, sizeof(json),
	             "{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":"
	             "\"%s\",\"layers\":["
	             "{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
	             "\"batch_shape\":[null,%d,%d],\"name\":\"input_layer\"}},"
	             "{\"module\":\"keras.layers\",\"class_name\":\"Reshape\",\"config\":{"
	             "\"name\":\"reshape\",\"target_shape\":[%d,%d,1]}},"
	             "{\"module\":\"keras.layers\",\"class_name\":\"Conv2D\",\"config\":{"
	             "\"name\":\"conv2d\",\"filters\":32,\"kernel_size\":[3,3],"
	             "\"activation\":\"relu\"}},"
	             "%s"
	             "{\"module\":\"keras.layers\",\"class_name\":\"Flatten\",\"config\":{"
	             "\"name\":\"flatten\"}},"
	             "{\"module\":\"keras.layers\",\"class_name\":\"Dense\",\"config\":{"
	             "\"name\":\"dense\",\"units\":%d,\"activation\":\"relu\"}},"
	             "{\"module\":\"keras.layers\",\"class_name\":\"Dense\",\"config\":{"
	             "\"name\":\"dense_1\",\"units\":%d}}]}}",
	             name, side, side, side, side,
	             pool ? "{\"module\":\"keras.layers\",\"class_name\":\"MaxPooling2D\","
	                    "\"config\":{\"name\":\"max_pooling2d\",\"pool_size\":[2,2]}},"
	                  : "",
	             pool ? 64 : 128, classes);
	if (n < 0 || (size_t)n >= sizeof(json))
		fail_msg("testutil_keras: JSON too long");
	if (keras_model_parse(km, json, (size_t)n, "testutil_keras", err) < 0)
		fail_msg("testutil_keras: %s", err);
}

struct model *testutil_model(const char *name, int side, int classes, int max_batch, uint64_t seed)
{
	struct keras_model *km = calloc(1, sizeof(*km));
	char err[ERR_LEN];
	struct model *m;

	testutil_keras(km, name, side, classes);
	m = model_new(km, max_batch, 0, err);
	if (!m)
		fail_msg("model_new '%s' on %dx%d: %s", name, side, side, err);
	if (seed)
		model_init_params(m, km, seed);
	keras_model_release(km);
	free(km);
	return m;
}
