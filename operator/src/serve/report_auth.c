/* report_auth.c - TokenReviews of the chiefs' tokens, the decision, and
 * the cache of reviews; see report_auth.h. */
#include "report_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "json_in.h"
#include "json_out.h"
#include "pod_spec.h"

#define SA_PREFIX "system:serviceaccount:"

struct cached_review {
	struct token_review r;
	long long until_s;
};

/* --- The review --- */

cJSON *report_review_request(const char *token, const char *audience)
{
	cJSON *o = json_out_new(), *spec;

	json_out_str(o, "apiVersion", "authentication.k8s.io/v1");
	json_out_str(o, "kind", "TokenReview");
	spec = json_out_obj(o, "spec");
	json_out_str(spec, "token", token);
	json_out_str(json_out_arr(spec, "audiences"), NULL, audience);
	return o;
}

/* The first string of extra[key], a list of strings, into out (n). */
static void extra_first(char *out, size_t n, const cJSON *extra, const char *key)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(extra, key);
	const cJSON *first = cJSON_IsArray(list) ? cJSON_GetArrayItem(list, 0) : NULL;
	const char *s = first != NULL && cJSON_IsString(first) ? first->valuestring : "";

	out[0] = '\0';
	if (strlen(s) < n)
		memcpy(out, s, strlen(s) + 1);
}

int report_review_parse(struct token_review *r, const cJSON *answer, const char *audience,
                        char *err)
{
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(answer, "status");
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(status, "user");
	const cJSON *auds = cJSON_GetObjectItemCaseSensitive(status, "audiences");
	const cJSON *extra = cJSON_GetObjectItemCaseSensitive(user, "extra");
	const char *kind = json_in_str(answer, "kind"), *name = json_in_str(user, "username");
	const cJSON *it;

	memset(r, 0, sizeof(*r));
	if (kind == NULL || strcmp(kind, "TokenReview") != 0 || !cJSON_IsObject(status))
		return err_set(err, "the answer to a TokenReview is no TokenReview");
	json_in_copy_cut(r->error, sizeof(r->error), json_in_str(status, "error"));
	r->authenticated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status, "authenticated"));
	if (!cJSON_IsArray(auds))
		auds = NULL;
	cJSON_ArrayForEach(it, auds)
	{
		if (cJSON_IsString(it) && strcmp(it->valuestring, audience) == 0)
			r->audience_ok = 1;
	}
	if (name != NULL && strlen(name) < sizeof(r->username))
		memcpy(r->username, name, strlen(name) + 1);
	extra_first(r->pod_name, sizeof(r->pod_name), extra, REPORT_EXTRA_POD_NAME);
	extra_first(r->pod_uid, sizeof(r->pod_uid), extra, REPORT_EXTRA_POD_UID);
	return 0;
}

/* --- The decision --- */

/* Whether username is a ServiceAccount's of namespace ns. */
static int service_account_of(const char *username, const char *ns)
{
	size_t p = sizeof(SA_PREFIX) - 1, n = strlen(ns);

	return strncmp(username, SA_PREFIX, p) == 0 && strncmp(username + p, ns, n) == 0 &&
	       username[p + n] == ':' && username[p + n + 1] != '\0';
}

enum report_verdict report_decide(const struct token_review *r, const struct job *j,
                                  const cJSON *pod, char *why)
{
	struct pod_view v;
	char ignored[ERR_LEN];

	if (!r->authenticated) {
		err_set(why, "the token is not valid%s%s", r->error[0] ? ": " : "", r->error);
		return REPORT_UNAUTHORIZED;
	}
	if (!r->audience_ok) {
		err_set(why, "the token is not for the audience of the operator");
		return REPORT_UNAUTHORIZED;
	}
	if (!service_account_of(r->username, j->ns)) {
		err_set(why, "'%s' is not a service account of namespace '%s'", r->username, j->ns);
		return REPORT_FORBIDDEN;
	}
	if (r->pod_name[0] == '\0' || r->pod_uid[0] == '\0') {
		err_set(why, "the token of '%s' is not bound to a pod", r->username);
		return REPORT_FORBIDDEN;
	}
	if (pod == NULL || !pod_spec_owned(pod, j) || pod_view_parse(&v, j, pod, ignored) < 0 ||
	    strcmp(v.uid, r->pod_uid) != 0) {
		err_set(why, "pod '%s' is not a worker of job '%s'", r->pod_name, j->name);
		return REPORT_FORBIDDEN;
	}
	if (v.index != 0) {
		err_set(why, "pod '%s' is worker %d of job '%s', not its chief", r->pod_name,
		        v.index, j->name);
		return REPORT_FORBIDDEN;
	}
	return REPORT_ALLOW;
}

/* --- The cache --- */

void report_reviews_init(struct report_reviews *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	strmap_init(&c->by_token);
}

void report_reviews_release(struct report_reviews *c)
{
	if (c == NULL || c->by_token.slots == NULL)
		return;
	strmap_release(&c->by_token, free);
	pthread_mutex_destroy(&c->lock);
	memset(c, 0, sizeof(*c));
}

int report_reviews_get(struct report_reviews *c, const char *token, long long now_s,
                       struct token_review *r)
{
	char key[DIGEST_HEX_LEN];
	struct cached_review *e;
	int hit = 0;

	digest_sha256_hex(token, strlen(token), key);
	pthread_mutex_lock(&c->lock);
	e = strmap_get(&c->by_token, key);
	if (e != NULL && now_s < e->until_s) {
		*r = e->r;
		hit = 1;
	} else if (e != NULL) {
		free(strmap_remove(&c->by_token, key));
	}
	if (hit)
		c->hits++;
	else
		c->misses++;
	pthread_mutex_unlock(&c->lock);
	return hit;
}

void report_reviews_put(struct report_reviews *c, const char *token, long long now_s,
                        const struct token_review *r)
{
	char key[DIGEST_HEX_LEN];
	struct cached_review *e = xcalloc(1, sizeof(*e));

	digest_sha256_hex(token, strlen(token), key);
	e->r = *r;
	e->until_s = now_s + (r->authenticated ? REPORT_REVIEW_TTL_S : REPORT_REFUSED_TTL_S);
	pthread_mutex_lock(&c->lock);
	if (c->by_token.len >= REPORT_REVIEW_CACHE_MAX) {
		/* A flood of distinct tokens: start again rather than grow. */
		strmap_release(&c->by_token, free);
		strmap_init(&c->by_token);
	}
	free(strmap_put(&c->by_token, key, e));
	pthread_mutex_unlock(&c->lock);
}
