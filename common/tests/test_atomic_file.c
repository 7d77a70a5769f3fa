/* test_atomic_file.c - atomic writes, bounded reads and mkdir_p on a real
 * file system, in a fresh temporary directory per test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "atomic_file.h"
#include "err.h"

#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/mwj-test-atomic-XXXXXX");
	umask(022);
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	(void)state;
	return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* dir/name in a static buffer; one live result per slot. */
static const char *in_dir(int slot, const char *name)
{
	static char paths[4][128];

	snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", dir, name);
	return paths[slot];
}

static void write_plain(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(content, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void assert_file_equals(const char *path, const void *want, size_t len)
{
	unsigned char *got = NULL;
	size_t got_len = 0;
	char err[ERR_LEN] = "";

	if (file_read_all(path, 1 << 24, &got, &got_len, err) < 0)
		fail_msg("%s", err);
	assert_int_equal(got_len, len);
	assert_memory_equal(got, want, len);
	free(got);
}

/* Fails if anything but the expected entries is left in dir, such as a temp
 * file. */
static void assert_dir_holds_only(const char *const *names, int n)
{
	DIR *d = opendir(dir);
	const struct dirent *e;
	int seen = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		int known = 0;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		for (int i = 0; i < n; i++)
			known |= strcmp(e->d_name, names[i]) == 0;
		if (!known) {
			closedir(d);
			fail_msg("unexpected file '%s' left in %s", e->d_name, dir);
		}
		seen++;
	}
	closedir(d);
	assert_int_equal(seen, n);
}

static void test_atomic_write_creates_file_with_content_and_mode(void **state)
{
	const char *path = in_dir(0, "model.ckpt");
	const char *names[] = {"model.ckpt"};
	char err[ERR_LEN] = "";
	struct stat st;

	(void)state;
	assert_int_equal(atomic_file_write(path, "weights", 7, 0640, err), 0);
	assert_file_equals(path, "weights", 7);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_dir_holds_only(names, 1);
}

static void test_atomic_write_replaces_existing_content(void **state)
{
	const char *path = in_dir(0, "state.json");
	char err[ERR_LEN] = "";

	(void)state;
	write_plain(path, "a much longer old content that must not survive");
	assert_int_equal(atomic_file_write(path, "{}", 2, 0644, err), 0);
	assert_file_equals(path, "{}", 2);
	assert_int_equal(atomic_file_write(path, "", 0, 0644, err), 0);
	assert_file_equals(path, "", 0);
}

static void test_atomic_write_leaves_old_file_intact_when_write_fails(void **state)
{
	const char *path = in_dir(0, "model.ckpt");
	const char *names[] = {"model.ckpt"};
	static unsigned char big[64 * 1024];
	struct rlimit old_limit;
	struct rlimit small;
	char err[ERR_LEN] = "";
	char want[ERR_LEN];
	int rc;

	(void)state;
	write_plain(path, "old weights");
	memset(big, 0x5a, sizeof(big));

	/* A file size limit makes write() fail part-way with EFBIG, which root
	 * cannot bypass the way it bypasses permission bits. */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
	small = old_limit;
	small.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	rc = atomic_file_write(path, big, sizeof(big), 0644, err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
	signal(SIGXFSZ, SIG_DFL);

	assert_int_equal(rc, -1);
	snprintf(want, sizeof(want), "write '%s.tmp.%ld': File too large", path, (long)getpid());
	assert_string_equal(err, want);
	assert_file_equals(path, "old weights", 11);
	assert_dir_holds_only(names, 1);
}

static void test_atomic_write_fails_when_destination_is_a_directory(void **state)
{
	const char *path = in_dir(0, "target");
	const char *names[] = {"target"};
	char err[ERR_LEN] = "";
	char want[ERR_LEN];
	struct stat st;

	(void)state;
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(atomic_file_write(path, "x", 1, 0644, err), -1);
	snprintf(want, sizeof(want), "rename '%s.tmp.%ld' to '%s': Is a directory", path,
	         (long)getpid(), path);
	assert_string_equal(err, want);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_dir_holds_only(names, 1);
}

static void test_atomic_write_fails_when_parent_directory_is_missing(void **state)
{
	const char *path = in_dir(0, "missing/file");
	char err[ERR_LEN] = "";
	char want[ERR_LEN];

	(void)state;
	assert_int_equal(atomic_file_write(path, "x", 1, 0644, err), -1);
	snprintf(want, sizeof(want), "open '%s.tmp.%ld': No such file or directory", path,
	         (long)getpid());
	assert_string_equal(err, want);
	assert_dir_holds_only(NULL, 0);
}

static void test_atomic_write_replaces_stale_temp_file_from_same_pid(void **state)
{
	/* In a container every restart is pid 1, so a crash leaves the very
	 * temp name the next run will use. */
	const char *path = in_dir(0, "f");
	const char *names[] = {"f"};
	char stale[512];
	char err[ERR_LEN] = "";

	(void)state;
	snprintf(stale, sizeof(stale), "%s.tmp.%ld", path, (long)getpid());
	write_plain(stale, "half-written garbage from a crash");
	assert_int_equal(atomic_file_write(path, "new", 3, 0644, err), 0);
	assert_file_equals(path, "new", 3);
	assert_dir_holds_only(names, 1);
}

static void test_atomic_writev_gathers_buffers_in_order(void **state)
{
	const char *path = in_dir(0, "record");
	const void *bufs[] = {"head:", "", "body:", "tail"};
	const size_t lens[] = {5, 0, 5, 4};
	char err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(atomic_file_writev(path, bufs, lens, 4, 0644, err), 0);
	assert_file_equals(path, "head:body:tail", 14);
}

static void test_atomic_write_of_relative_path_uses_current_directory(void **state)
{
	char cwd[4096];
	char err[ERR_LEN] = "";
	int rc;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	rc = atomic_file_write("rel.txt", "here", 4, 0644, err);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(rc, 0);
	assert_file_equals(in_dir(0, "rel.txt"), "here", 4);
}

static void test_file_read_all_returns_exact_bytes_of_large_file(void **state)
{
	const char *path = in_dir(0, "big");
	size_t len = 300 * 1000 + 7;
	unsigned char *data = malloc(len);
	unsigned char *got = NULL;
	size_t got_len = 0;
	char err[ERR_LEN] = "";

	(void)state;
	assert_non_null(data);
	for (size_t i = 0; i < len; i++)
		data[i] = (unsigned char)(i * 131 + (i >> 8));
	assert_int_equal(atomic_file_write(path, data, len, 0644, err), 0);
	assert_int_equal(file_read_all(path, len, &got, &got_len, err), 0);
	assert_int_equal(got_len, len);
	assert_memory_equal(got, data, len);
	free(got);
	free(data);
}

static void test_file_read_all_reads_empty_file(void **state)
{
	const char *path = in_dir(0, "empty");
	unsigned char *got = NULL;
	size_t got_len = 99;
	char err[ERR_LEN] = "";

	(void)state;
	write_plain(path, "");
	assert_int_equal(file_read_all(path, 10, &got, &got_len, err), 0);
	assert_non_null(got);
	assert_int_equal(got_len, 0);
	free(got);
}

static void test_file_read_all_refuses_file_over_limit(void **state)
{
	const char *path = in_dir(0, "eleven");
	unsigned char *got = (unsigned char *)"sentinel";
	size_t got_len = 99;
	char err[ERR_LEN] = "";
	char want[ERR_LEN];

	(void)state;
	write_plain(path, "0123456789A");
	assert_int_equal(file_read_all(path, 10, &got, &got_len, err), -1);
	snprintf(want, sizeof(want), "read '%s': file is 11 bytes, more than the limit of 10",
	         path);
	assert_string_equal(err, want);
	assert_string_equal((const char *)got, "sentinel");
	assert_int_equal(got_len, 99);

	assert_int_equal(file_read_all(path, 11, &got, &got_len, err), 0);
	assert_int_equal(got_len, 11);
	assert_memory_equal(got, "0123456789A", 11);
	free(got);
}

static void test_file_read_all_enforces_limit_when_size_is_unknown(void **state)
{
	/* /proc files report size 0 but have content. */
	unsigned char *got = NULL;
	size_t got_len = 0;
	char err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(file_read_all("/proc/self/status", 16, &got, &got_len, err), -1);
	assert_string_equal(err,
	                    "read '/proc/self/status': file is more than the limit of 16 bytes");
	assert_null(got);
	assert_int_equal(file_read_all("/proc/self/status", 1 << 20, &got, &got_len, err), 0);
	assert_true(got_len > 16);
	assert_memory_equal(got, "Name:", 5);
	free(got);
}

static void test_file_read_all_names_the_path_on_error(void **state)
{
	const char *missing = in_dir(0, "nope");
	unsigned char *got = NULL;
	size_t got_len = 0;
	char err[ERR_LEN] = "";
	char want[ERR_LEN];

	(void)state;
	assert_int_equal(file_read_all(missing, 10, &got, &got_len, err), -1);
	snprintf(want, sizeof(want), "open '%s': No such file or directory", missing);
	assert_string_equal(err, want);
	assert_int_equal(file_read_all(dir, 10, &got, &got_len, err), -1);
	snprintf(want, sizeof(want), "read '%s': Is a directory", dir);
	assert_string_equal(err, want);
	assert_null(got);
}

static void test_mkdir_p_creates_missing_parents(void **state)
{
	const char *deep = in_dir(0, "a/b//c/");
	char err[ERR_LEN] = "";
	struct stat st;

	(void)state;
	assert_int_equal(mkdir_p(deep, err), 0);
	assert_int_equal(stat(in_dir(1, "a/b/c"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0755);
	/* Existing directories are fine. */
	assert_int_equal(mkdir_p(deep, err), 0);
	assert_int_equal(mkdir_p(dir, err), 0);
}

static void test_mkdir_p_fails_when_a_file_is_in_the_way(void **state)
{
	char err[ERR_LEN] = "";
	char want[ERR_LEN];

	(void)state;
	write_plain(in_dir(0, "file"), "x");
	assert_int_equal(mkdir_p(in_dir(1, "file/sub"), err), -1);
	snprintf(want, sizeof(want), "mkdir '%s/file/sub': Not a directory", dir);
	assert_string_equal(err, want);
	assert_int_equal(mkdir_p(in_dir(1, "file"), err), -1);
	snprintf(want, sizeof(want), "mkdir '%s/file': exists and is not a directory", dir);
	assert_string_equal(err, want);
	assert_int_equal(mkdir_p("", err), -1);
	assert_string_equal(err, "mkdir: empty path");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_atomic_write_creates_file_with_content_and_mode),
	    TEST(test_atomic_write_replaces_existing_content),
	    TEST(test_atomic_write_leaves_old_file_intact_when_write_fails),
	    TEST(test_atomic_write_fails_when_destination_is_a_directory),
	    TEST(test_atomic_write_fails_when_parent_directory_is_missing),
	    TEST(test_atomic_write_replaces_stale_temp_file_from_same_pid),
	    TEST(test_atomic_writev_gathers_buffers_in_order),
	    TEST(test_atomic_write_of_relative_path_uses_current_directory),
	    TEST(test_file_read_all_returns_exact_bytes_of_large_file),
	    TEST(test_file_read_all_reads_empty_file),
	    TEST(test_file_read_all_refuses_file_over_limit),
	    TEST(test_file_read_all_enforces_limit_when_size_is_unknown),
	    TEST(test_file_read_all_names_the_path_on_error),
	    TEST(test_mkdir_p_creates_missing_parents),
	    TEST(test_mkdir_p_fails_when_a_file_is_in_the_way),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
