/* http_fixture.c - a canned-response HTTP/1.1 server for the client's
 * tests (http_fixture.h). */
#include "http_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FIX_MAX_EXCHANGES 32
#define FIX_MAX_HEADERS   16
#define FIX_MAX_STEPS     32
#define FIX_MAX_CONNS     64
#define FIX_REQ_MAX       (1 << 20) /* a request's head and body */
#define FIX_MAX_REQ_HDRS  64
#define FIX_MISMATCH_MAX  65536
#define FIX_QUOTE         200 /* how much of a body a mismatch quotes */

enum step_kind { STEP_CHUNK, STEP_SILENCE, STEP_CLOSE };

struct step {
	enum step_kind kind;
	int ms; /* the delay before a chunk, or the silence */
	char *data;
	size_t len;
};

struct exchange {
	/* Expected */
	char method[16];
	char target[2048];
	char *want[FIX_MAX_HEADERS]; /* "Name: value" */
	int nwant;
	char *absent[FIX_MAX_HEADERS]; /* "Name" */
	int nabsent;
	char *body;
	size_t body_len;
	/* Answered */
	char *head; /* status line and headers, CRLF after each */
	int has_length, has_encoding, close_after;
	char *resp_body;
	size_t resp_body_len;
	struct step steps[FIX_MAX_STEPS];
	int nsteps;
};

struct conn {
	struct http_fixture *f;
	int fd; /* -1 once its thread closed it */
	pthread_t thread;
};

struct http_fixture {
	int lfd;
	char url[64];
	pthread_t accept_thread;
	pthread_mutex_t lock;
	struct exchange ex[FIX_MAX_EXCHANGES];
	int nex, next;
	int connections, requests;
	struct conn conns[FIX_MAX_CONNS];
	int nconns;
	int stopping;
	char *mismatches; /* what went wrong, one line each */
	size_t mlen;
	char *report; /* mismatches plus exchanges never asked for */
};

/* A request as it came. */
struct request {
	char line[2100]; /* "GET /x" */
	char method[16];
	char target[2048];
	char *head; /* header lines, each NUL-terminated */
	const char *names[FIX_MAX_REQ_HDRS], *values[FIX_MAX_REQ_HDRS];
	int nh;
	char *body;
	size_t body_len;
};

static void record(struct http_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void record(struct http_fixture *f, const char *fmt, ...)
{
	char line[1024];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = strlen(line);
	pthread_mutex_lock(&f->lock);
	if (f->mlen + n + 2 < FIX_MISMATCH_MAX) {
		memcpy(f->mismatches + f->mlen, line, n);
		f->mlen += n;
		f->mismatches[f->mlen++] = '\n';
		f->mismatches[f->mlen] = '\0';
	}
	pthread_mutex_unlock(&f->lock);
}

/* --- Reading the fixture file --- */

static char *dup_range(const char *p, size_t len)
{
	char *s = malloc(len + 1);

	assert_non_null(s);
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

/* Splits data at its first empty line: the lines before it (*head, *head_len)
 * and what follows (*body, *body_len; NULL when there is no empty line). */
static void split_head(const char *data, size_t len, const char **body, size_t *head_len,
                       size_t *body_len)
{
	const char *p = data;

	*body = NULL;
	*body_len = 0;
	*head_len = len;
	if (len > 0 && data[0] == '\n') {
		*head_len = 0;
		*body = data + 1;
		*body_len = len - 1;
		return;
	}
	while ((p = memchr(p, '\n', (size_t)(data + len - p))) != NULL) {
		if (p + 1 < data + len && p[1] == '\n') {
			*head_len = (size_t)(p - data);
			*body = p + 2;
			*body_len = (size_t)(data + len - *body);
			return;
		}
		if (p + 1 == data + len) {
			*head_len = (size_t)(p - data);
			*body = p + 1;
			*body_len = 0;
			return;
		}
		p++;
	}
}

static void parse_request(struct exchange *e, const char *data, size_t len, const char *path)
{
	const char *body, *line = data, *end;
	size_t head_len, body_len;

	split_head(data, len, &body, &head_len, &body_len);
	end = memchr(data, '\n', head_len);
	if (end == NULL)
		end = data + head_len;
	if (sscanf(line, "%15s %2047s", e->method, e->target) != 2)
		fail_msg("%s: a request section must start with 'METHOD /path'", path);
	for (line = end + 1; line < data + head_len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(data + head_len - line));
		if (end == NULL)
			end = data + head_len;
		if (e->nwant >= FIX_MAX_HEADERS || e->nabsent >= FIX_MAX_HEADERS)
			fail_msg("%s: too many headers in a request section", path);
		if (line[0] == '!')
			e->absent[e->nabsent++] = dup_range(line + 1, (size_t)(end - line - 1));
		else if (memchr(line, ':', (size_t)(end - line)) != NULL)
			e->want[e->nwant++] = dup_range(line, (size_t)(end - line));
		else
			fail_msg("%s: '%.*s' is no header line", path, (int)(end - line), line);
	}
	e->body = dup_range(body ? body : "", body_len);
	e->body_len = body_len;
}

static void parse_response(struct exchange *e, const char *data, size_t len)
{
	const char *body, *line, *end;
	size_t head_len, body_len, n = 0;

	split_head(data, len, &body, &head_len, &body_len);
	e->head = malloc(head_len * 2 + 3);
	assert_non_null(e->head);
	for (line = data; line < data + head_len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(data + head_len - line));
		if (end == NULL)
			end = data + head_len;
		if (strncasecmp(line, "Content-Length:", 15) == 0)
			e->has_length = 1;
		if (strncasecmp(line, "Transfer-Encoding:", 18) == 0)
			e->has_encoding = 1;
		if (strncasecmp(line, "Connection: close", 17) == 0)
			e->close_after = 1;
		memcpy(e->head + n, line, (size_t)(end - line));
		n += (size_t)(end - line);
		e->head[n++] = '\r';
		e->head[n++] = '\n';
	}
	e->head[n] = '\0';
	e->resp_body = dup_range(body ? body : "", body_len);
	e->resp_body_len = body_len;
}

static void add_step(struct exchange *e, enum step_kind kind, int ms, const char *data, size_t len,
                     const char *path)
{
	struct step *s;

	/* fail_msg() ends the test; the returns are for the analyzer. */
	if (e == NULL || e->head == NULL) {
		fail_msg("%s: a chunk, silence or close must follow a response", path);
		return;
	}
	if (e->nsteps >= FIX_MAX_STEPS) {
		fail_msg("%s: too many steps in one response", path);
		return;
	}
	s = &e->steps[e->nsteps++];
	s->kind = kind;
	s->ms = ms;
	s->data = dup_range(data, len);
	s->len = len;
}

/* One section: its opening line (after "--- ") and its data. */
static void parse_section(struct http_fixture *f, const char *open, size_t open_len,
                          const char *data, size_t len, const char *path)
{
	struct exchange *e = f->nex > 0 ? &f->ex[f->nex - 1] : NULL;
	char line[64], *kind, *arg, *end, *save = NULL;
	long ms = 0;

	snprintf(line, sizeof(line), "%.*s", (int)open_len, open);
	kind = strtok_r(line, " ", &save);
	arg = strtok_r(NULL, " ", &save);
	if (kind == NULL) {
		fail_msg("%s: empty section line", path);
		return;
	}
	if (arg != NULL) {
		ms = strtol(arg, &end, 10);
		if (*end != '\0' || ms < 0 || ms > 600000)
			fail_msg("%s: '%s' is no time in milliseconds", path, arg);
	}
	if (strcmp(kind, "request") == 0) {
		if (f->nex >= FIX_MAX_EXCHANGES)
			fail_msg("%s: too many exchanges", path);
		parse_request(&f->ex[f->nex++], data, len, path);
	} else if (strcmp(kind, "response") == 0) {
		if (e == NULL || e->head != NULL) {
			fail_msg("%s: a response must follow a request", path);
			return;
		}
		parse_response(e, data, len);
	} else if (strcmp(kind, "chunk") == 0) {
		add_step(e, STEP_CHUNK, (int)ms, data, len, path);
	} else if (strcmp(kind, "silence") == 0) {
		add_step(e, STEP_SILENCE, (int)ms, "", 0, path);
	} else if (strcmp(kind, "close") == 0) {
		add_step(e, STEP_CLOSE, 0, "", 0, path);
	} else {
		fail_msg("%s: unknown section '%s'", path, kind);
	}
}

/* The data of the section opened at open runs from data to stop, without
 * the newline before stop (the next section's line, or the file's end). */
static void finish_section(struct http_fixture *f, const char *open, const char *data,
                           const char *stop, const char *path)
{
	const char *open_end = memchr(open, '\n', (size_t)(stop - open));
	size_t len = (size_t)(stop - data);

	if (len > 0 && data[len - 1] == '\n')
		len--;
	parse_section(f, open, (size_t)((open_end ? open_end : stop) - open), data, len, path);
}

static void load(struct http_fixture *f, const char *path)
{
	const char *open = NULL, *data = NULL, *p, *end;
	char *text;
	long size;
	FILE *fp = fopen(path, "rb");

	if (fp == NULL)
		fail_msg("open '%s': %s", path, strerror(errno));
	fseek(fp, 0, SEEK_END);
	size = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	assert_true(size >= 0 && size < FIX_REQ_MAX);
	text = malloc((size_t)size + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)size, fp), (size_t)size);
	fclose(fp);
	text[size] = '\0';
	end = text + size;
	for (p = text; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;

		if (strncmp(p, "--- ", 4) == 0) {
			if (open != NULL)
				finish_section(f, open, data, p, path);
			open = p + 4;
			data = next;
		}
		p = next;
	}
	if (open != NULL)
		finish_section(f, open, data, end, path);
	free(text);
	if (f->nex == 0)
		fail_msg("%s: no exchanges", path);
	for (int i = 0; i < f->nex; i++) {
		if (f->ex[i].head == NULL)
			fail_msg("%s: request %d has no response", path, i + 1);
	}
}

/* --- Serving --- */

static int send_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Waits ms milliseconds; -1 early if the client hung up (or the fixture
 * is stopping: its shutdown() looks the same) or sent anything. */
static int wait_quietly(int fd, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = {fd, POLLIN, 0};
		long elapsed;
		int rc;

		clock_gettime(CLOCK_MONOTONIC, &t);
		elapsed = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (elapsed >= ms)
			return 0;
		rc = poll(&pfd, 1, (int)(ms - elapsed));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc != 0)
			return -1;
	}
}

/* Reads one request into rq, keeping bytes that follow it in buf. Returns
 * 0, or -1 when the connection ended or the request is unusable. */
static int read_request(struct http_fixture *f, int fd, char *buf, size_t *len, struct request *rq)
{
	char *head_end = NULL, *p, *save = NULL;
	size_t head_len, want = 0;

	memset(rq, 0, sizeof(*rq));
	for (;;) {
		ssize_t n;

		if (*len > 0) {
			buf[*len] = '\0';
			head_end = strstr(buf, "\r\n\r\n");
		}
		if (head_end != NULL)
			break;
		if (*len >= FIX_REQ_MAX)
			return -1;
		n = recv(fd, buf + *len, FIX_REQ_MAX - *len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		*len += (size_t)n;
	}
	head_len = (size_t)(head_end - buf) + 4;
	rq->head = dup_range(buf, head_len - 4);
	p = strtok_r(rq->head, "\r\n", &save);
	if (p == NULL || sscanf(p, "%15s %2047s", rq->method, rq->target) != 2) {
		record(f, "request line '%.200s' is malformed", p ? p : "");
		return -1;
	}
	snprintf(rq->line, sizeof(rq->line), "%s %s", rq->method, rq->target);
	while ((p = strtok_r(NULL, "\r\n", &save)) != NULL && rq->nh < FIX_MAX_REQ_HDRS) {
		char *colon = strchr(p, ':');

		if (colon == NULL)
			continue;
		*colon++ = '\0';
		while (*colon == ' ' || *colon == '\t')
			colon++;
		rq->names[rq->nh] = p;
		rq->values[rq->nh++] = colon;
	}
	for (int i = 0; i < rq->nh; i++) {
		if (strcasecmp(rq->names[i], "Transfer-Encoding") == 0) {
			record(f, "request '%s': a chunked body is not supported here", rq->line);
			return -1;
		}
		if (strcasecmp(rq->names[i], "Expect") == 0 &&
		    strcasecmp(rq->values[i], "100-continue") == 0)
			send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	}
	for (int i = 0; i < rq->nh; i++) {
		if (strcasecmp(rq->names[i], "Content-Length") == 0)
			want = strtoul(rq->values[i], NULL, 10);
	}
	if (want > FIX_REQ_MAX - head_len)
		return -1;
	while (*len < head_len + want) {
		ssize_t n = recv(fd, buf + *len, FIX_REQ_MAX - *len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		*len += (size_t)n;
	}
	rq->body = dup_range(buf + head_len, want);
	rq->body_len = want;
	*len -= head_len + want;
	memmove(buf, buf + head_len + want, *len);
	return 0;
}

static void request_release(struct request *rq)
{
	free(rq->head);
	free(rq->body);
	memset(rq, 0, sizeof(*rq));
}

static const char *find_header(const struct request *rq, const char *name, size_t name_len)
{
	for (int i = 0; i < rq->nh; i++) {
		if (strlen(rq->names[i]) == name_len &&
		    strncasecmp(rq->names[i], name, name_len) == 0)
			return rq->values[i];
	}
	return NULL;
}

/* Records every way rq differs from exchange n. */
static void check(struct http_fixture *f, int n, const struct request *rq)
{
	const struct exchange *e = &f->ex[n];

	if (strcmp(rq->method, e->method) != 0 || strcmp(rq->target, e->target) != 0)
		record(f, "request %d: is '%s', expected '%s %s'", n + 1, rq->line, e->method,
		       e->target);
	for (int i = 0; i < e->nwant; i++) {
		const char *colon = strchr(e->want[i], ':');
		const char *want = colon + 1;
		size_t name_len = (size_t)(colon - e->want[i]);
		const char *got = find_header(rq, e->want[i], name_len);

		while (*want == ' ')
			want++;
		if (got == NULL)
			record(f, "request %d (%s): header '%.*s' is missing, expected '%s'", n + 1,
			       rq->line, (int)name_len, e->want[i], want);
		else if (strcmp(got, want) != 0)
			record(f, "request %d (%s): header '%.*s' is '%s', expected '%s'", n + 1,
			       rq->line, (int)name_len, e->want[i], got, want);
	}
	for (int i = 0; i < e->nabsent; i++) {
		const char *got = find_header(rq, e->absent[i], strlen(e->absent[i]));

		if (got != NULL)
			record(f, "request %d (%s): header '%s' should be absent, is '%s'", n + 1,
			       rq->line, e->absent[i], got);
	}
	if (rq->body_len != e->body_len || memcmp(rq->body, e->body, e->body_len) != 0)
		record(f, "request %d (%s): body is '%.*s', expected '%.*s'", n + 1, rq->line,
		       FIX_QUOTE, rq->body, FIX_QUOTE, e->body);
}

static int send_chunk(int fd, const char *data, size_t len)
{
	char size[32];

	if (len == 0)
		return 0; /* an empty chunk would end the body */
	snprintf(size, sizeof(size), "%zx\r\n", len);
	if (send_all(fd, size, strlen(size)) < 0 || send_all(fd, data, len) < 0)
		return -1;
	return send_all(fd, "\r\n", 2);
}

/* Answers with exchange e. Returns -1 when the connection must end. */
static int answer(int fd, const struct exchange *e)
{
	int chunked = e->nsteps > 0 && !e->has_length;
	char extra[64] = "";

	if (chunked && !e->has_encoding)
		snprintf(extra, sizeof(extra), "Transfer-Encoding: chunked\r\n");
	else if (!chunked && !e->has_length)
		snprintf(extra, sizeof(extra), "Content-Length: %zu\r\n", e->resp_body_len);
	if (send_all(fd, e->head, strlen(e->head)) < 0 || send_all(fd, extra, strlen(extra)) < 0 ||
	    send_all(fd, "\r\n", 2) < 0)
		return -1;
	if (!chunked)
		return send_all(fd, e->resp_body, e->resp_body_len) < 0 || e->close_after ? -1 : 0;
	if (send_chunk(fd, e->resp_body, e->resp_body_len) < 0)
		return -1;
	for (int i = 0; i < e->nsteps; i++) {
		const struct step *s = &e->steps[i];

		if (s->kind == STEP_CLOSE || wait_quietly(fd, s->ms) < 0)
			return -1;
		if (s->kind == STEP_CHUNK && send_chunk(fd, s->data, s->len) < 0)
			return -1;
	}
	if (send_all(fd, "0\r\n\r\n", 5) < 0)
		return -1;
	return e->close_after ? -1 : 0;
}

static void *serve(void *p)
{
	struct conn *c = p;
	struct http_fixture *f = c->f;
	char *buf = malloc(FIX_REQ_MAX + 1);
	size_t len = 0;
	struct request rq;

	while (buf != NULL) {
		int n = -1, seq;

		if (read_request(f, c->fd, buf, &len, &rq) < 0) {
			request_release(&rq);
			break;
		}

		pthread_mutex_lock(&f->lock);
		seq = ++f->requests;
		if (f->next < f->nex)
			n = f->next++;
		pthread_mutex_unlock(&f->lock);
		if (n < 0) {
			static const char teapot[] =
			    "HTTP/1.1 418 Unexpected\r\nContent-Length: 0\r\n"
			    "Connection: close\r\n\r\n";

			record(f, "request %d (%s): none was expected", seq, rq.line);
			send_all(c->fd, teapot, sizeof(teapot) - 1);
			request_release(&rq);
			break;
		}
		check(f, n, &rq);
		request_release(&rq);
		if (answer(c->fd, &f->ex[n]) < 0)
			break;
	}
	free(buf);
	pthread_mutex_lock(&f->lock);
	close(c->fd);
	c->fd = -1;
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void *accept_loop(void *p)
{
	struct http_fixture *f = p;

	for (;;) {
		int fd = accept(f->lfd, NULL, NULL);
		struct conn *c = NULL;

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			break;
		pthread_mutex_lock(&f->lock);
		if (!f->stopping && f->nconns < FIX_MAX_CONNS) {
			c = &f->conns[f->nconns++];
			c->f = f;
			c->fd = fd;
			f->connections++;
		}
		pthread_mutex_unlock(&f->lock);
		if (c == NULL) {
			close(fd);
			continue;
		}
		if (pthread_create(&c->thread, NULL, serve, c) != 0) {
			record(f, "cannot start a connection thread");
			pthread_mutex_lock(&f->lock);
			close(fd);
			c->fd = -1;
			f->nconns--;
			pthread_mutex_unlock(&f->lock);
		}
	}
	return NULL;
}

/* --- The API --- */

/* fixtures/http next to this file's source, as the compiler was given it
 * (a path relative to the repository root, where the tests run). */
static void fixture_path(char *out, size_t n, const char *name)
{
	const char *src = __FILE__;
	const char *slash = strrchr(src, '/');

	if (slash == NULL)
		snprintf(out, n, "fixtures/http/%s", name);
	else
		snprintf(out, n, "%.*s/fixtures/http/%s", (int)(slash - src), src, name);
}

struct http_fixture *http_fixture_start(const char *name)
{
	struct sockaddr_in addr = {0};
	socklen_t alen = sizeof(addr);
	struct http_fixture *f = calloc(1, sizeof(*f));
	char path[4096];
	int one = 1;

	assert_non_null(f);
	f->mismatches = calloc(1, FIX_MISMATCH_MAX);
	assert_non_null(f->mismatches);
	pthread_mutex_init(&f->lock, NULL);
	fixture_path(path, sizeof(path), name);
	load(f, path);

	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(f->lfd, 16), 0);
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&addr, &alen), 0);
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", ntohs(addr.sin_port));
	assert_int_equal(pthread_create(&f->accept_thread, NULL, accept_loop, f), 0);
	return f;
}

static void exchange_free(struct exchange *e)
{
	for (int i = 0; i < e->nwant; i++)
		free(e->want[i]);
	for (int i = 0; i < e->nabsent; i++)
		free(e->absent[i]);
	for (int i = 0; i < e->nsteps; i++)
		free(e->steps[i].data);
	free(e->body);
	free(e->head);
	free(e->resp_body);
}

void http_fixture_stop(struct http_fixture *f)
{
	if (f == NULL)
		return;
	pthread_mutex_lock(&f->lock);
	f->stopping = 1;
	pthread_mutex_unlock(&f->lock);
	/* On Linux, shutdown() wakes a thread blocked in accept(). */
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->accept_thread, NULL);
	close(f->lfd);
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < f->nconns; i++) {
		if (f->conns[i].fd >= 0)
			shutdown(f->conns[i].fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&f->lock);
	for (int i = 0; i < f->nconns; i++)
		pthread_join(f->conns[i].thread, NULL);
	for (int i = 0; i < f->nex; i++)
		exchange_free(&f->ex[i]);
	pthread_mutex_destroy(&f->lock);
	free(f->mismatches);
	free(f->report);
	free(f);
}

const char *http_fixture_url(const struct http_fixture *f)
{
	return f->url;
}

int http_fixture_connections(struct http_fixture *f)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->connections;
	pthread_mutex_unlock(&f->lock);
	return n;
}

int http_fixture_requests(struct http_fixture *f)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->requests;
	pthread_mutex_unlock(&f->lock);
	return n;
}

const char *http_fixture_mismatches(struct http_fixture *f)
{
	size_t n = 0, cap;

	pthread_mutex_lock(&f->lock);
	cap = f->mlen + (size_t)(f->nex - f->next) * 2200 + 1;
	free(f->report);
	f->report = malloc(cap);
	assert_non_null(f->report);
	memcpy(f->report, f->mismatches, f->mlen);
	n = f->mlen;
	for (int i = f->next; i < f->nex; i++)
		n += (size_t)snprintf(f->report + n, cap - n, "request %d (%s %s): never came\n",
		                      i + 1, f->ex[i].method, f->ex[i].target);
	f->report[n] = '\0';
	pthread_mutex_unlock(&f->lock);
	return f->report;
}
