/* prom_scrape.c - GET /metrics and read the text format strictly; see
 * prom_scrape.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prom_scrape.h"
#include "testutil.h"

#define LINE_LEN     4096
#define MAX_FAMILIES 256
#define NAME_LEN     128
#define ANSWER_MAX   (4 << 20)

char *prom_scrape_get(int port, const char *path, int *status, char *content_type, size_t ctype_len)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	char req[512], *buf = NULL, *body;
	size_t len = 0, cap = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		fail_msg("connect to 127.0.0.1:%d: %s", port, strerror(errno));
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	assert_int_equal(write(fd, req, (size_t)n), n);
	for (;;) {
		if (len + 4097 > cap) {
			cap = cap ? 2 * cap : 65536;
			assert_true(cap <= ANSWER_MAX);
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		ssize_t got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			fail_msg("read from 127.0.0.1:%d: %s", port, strerror(errno));
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	buf[len] = '\0';
	/* "HTTP/1.x NNN ..." */
	char *end = NULL;
	long code = strncmp(buf, "HTTP/1.", 7) == 0 && len > 9 ? strtol(buf + 9, &end, 10) : 0;
	if (end == NULL || *end != ' ' || code < 100 || code > 599)
		fail_msg("not an HTTP answer from 127.0.0.1:%d:\n%s", port, buf);
	*status = (int)code;
	body = strstr(buf, "\r\n\r\n");
	if (body == NULL) {
		fail_msg("no end of headers from 127.0.0.1:%d:\n%s", port, buf);
		abort(); /* not reached; clang-analyzer cannot see that */
	}
	*body = '\0';
	if (content_type) {
		const char *h = strcasestr(buf, "\r\nContent-Type: ");
		content_type[0] = '\0';
		if (h)
			snprintf(content_type, ctype_len, "%.*s", (int)strcspn(h + 16, "\r"),
			         h + 16);
	}
	char *out = strdup(body + 4);
	assert_non_null(out);
	free(buf);
	return out;
}

/* --- the text format --- */

struct family {
	char name[NAME_LEN];
	char type[16]; /* "" until its TYPE line */
	int samples;
	/* A histogram's buckets so far: the last count, and whether +Inf came. */
	double last_bucket;
	int saw_inf;
	double inf_count;
};

struct reading {
	struct family f[MAX_FAMILIES];
	int n;
	regex_t strict;   /* a whole sample line, labels and all */
	regex_t parts;    /* its name, labels and value */
	const char *line; /* for messages */
};

/* name{label="value",...} value: label values may hold anything but an
 * unescaped quote; a backslash escapes \, " or n. */
#define RE_LABEL "[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\[\\\\\"n])*\""
#define RE_NAME  "[a-zA-Z_:][a-zA-Z0-9_:]*"
#define STRICT   "^" RE_NAME "(\\{(" RE_LABEL "(," RE_LABEL ")*)?\\})? [^ ]+$"
#define PARTS    "^(" RE_NAME ")(\\{.*\\})? ([^ ]+)$"

static struct family *family_of(struct reading *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->f[i].name, name) == 0)
			return &r->f[i];
	return NULL;
}

/* The declared family a sample name belongs to: itself, or a histogram
 * that name is the _bucket, _sum or _count of. */
static struct family *owner(struct reading *r, const char *name, const char **suffix)
{
	static const char *const sfx[] = {"_bucket", "_sum", "_count"};
	struct family *f = family_of(r, name);
	char base[NAME_LEN];

	*suffix = "";
	if (f && strcmp(f->type, "histogram") != 0)
		return f;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t n = strlen(name), k = strlen(sfx[i]);
		if (n <= k || strcmp(name + n - k, sfx[i]) != 0 || n - k >= sizeof(base))
			continue;
		memcpy(base, name, n - k);
		base[n - k] = '\0';
		f = family_of(r, base);
		if (f && strcmp(f->type, "histogram") == 0) {
			*suffix = sfx[i];
			return f;
		}
	}
	return NULL;
}

static double number(const struct reading *r, const char *s)
{
	char *end;
	double v;

	if (strcmp(s, "+Inf") == 0)
		return INFINITY;
	if (strcmp(s, "-Inf") == 0)
		return -INFINITY;
	if (strcmp(s, "NaN") == 0)
		return NAN;
	v = strtod(s, &end);
	if (end == s || *end != '\0')
		fail_msg("'%s' is not a number in:\n%s", s, r->line);
	return v;
}

static void comment(struct reading *r, const char *line)
{
	char name[NAME_LEN], rest[LINE_LEN], type[16];
	struct family *f;

	if (sscanf(line, "# HELP %127s %4095[^\n]", name, rest) == 2) {
		if (family_of(r, name))
			fail_msg("family %s declared twice:\n%s", name, line);
		assert_true(r->n < MAX_FAMILIES);
		f = &r->f[r->n++];
		memset(f, 0, sizeof(*f));
		snprintf(f->name, sizeof(f->name), "%s", name);
		return;
	}
	if (sscanf(line, "# TYPE %127s %15s", name, type) == 2) {
		f = family_of(r, name);
		if (f == NULL || f->type[0] || f->samples) {
			fail_msg("TYPE without its HELP before, or twice:\n%s", line);
			return;
		}
		if (strcmp(type, "counter") != 0 && strcmp(type, "gauge") != 0 &&
		    strcmp(type, "histogram") != 0)
			fail_msg("unknown type '%s':\n%s", type, line);
		size_t n = strlen(name);
		if (strcmp(type, "counter") == 0 && (n < 6 || strcmp(name + n - 6, "_total") != 0))
			fail_msg("counter %s is not named ..._total", name);
		memcpy(f->type, type, sizeof(f->type));
		return;
	}
	fail_msg("a comment that is neither HELP nor TYPE:\n%s", line);
}

static void sample(struct reading *r, const char *line)
{
	regmatch_t m[4];
	char name[NAME_LEN], labels[LINE_LEN], value[64];
	const char *suffix;
	struct family *f;

	if (regexec(&r->strict, line, 0, NULL, 0) != 0 || regexec(&r->parts, line, 4, m, 0) != 0) {
		fail_msg("not a sample line:\n%s", line);
		return;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), line + m[1].rm_so);
	snprintf(labels, sizeof(labels), "%.*s", (int)(m[2].rm_eo - m[2].rm_so), line + m[2].rm_so);
	snprintf(value, sizeof(value), "%.*s", (int)(m[3].rm_eo - m[3].rm_so), line + m[3].rm_so);
	f = owner(r, name, &suffix);
	if (f == NULL || !f->type[0]) {
		fail_msg("sample of an undeclared family:\n%s", line);
		return;
	}
	double v = number(r, value);
	f->samples++;
	if (strcmp(suffix, "_bucket") == 0) {
		if (strstr(labels, "le=\"") == NULL)
			fail_msg("a bucket without le:\n%s", line);
		if (v < f->last_bucket || f->saw_inf)
			fail_msg("buckets not cumulative, or after +Inf:\n%s", line);
		f->last_bucket = v;
		if (strstr(labels, "le=\"+Inf\"")) {
			f->saw_inf = 1;
			f->inf_count = v;
		}
	} else if (strcmp(suffix, "_count") == 0) {
		if (!f->saw_inf || v != f->inf_count)
			fail_msg("_count is not the +Inf bucket:\n%s", line);
	}
}

int prom_scrape_check(const char *text)
{
	static struct reading r;
	const char *p = text;
	char line[LINE_LEN];
	int samples = 0;

	memset(&r, 0, sizeof(r));
	assert_int_equal(regcomp(&r.strict, STRICT, REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(regcomp(&r.parts, PARTS, REG_EXTENDED), 0);
	while (*p) {
		size_t n = strcspn(p, "\n");
		if (p[n] != '\n')
			fail_msg("the text does not end with a newline:\n%s", p);
		assert_true(n < sizeof(line));
		memcpy(line, p, n);
		line[n] = '\0';
		r.line = line;
		if (line[0] == '#') {
			comment(&r, line);
		} else if (line[0] != '\0') {
			sample(&r, line);
			samples++;
		}
		p += n + 1;
	}
	regfree(&r.strict);
	regfree(&r.parts);
	for (int i = 0; i < r.n; i++) {
		if (!r.f[i].type[0])
			fail_msg("family %s has HELP but no TYPE", r.f[i].name);
		if (strcmp(r.f[i].type, "histogram") == 0 && !r.f[i].saw_inf)
			fail_msg("histogram %s has no +Inf bucket", r.f[i].name);
	}
	return samples;
}

double prom_scrape_value(const char *text, const char *sample_name)
{
	size_t n = strlen(sample_name);

	for (const char *p = text; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0')) {
		if (strncmp(p, sample_name, n) == 0 && p[n] == ' ') {
			char value[64];
			snprintf(value, sizeof(value), "%.*s", (int)strcspn(p + n + 1, "\n"),
			         p + n + 1);
			if (strcmp(value, "+Inf") == 0)
				return INFINITY;
			if (strcmp(value, "NaN") == 0)
				return NAN;
			return strtod(value, NULL);
		}
	}
	fail_msg("no sample '%s' in:\n%s", sample_name, text);
	return 0;
}

int prom_scrape_has(const char *text, const char *family)
{
	char want[NAME_LEN + 16];

	snprintf(want, sizeof(want), "# TYPE %s ", family);
	return strstr(text, want) != NULL;
}

int prom_scrape_port(pid_t pid, const char *err_path, double deadline)
{
	static const char tag[] = "serving /metrics on port ";

	for (;;) {
		char *log = testutil_read_file(err_path, NULL);
		const char *p = strstr(log, tag);
		long port = p ? strtol(p + strlen(tag), NULL, 10) : 0;
		siginfo_t si = {0};

		if (port > 0 && port < 65536) {
			free(log);
			return (int)port;
		}
		/* Looked at, not reaped: the caller waits for it. */
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == pid)
			fail_msg("mwj-worker exited before serving /metrics:\n%s", log);
		if (testutil_now() > deadline)
			fail_msg("mwj-worker said no '%s' in time:\n%s", tag, log);
		free(log);
		nanosleep(&(struct timespec){0, 20L * 1000 * 1000}, NULL);
	}
}
