/* kube_curl.c - the curl backend of the API client (kube_curl.h).
 *
 * Each thread that uses the client gets an easy handle and a multi handle
 * of its own (a pthread key), made on first use. A transfer runs on the
 * thread's multi handle rather than in curl_easy_perform(), so that the
 * loop can end it when kube_api_stop() wakes the multi handle, or when a
 * watch has been silent for its idle time-out, to the millisecond.
 *
 * One share handle holds the DNS cache and the TLS sessions for all
 * threads. Connections are kept per thread, in the thread's multi handle,
 * not in the share: libcurl 7.88 documents a shared connection cache as
 * unsafe across concurrent threads (KNOWN_BUGS "A shared connection cache
 * is not thread-safe", curl issue #4915). A thread's requests reuse its
 * connection; each watch thread holds its own, as it would anyway.
 *
 * A thread's handles are freed when it exits (the key's destructor), and
 * the rest by kube_api_release(), which must come after every thread that
 * used the client has returned from it.
 */
#include "kube_curl.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "err.h"

/* A response body larger than this is refused: the API server's largest
 * list is far smaller, and a hostile server must not exhaust memory. */
#define CURL_BODY_MAX (64u << 20)
/* The body of a watch that was refused (a Status). */
#define CURL_ERROR_BODY_MAX (1u << 20)
#define CONNECT_TIMEOUT_MS  10000
/* The longest the transfer loop sleeps when nothing happens: only a net,
 * since data, libcurl's own timers, the idle deadline and stop
 * (curl_multi_wakeup) all wake it sooner. An idle operator with five
 * watches open must not wake on its own. */
#define POLL_MS            60000
#define KEEPALIVE_IDLE_S   30
#define KEEPALIVE_INTVL_S  10
#define RETRY_AFTER_MAX_S  3600
#define HEADER_LINE_MAX    256
#define DEFAULT_USER_AGENT "mwj-operator"

struct curl_backend;

/* A thread's handles; linked into the backend's list so that stop can
 * wake them and release can free them. */
struct curl_thread {
	CURL *easy;
	CURLM *multi;
	struct curl_backend *b;
	struct curl_thread *prev, *next;
};

struct curl_backend {
	struct kube_config *cfg; /* borrowed: outlives the backend */
	char *user_agent;
	char base[KUBE_CONFIG_PATH_LEN]; /* the server URL without a trailing '/' */
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	pthread_key_t key; /* -> struct curl_thread */
	pthread_mutex_t threads_lock;
	struct curl_thread *threads;
	int stopping;
};

/* One transfer's state, shared with libcurl's callbacks. */
struct xfer {
	CURL *easy;
	char *buf; /* the body, NUL-terminated; NULL until the first byte */
	size_t len, cap, max;
	int too_big, no_memory;
	int retry_after_s;
	kube_stream_fn fn; /* a watch: a 200 body goes here, not into buf */
	void *ctx;
	int fn_stopped;
	long long last_data_ms; /* for the idle time-out */
	char errbuf[CURL_ERROR_SIZE];
};

enum xfer_end { XFER_DONE, XFER_STOPPED, XFER_IDLE, XFER_FAILED };

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int is_stopping(struct curl_backend *b)
{
	return __atomic_load_n(&b->stopping, __ATOMIC_ACQUIRE) != 0;
}

/* --- The share's locks --- */

static void share_lock(CURL *easy, curl_lock_data data, curl_lock_access access, void *p)
{
	struct curl_backend *b = p;

	(void)easy;
	(void)access;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&b->share_locks[data]);
}

static void share_unlock(CURL *easy, curl_lock_data data, void *p)
{
	struct curl_backend *b = p;

	(void)easy;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&b->share_locks[data]);
}

/* --- Per-thread handles --- */

static void thread_free(struct curl_thread *t)
{
	curl_easy_cleanup(t->easy);
	curl_multi_cleanup(t->multi);
	free(t);
}

/* The key's destructor: a thread that used the client has exited. */
static void thread_gone(void *p)
{
	struct curl_thread *t = p;
	struct curl_backend *b = t->b;

	pthread_mutex_lock(&b->threads_lock);
	if (t->prev != NULL)
		t->prev->next = t->next;
	else
		b->threads = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	pthread_mutex_unlock(&b->threads_lock);
	thread_free(t);
}

static struct curl_thread *thread_handles(struct curl_backend *b, char *err)
{
	struct curl_thread *t = pthread_getspecific(b->key);

	if (t != NULL)
		return t;
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		err_set(err, "out of memory");
		return NULL;
	}
	t->b = b;
	t->easy = curl_easy_init();
	t->multi = curl_multi_init();
	if (t->easy == NULL || t->multi == NULL ||
	    curl_easy_setopt(t->easy, CURLOPT_SHARE, b->share) != CURLE_OK ||
	    pthread_setspecific(b->key, t) != 0) {
		thread_free(t);
		err_set(err, "cannot set up a curl handle");
		return NULL;
	}
	pthread_mutex_lock(&b->threads_lock);
	t->next = b->threads;
	if (b->threads != NULL)
		b->threads->prev = t;
	b->threads = t;
	pthread_mutex_unlock(&b->threads_lock);
	return t;
}

/* --- Callbacks --- */

/* Appends to the body, up to x->max bytes; returns -1 past the cap. */
static int body_append(struct xfer *x, const char *data, size_t len)
{
	if (len > x->max - x->len) {
		x->too_big = 1;
		return -1;
	}
	if (x->buf == NULL || x->cap - x->len < len + 1) {
		size_t cap = x->cap ? x->cap : 16384;
		char *p;

		while (cap - x->len < len + 1)
			cap *= 2;
		if (cap > x->max + 1)
			cap = x->max + 1;
		p = realloc(x->buf, cap);
		if (p == NULL) {
			x->no_memory = 1;
			return -1;
		}
		x->buf = p;
		x->cap = cap;
	}
	memcpy(x->buf + x->len, data, len);
	x->len += len;
	x->buf[x->len] = '\0';
	return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *p)
{
	struct xfer *x = p;
	size_t len = size * nmemb;
	long status = 0;

	x->last_data_ms = now_ms();
	if (x->fn != NULL)
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status == 200) {
		if (len > 0 && x->fn(data, len, x->ctx) < 0) {
			x->fn_stopped = 1;
			return 0;
		}
		return len;
	}
	return body_append(x, data, len) < 0 ? 0 : len;
}

/* Retry-After: delay-seconds or an HTTP-date (RFC 9110 10.2.3); anything
 * else is ignored. */
static int parse_retry_after(const char *v)
{
	long long secs = 0;
	const char *p = v;
	time_t when;

	if (*p >= '0' && *p <= '9') {
		for (; *p >= '0' && *p <= '9'; p++) {
			if (secs < RETRY_AFTER_MAX_S)
				secs = secs * 10 + (*p - '0');
		}
		if (*p != '\0')
			return -1;
		return secs > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (int)secs;
	}
	when = curl_getdate(v, NULL);
	if (when == (time_t)-1)
		return -1;
	secs = (long long)(when - time(NULL));
	if (secs < 0)
		return 0;
	return secs > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (int)secs;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *p)
{
	static const char name[] = "retry-after:";
	struct xfer *x = p;
	size_t len = size * nmemb;
	char value[HEADER_LINE_MAX];
	size_t start = sizeof(name) - 1, end = len;

	x->last_data_ms = now_ms();
	/* A new status line: an interim 100 Continue's headers do not count. */
	if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		x->retry_after_s = -1;
		return len;
	}
	if (len <= start || strncasecmp(data, name, start) != 0)
		return len;
	while (start < end && (data[start] == ' ' || data[start] == '\t'))
		start++;
	while (end > start && (data[end - 1] == '\r' || data[end - 1] == '\n' ||
	                       data[end - 1] == ' ' || data[end - 1] == '\t'))
		end--;
	if (end - start < sizeof(value)) {
		memcpy(value, data + start, end - start);
		value[end - start] = '\0';
		x->retry_after_s = parse_retry_after(value);
	}
	return len;
}

/* --- Setting a transfer up --- */

static int has_unsafe_byte(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p <= 0x20 || *p == 0x7F)
			return 1;
	}
	return 0;
}

static int add_header(struct curl_slist **list, const char *line)
{
	struct curl_slist *l = curl_slist_append(*list, line);

	if (l == NULL)
		return -1;
	*list = l;
	return 0;
}

/* The token without the blanks around it (a token file often ends in a
 * newline); NULL if what is left has a space or control character, which
 * would break the header line. */
static const char *clean_token(char *token)
{
	char *end = token + strlen(token);

	while (*token == ' ' || *token == '\t' || *token == '\r' || *token == '\n')
		token++;
	while (end > token &&
	       (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
		*--end = '\0';
	return has_unsafe_byte(token) ? NULL : token;
}

/* The request's headers. The token is read for every request, so that a
 * rotated one is used at once; the copies on the stack are wiped (the one
 * in the list libcurl frees is not ours to wipe). */
static int build_headers(struct curl_backend *b, const char *content_type, struct curl_slist **out,
                         char *err)
{
	char line[KUBE_CONFIG_TOKEN_LEN + 32];
	char token[KUBE_CONFIG_TOKEN_LEN];
	char why[ERR_LEN];
	struct curl_slist *h = NULL;
	const char *tok;
	int rc = -1;

	*out = NULL;
	token[0] = '\0';
	line[0] = '\0';
	/* On a failed read the last token comes back too; only none at all
	 * is an error. */
	if (kube_config_token(b->cfg, token, sizeof(token), why) < 0 && token[0] == '\0') {
		err_set(err, "bearer token: %s", why);
		goto out;
	}
	token[sizeof(token) - 1] = '\0';
	tok = clean_token(token);
	if (tok == NULL) {
		err_set(err, "bearer token: has a space or control character");
		goto out;
	}
	/* libcurl waits up to a second for a 100 Continue before sending a
	 * large body; the API server never asks for one. */
	rc = add_header(&h, "Accept: application/json");
	if (rc == 0)
		rc = add_header(&h, "Expect:");
	if (rc == 0 && content_type != NULL) {
		snprintf(line, sizeof(line), "Content-Type: %s", content_type);
		rc = add_header(&h, line);
	}
	if (rc == 0 && tok[0] != '\0') {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", tok);
		rc = add_header(&h, line);
	}
	if (rc < 0) {
		err_set(err, "out of memory");
		goto out;
	}
	*out = h;
	h = NULL;
out:
	curl_slist_free_all(h);
	explicit_bzero(line, sizeof(line));
	explicit_bzero(token, sizeof(token));
	return rc;
}

/* TLS as the kubeconfig says. Blobs are not copied: cfg outlives us. */
static CURLcode set_tls(CURL *e, const struct kube_config *cfg)
{
	CURLcode rc = CURLE_OK;

	if (cfg->insecure) {
		rc = curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (cfg->ca_pem != NULL) {
		struct curl_blob blob = {cfg->ca_pem, cfg->ca_pem_len, CURL_BLOB_NOCOPY};

		rc = curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
	} else if (cfg->ca_file[0] != '\0') {
		rc = curl_easy_setopt(e, CURLOPT_CAINFO, cfg->ca_file);
	}
	if (rc == CURLE_OK && cfg->cert_pem != NULL) {
		struct curl_blob blob = {cfg->cert_pem, cfg->cert_pem_len, CURL_BLOB_NOCOPY};

		rc = curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &blob);
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
	} else if (rc == CURLE_OK && cfg->cert_file[0] != '\0') {
		rc = curl_easy_setopt(e, CURLOPT_SSLCERT, cfg->cert_file);
	}
	if (rc == CURLE_OK && cfg->key_pem != NULL) {
		struct curl_blob blob = {cfg->key_pem, cfg->key_pem_len, CURL_BLOB_NOCOPY};

		rc = curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &blob);
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	} else if (rc == CURLE_OK && cfg->key_file[0] != '\0') {
		rc = curl_easy_setopt(e, CURLOPT_SSLKEY, cfg->key_file);
	}
	return rc;
}

/* The method and body. libcurl sends POSTFIELDS with any custom method. */
static CURLcode set_method(CURL *e, const char *method, const char *body, size_t body_len)
{
	CURLcode rc = CURLE_OK;

	if (body != NULL) {
		rc = curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	}
	if (rc == CURLE_OK && strcmp(method, "GET") == 0 && body == NULL)
		rc = curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	else if (rc == CURLE_OK && strcmp(method, "POST") != 0)
		rc = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	return rc;
}

/* Everything but the method: URL, headers, callbacks, time-outs, TLS. */
static int setup(struct curl_backend *b, struct curl_thread *t, struct xfer *x, const char *path,
                 const struct curl_slist *headers, long timeout_ms, char *err)
{
	char url[KUBE_CONFIG_PATH_LEN + KUBE_PATH_LEN];
	CURL *e = t->easy;
	CURLcode rc;
	int len;

	if (path == NULL || path[0] != '/' || has_unsafe_byte(path))
		return err_set(err, "bad request path");
	len = snprintf(url, sizeof(url), "%s%s", b->base, path);
	if (len < 0 || (size_t)len >= sizeof(url))
		return err_set(err, "request path too long");
	curl_easy_reset(e);
	x->easy = e;
	x->retry_after_s = -1;
	x->last_data_ms = now_ms();
	rc = curl_easy_setopt(e, CURLOPT_URL, url);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_USERAGENT, b->user_agent);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
		                      timeout_ms > 0 && timeout_ms < CONNECT_TIMEOUT_MS
		                          ? timeout_ms
		                          : (long)CONNECT_TIMEOUT_MS);
	if (rc == CURLE_OK && timeout_ms > 0)
		rc = curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	/* Keep-alive probes notice a peer that vanished without a word (a
	 * node gone, a NAT entry dropped) under a long watch. */
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, (long)KEEPALIVE_IDLE_S);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, (long)KEEPALIVE_INTVL_S);
	if (rc == CURLE_OK)
		rc = set_tls(e, b->cfg);
	if (rc != CURLE_OK)
		return err_set(err, "curl option: %s", curl_easy_strerror(rc));
	return 0;
}

/* --- Running a transfer --- */

/* Drives the transfer on the thread's multi handle until it ends, the
 * client is stopped, or (idle_ms > 0) nothing arrived for idle_ms. *result
 * is libcurl's verdict when the transfer ended by itself. */
static enum xfer_end run(struct curl_backend *b, struct curl_thread *t, struct xfer *x, int idle_ms,
                         CURLcode *result)
{
	enum xfer_end end = XFER_FAILED;
	CURLMcode mc;

	*result = CURLE_OK;
	if (curl_multi_add_handle(t->multi, t->easy) != CURLM_OK)
		return XFER_FAILED;
	for (;;) {
		int running = 0, msgs = 0, wait = POLL_MS;
		CURLMsg *msg;

		mc = curl_multi_perform(t->multi, &running);
		if (mc != CURLM_OK)
			break;
		msg = curl_multi_info_read(t->multi, &msgs);
		if (msg != NULL && msg->msg == CURLMSG_DONE) {
			*result = msg->data.result;
			end = XFER_DONE;
			break;
		}
		if (is_stopping(b)) {
			end = XFER_STOPPED;
			break;
		}
		if (idle_ms > 0) {
			long long left = x->last_data_ms + idle_ms - now_ms();

			if (left <= 0) {
				end = XFER_IDLE;
				break;
			}
			if (left < wait)
				wait = (int)left;
		}
		/* curl_multi_poll also wakes for libcurl's own timers and for
		 * curl_multi_wakeup() from kube_curl's stop. */
		mc = curl_multi_poll(t->multi, NULL, 0, wait, NULL);
		if (mc != CURLM_OK)
			break;
	}
	/* Removing a transfer that has not ended aborts it and closes its
	 * connection. */
	curl_multi_remove_handle(t->multi, t->easy);
	return end;
}

/* The message for a transfer that did not end in a response. */
static int xfer_error(const struct xfer *x, enum xfer_end end, CURLcode result, int idle_ms,
                      char *err)
{
	if (end == XFER_STOPPED)
		return err_set(err, "client stopping");
	if (end == XFER_IDLE)
		return err_set(err, "no data for %d ms", idle_ms);
	if (end == XFER_FAILED)
		return err_set(err, "curl multi interface failed");
	if (x->too_big || result == CURLE_FILESIZE_EXCEEDED)
		return err_set(err, "response body larger than %zu bytes", x->max);
	if (x->no_memory)
		return err_set(err, "out of memory reading the response");
	if (x->errbuf[0] != '\0')
		return err_set(err, "%s", x->errbuf);
	return err_set(err, "%s", curl_easy_strerror(result));
}

static int curl_round_trip(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                           char *err)
{
	struct curl_backend *b = api->impl;
	struct curl_slist *headers = NULL;
	const char *content_type = NULL;
	struct xfer x = {0};
	struct curl_thread *t;
	enum xfer_end end;
	CURLcode result;
	int rc = -1;

	memset(resp, 0, sizeof(*resp));
	resp->retry_after_s = -1;
	if (is_stopping(b))
		return err_set(err, "client stopping");
	if (req->method == NULL ||
	    (strcmp(req->method, "GET") != 0 && strcmp(req->method, "POST") != 0 &&
	     strcmp(req->method, "PUT") != 0 && strcmp(req->method, "PATCH") != 0 &&
	     strcmp(req->method, "DELETE") != 0))
		return err_set(err, "unsupported method");
	t = thread_handles(b, err);
	if (t == NULL)
		return -1;
	x.max = CURL_BODY_MAX;
	if (req->body != NULL)
		content_type = req->content_type ? req->content_type : "application/json";
	if (build_headers(b, content_type, &headers, err) < 0 ||
	    setup(b, t, &x, req->path, headers,
	          req->timeout_ms > 0 ? req->timeout_ms : KUBE_DEFAULT_TIMEOUT_MS, err) < 0)
		goto out;
	/* A declared length over the cap is refused before a byte is read. */
	if (set_method(t->easy, req->method, req->body, req->body_len) != CURLE_OK ||
	    curl_easy_setopt(t->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)x.max) != CURLE_OK) {
		err_set(err, "curl option for %s", req->method);
		goto out;
	}
	end = run(b, t, &x, 0, &result);
	if (end != XFER_DONE || result != CURLE_OK) {
		xfer_error(&x, end, result, 0, err);
		goto out;
	}
	curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &resp->status);
	if (x.buf == NULL && body_append(&x, "", 0) < 0) {
		err_set(err, "out of memory reading the response");
		goto out;
	}
	resp->body = x.buf;
	resp->body_len = x.len;
	resp->retry_after_s = x.retry_after_s;
	x.buf = NULL;
	rc = 0;
out:
	free(x.buf);
	/* The handle lives on: it must not point at freed headers. */
	curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	return rc;
}

static int curl_stream(struct kube_api *api, const char *path, int idle_ms, kube_stream_fn fn,
                       void *ctx, long *status, char **resp_body, char *err)
{
	struct curl_backend *b = api->impl;
	struct curl_slist *headers = NULL;
	struct xfer x = {0};
	struct curl_thread *t;
	enum xfer_end end;
	CURLcode result;
	int rc = -1;

	*status = 0;
	*resp_body = NULL;
	if (is_stopping(b))
		return err_set(err, "client stopping");
	t = thread_handles(b, err);
	if (t == NULL)
		return -1;
	x.max = CURL_ERROR_BODY_MAX;
	x.fn = fn;
	x.ctx = ctx;
	/* No overall time-out: the server ends a watch (timeoutSeconds), and
	 * the idle time-out catches one that went silent. */
	if (build_headers(b, NULL, &headers, err) < 0 || setup(b, t, &x, path, headers, 0, err) < 0)
		goto out;
	end = run(b, t, &x, idle_ms, &result);
	curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, status);
	if (end == XFER_DONE && (result == CURLE_OK || x.fn_stopped)) {
		if (*status != 200) {
			*resp_body = x.buf ? x.buf : strdup("");
			x.buf = NULL;
		}
		rc = 0;
		goto out;
	}
	xfer_error(&x, end, result, idle_ms, err);
out:
	free(x.buf);
	curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	return rc;
}

static void curl_stop(struct kube_api *api)
{
	struct curl_backend *b = api->impl;

	if (b == NULL)
		return;
	__atomic_store_n(&b->stopping, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&b->threads_lock);
	for (struct curl_thread *t = b->threads; t != NULL; t = t->next)
		curl_multi_wakeup(t->multi);
	pthread_mutex_unlock(&b->threads_lock);
}

static void curl_resume(struct kube_api *api)
{
	struct curl_backend *b = api->impl;

	if (b != NULL)
		__atomic_store_n(&b->stopping, 0, __ATOMIC_RELEASE);
}

/* Every thread must be done with the client: their handles are freed
 * here, and a thread that exits later no longer touches them. */
static void curl_release(struct kube_api *api)
{
	struct curl_backend *b = api->impl;

	if (b == NULL)
		return;
	pthread_key_delete(b->key);
	while (b->threads != NULL) {
		struct curl_thread *t = b->threads;

		b->threads = t->next;
		thread_free(t);
	}
	curl_share_cleanup(b->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&b->share_locks[i]);
	pthread_mutex_destroy(&b->threads_lock);
	free(b->user_agent);
	free(b);
	api->impl = NULL;
}

static const struct kube_api_ops curl_ops = {
    "curl", curl_round_trip, curl_stream, curl_stop, curl_release, curl_resume,
};

/* The server URL, checked and without a trailing '/'. */
static int set_base(struct curl_backend *b, const char *server, char *err)
{
	size_t len = strlen(server);
	size_t scheme;

	if (strncasecmp(server, "https://", 8) == 0)
		scheme = 8;
	else if (strncasecmp(server, "http://", 7) == 0)
		scheme = 7;
	else
		return err_set(err, "server '%.200s' is no https:// or http:// URL", server);
	while (len > scheme && server[len - 1] == '/')
		len--;
	if (len == scheme || has_unsafe_byte(server))
		return err_set(err, "server '%.200s' is no https:// or http:// URL", server);
	if (len >= sizeof(b->base))
		return err_set(err, "server URL too long");
	memcpy(b->base, server, len);
	b->base[len] = '\0';
	return 0;
}

int kube_curl_init(struct kube_api *api, struct kube_config *cfg, const char *user_agent, char *err)
{
	struct curl_backend *b;
	CURLSHcode sc;

	memset(api, 0, sizeof(*api));
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return err_set(err, "out of memory");
	b->cfg = cfg;
	if (set_base(b, cfg->server, err) < 0) {
		free(b);
		return -1;
	}
	b->user_agent = strdup(user_agent ? user_agent : DEFAULT_USER_AGENT);
	b->share = curl_share_init();
	if (b->user_agent == NULL || b->share == NULL) {
		curl_share_cleanup(b->share);
		free(b->user_agent);
		free(b);
		return err_set(err, "cannot set up libcurl (was curl_global_init called?)");
	}
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&b->share_locks[i], NULL);
	pthread_mutex_init(&b->threads_lock, NULL);
	sc = curl_share_setopt(b->share, CURLSHOPT_LOCKFUNC, share_lock);
	if (sc == CURLSHE_OK)
		sc = curl_share_setopt(b->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	if (sc == CURLSHE_OK)
		sc = curl_share_setopt(b->share, CURLSHOPT_USERDATA, b);
	if (sc == CURLSHE_OK)
		sc = curl_share_setopt(b->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	if (sc == CURLSHE_OK)
		sc = curl_share_setopt(b->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	if (sc != CURLSHE_OK || pthread_key_create(&b->key, thread_gone) != 0) {
		curl_share_cleanup(b->share);
		for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
			pthread_mutex_destroy(&b->share_locks[i]);
		pthread_mutex_destroy(&b->threads_lock);
		free(b->user_agent);
		free(b);
		return err_set(err, "cannot set up the curl share: %s", curl_share_strerror(sc));
	}
	api->ops = &curl_ops;
	api->impl = b;
	return 0;
}
