/* informer_path.c - the request paths of an informer's collection
 * (informer_path.h).
 */
#include "informer_path.h"

#include <stdio.h>
#include <string.h>

#include "err.h"

struct query {
	char *out;
	size_t len, cap;
	int full;
};

static void query_add(struct query *q, const char *name, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	int n = snprintf(q->out + q->len, q->cap - q->len, "%c%s=", strchr(q->out, '?') ? '&' : '?',
	                 name);

	if (n < 0 || (size_t)n >= q->cap - q->len) {
		q->full = 1;
		return;
	}
	q->len += (size_t)n;
	/* Values come from the config and from the server (versions, continue
	 * tokens): everything but RFC 3986's unreserved characters is escaped,
	 * so that none of them can add a parameter of its own. */
	for (const unsigned char *s = (const unsigned char *)value; *s != '\0'; s++) {
		int plain = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		            (*s >= '0' && *s <= '9') || strchr("-._~", *s) != NULL;

		if (q->cap - q->len < 4) {
			q->full = 1;
			return;
		}
		if (plain) {
			q->out[q->len++] = (char)*s;
		} else {
			q->out[q->len++] = '%';
			q->out[q->len++] = hex[*s >> 4];
			q->out[q->len++] = hex[*s & 15];
		}
	}
	q->out[q->len] = '\0';
}

static int query_begin(struct query *q, struct informer *inf, char *out, char *err)
{
	const struct informer_config *c = &inf->cfg;
	const char *ns = c->namespace != NULL && c->namespace[0] != '\0' ? c->namespace : NULL;

	q->out = out;
	q->len = 0;
	q->cap = KUBE_PATH_LEN;
	q->full = 0;
	if (kube_path(out, c->group != NULL ? c->group : "", c->version, ns, c->plural, NULL) < 0)
		return err_set(err, "informer %s: bad group, version, namespace or plural",
		               c->name);
	q->len = strlen(out);
	return 0;
}

static int query_end(struct query *q, struct informer *inf, char *err)
{
	if (q->full)
		return err_set(err, "informer %s: request path longer than %d bytes", inf->cfg.name,
		               KUBE_PATH_LEN);
	return 0;
}

/* The collection, one page: limit 0 for everything at once. */
int informer_path_list(struct informer *inf, int limit, const char *cont, char *out, char *err)
{
	struct query q;
	char num[16];

	if (query_begin(&q, inf, out, err) < 0)
		return -1;
	if (inf->cfg.label_selector != NULL && inf->cfg.label_selector[0] != '\0')
		query_add(&q, "labelSelector", inf->cfg.label_selector);
	if (limit > 0) {
		snprintf(num, sizeof(num), "%d", limit);
		query_add(&q, "limit", num);
	}
	if (cont != NULL)
		query_add(&q, "continue", cont);
	return query_end(&q, inf, err);
}

int informer_path_watch(struct informer *inf, const char *rv, int timeout_s, char *out, char *err)
{
	struct query q;
	char num[16];

	if (query_begin(&q, inf, out, err) < 0)
		return -1;
	snprintf(num, sizeof(num), "%d", timeout_s);
	query_add(&q, "watch", "true");
	query_add(&q, "allowWatchBookmarks", "true");
	query_add(&q, "resourceVersion", rv);
	query_add(&q, "timeoutSeconds", num);
	if (inf->cfg.label_selector != NULL && inf->cfg.label_selector[0] != '\0')
		query_add(&q, "labelSelector", inf->cfg.label_selector);
	return query_end(&q, inf, err);
}
