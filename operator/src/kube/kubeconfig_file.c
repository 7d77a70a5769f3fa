/* kubeconfig_file.c - reading one kubeconfig file as client-go decodes it
 * (see kubeconfig_file.h). */
#include "kubeconfig_file.h"

#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "base64.h"

/* Entries per list. A real kubeconfig has a handful; the bound keeps the
 * duplicate-name check (quadratic) cheap on a hostile file. */
#define MAX_ENTRIES 4096
/* How much of a name a message quotes. */
#define NAME_QUOTE 128

/* --- What client-go's decoder checks in every entry --- */

enum field_type { FIELD_STRING, FIELD_BOOL, FIELD_DATA };

struct field {
	const char *key;
	enum field_type type;
};

/* The typed fields of clientcmd/api/v1's Cluster, Context and AuthInfo;
 * exec and auth-provider are structures that kubeconfig.c refuses. */
static const struct field CLUSTER_FIELDS[] = {
    {"server", FIELD_STRING},
    {"tls-server-name", FIELD_STRING},
    {"insecure-skip-tls-verify", FIELD_BOOL},
    {"certificate-authority", FIELD_STRING},
    {"certificate-authority-data", FIELD_DATA},
    {"proxy-url", FIELD_STRING},
    {"disable-compression", FIELD_BOOL},
};
static const struct field CONTEXT_FIELDS[] = {
    {"cluster", FIELD_STRING},
    {"user", FIELD_STRING},
    {"namespace", FIELD_STRING},
};
static const struct field USER_FIELDS[] = {
    {"client-certificate", FIELD_STRING},
    {"client-certificate-data", FIELD_DATA},
    {"client-key", FIELD_STRING},
    {"client-key-data", FIELD_DATA},
    {"token", FIELD_STRING},
    {"tokenFile", FIELD_STRING},
    {"as", FIELD_STRING},
    {"as-uid", FIELD_STRING},
    {"username", FIELD_STRING},
    {"password", FIELD_STRING},
};

struct list_spec {
	const char *list, *kind;
	const struct field *fields;
	size_t nfields;
};

#define SPEC(list, kind, fields)                                                                   \
	{                                                                                          \
		(list), (kind), (fields), sizeof(fields) / sizeof((fields)[0])                     \
	}
static const struct list_spec LISTS[] = {
    SPEC("clusters", "cluster", CLUSTER_FIELDS),
    SPEC("contexts", "context", CONTEXT_FIELDS),
    SPEC("users", "user", USER_FIELDS),
};

/* --- Nodes --- */

static yaml_node_t *node_at(struct kubeconfig_file *f, int index)
{
	return yaml_document_get_node(&f->doc, index);
}

static int scalar_equals(const yaml_node_t *n, const char *s)
{
	size_t len = strlen(s);

	return n != NULL && n->type == YAML_SCALAR_NODE && n->data.scalar.length == len &&
	       memcmp(n->data.scalar.value, s, len) == 0;
}

/* YAML's null, which the decoder gives a field as its zero value. */
static int is_null(const yaml_node_t *n)
{
	static const char *const NULLS[] = {"", "~", "null", "Null", "NULL"};

	if (n == NULL)
		return 1;
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	for (size_t i = 0; i < sizeof(NULLS) / sizeof(NULLS[0]); i++) {
		if (scalar_equals(n, NULLS[i]))
			return 1;
	}
	return 0;
}

/* The value of key in map (NULL when absent) and in *count how many times
 * the key is there: a key given twice is ambiguous, so callers refuse it. */
static yaml_node_t *map_get(struct kubeconfig_file *f, const yaml_node_t *map, const char *key,
                            int *count)
{
	yaml_node_t *found = NULL;

	*count = 0;
	if (map == NULL || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		if (!scalar_equals(node_at(f, p->key), key))
			continue;
		if (++*count == 1)
			found = node_at(f, p->value);
	}
	return found;
}

static const char *node_kind(const yaml_node_t *n)
{
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	return "a scalar";
}

/* --- Messages --- */

int kubeconfig_entry_fail(const struct kubeconfig_entry *e, const char *key, char *err,
                          const char *fmt, ...)
{
	char msg[ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		msg[0] = '\0';
	va_end(ap);
	if (key == NULL)
		return err_set(err, "'%s': %s[%d].%s: %s", e->f->path, e->list, e->index, e->kind,
		               msg);
	return err_set(err, "'%s': %s[%d].%s.%s: %s", e->f->path, e->list, e->index, e->kind, key,
	               msg);
}

/* --- Fields --- */

/* The scalar value of key: 1 with *out, 0 when absent or null, -1 when it
 * is given twice or is not a scalar. */
static int entry_scalar(const struct kubeconfig_entry *e, const char *key, yaml_node_t **out,
                        char *err)
{
	int count = 0;
	yaml_node_t *n = map_get(e->f, e->body, key, &count);

	*out = NULL;
	if (count > 1) {
		kubeconfig_entry_fail(e, key, err, "given %d times", count);
		return -1;
	}
	if (is_null(n))
		return 0;
	if (n->type != YAML_SCALAR_NODE) {
		kubeconfig_entry_fail(e, key, err, "%s, not a string", node_kind(n));
		return -1;
	}
	*out = n;
	return 1;
}

/* A string field's node, refusing the NUL bytes that YAML's "\0" can put
 * where C strings cannot hold them. */
static int entry_text(const struct kubeconfig_entry *e, const char *key, yaml_node_t **out,
                      char *err)
{
	int rc = entry_scalar(e, key, out, err);

	if (rc == 1 && memchr((*out)->data.scalar.value, '\0', (*out)->data.scalar.length))
		return kubeconfig_entry_fail(e, key, err, "contains a NUL byte");
	return rc;
}

int kubeconfig_entry_has(const struct kubeconfig_entry *e, const char *key)
{
	int count = 0;

	return !is_null(map_get(e->f, e->body, key, &count));
}

int kubeconfig_entry_string(const struct kubeconfig_entry *e, const char *key, char *out, size_t n,
                            char *err)
{
	yaml_node_t *node = NULL;
	int rc = entry_text(e, key, &node, err);

	out[0] = '\0';
	if (rc <= 0)
		return rc;
	if (node->data.scalar.length >= n)
		return kubeconfig_entry_fail(e, key, err, "%zu bytes, more than the limit of %zu",
		                             node->data.scalar.length, n - 1);
	memcpy(out, node->data.scalar.value, node->data.scalar.length);
	out[node->data.scalar.length] = '\0';
	return 1;
}

/* Cleans an absolute path in place as Go's filepath.Clean does: one slash
 * between names, no "." names, and each ".." removing the name before it
 * ("/.." is "/"). Lexical, like client-go, not through symbolic links. */
static void clean_path(char *p)
{
	size_t r = 1, w = 1;

	while (p[r] != '\0') {
		size_t len = strcspn(p + r, "/");

		if (len == 0 || (len == 1 && p[r] == '.')) {
			r += len + (p[r + len] == '/');
			continue;
		}
		if (len == 2 && p[r] == '.' && p[r + 1] == '.') {
			while (w > 1 && p[w - 1] != '/')
				w--;
			if (w > 1)
				w--;
		} else {
			if (w > 1)
				p[w++] = '/';
			memmove(p + w, p + r, len);
			w += len;
		}
		r += len + (p[r + len] == '/');
	}
	p[w] = '\0';
}

int kubeconfig_entry_path(const struct kubeconfig_entry *e, const char *key, char *out, size_t n,
                          char *err)
{
	char joined[2 * KUBE_CONFIG_PATH_LEN];
	int rc = kubeconfig_entry_string(e, key, joined, KUBE_CONFIG_PATH_LEN, err);
	size_t len;

	out[0] = '\0';
	if (rc <= 0)
		return rc;
	/* client-go resolves relative paths against the file's folder
	 * (filepath.Join, which cleans) and leaves absolute ones alone. */
	if (joined[0] != '/') {
		char rel[KUBE_CONFIG_PATH_LEN];

		memcpy(rel, joined, sizeof(rel));
		snprintf(joined, sizeof(joined), "%s/%s", e->f->dir, rel);
		clean_path(joined);
	}
	len = strlen(joined);
	if (len >= n)
		return kubeconfig_entry_fail(e, key, err, "the path is %zu bytes, more than %zu",
		                             len, n - 1);
	memcpy(out, joined, len + 1);
	return 1;
}

int kubeconfig_entry_bool(const struct kubeconfig_entry *e, const char *key, int *out, char *err)
{
	/* YAML 1.1's booleans, which the decoder (go-yaml v2) takes; quoted,
	 * they are strings and a bool field refuses them. */
	static const char *const TRUES[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
	                                    "on",   "On",   "ON",   "y",   "Y"};
	static const char *const FALSES[] = {"false", "False", "FALSE", "no", "No", "NO",
	                                     "off",   "Off",   "OFF",   "n",  "N"};
	yaml_node_t *n = NULL;
	int rc = entry_scalar(e, key, &n, err);

	*out = 0;
	if (rc <= 0)
		return rc;
	for (size_t i = 0; n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	                   i < sizeof(TRUES) / sizeof(TRUES[0]);
	     i++) {
		if (scalar_equals(n, TRUES[i])) {
			*out = 1;
			return 0;
		}
		if (scalar_equals(n, FALSES[i]))
			return 0;
	}
	return kubeconfig_entry_fail(e, key, err, "not a boolean");
}

int kubeconfig_entry_data(const struct kubeconfig_entry *e, const char *key, char **out,
                          size_t *len, char *err)
{
	yaml_node_t *n = NULL;
	int rc = entry_scalar(e, key, &n, err);
	char msg[ERR_LEN];
	size_t cap;
	char *buf;

	*out = NULL;
	*len = 0;
	if (rc <= 0)
		return rc;
	cap = base64_decoded_max(n->data.scalar.length);
	buf = xmalloc(cap + 1);
	if (base64_decode((unsigned char *)buf, cap, len, (const char *)n->data.scalar.value,
	                  n->data.scalar.length, msg) < 0) {
		OPENSSL_cleanse(buf, cap + 1);
		free(buf);
		*len = 0;
		return kubeconfig_entry_fail(e, key, err, "%s", msg);
	}
	buf[*len] = '\0';
	*out = buf;
	return 1;
}

/* --- Checking a whole file --- */

static int check_field(const struct kubeconfig_entry *e, const struct field *fd, char *err)
{
	yaml_node_t *n = NULL;
	char *data = NULL;
	size_t len = 0;
	int b = 0;

	switch (fd->type) {
	case FIELD_STRING:
		return entry_text(e, fd->key, &n, err) < 0 ? -1 : 0;
	case FIELD_BOOL:
		return kubeconfig_entry_bool(e, fd->key, &b, err);
	case FIELD_DATA:
		if (kubeconfig_entry_data(e, fd->key, &data, &len, err) < 0)
			return -1;
		if (data != NULL)
			OPENSSL_cleanse(data, len);
		free(data);
		return 0;
	}
	return 0;
}

/* One entry: a mapping with a name and a body mapping of typed fields.
 * Its name, as client-go compares names, goes to *name. */
static int check_entry(struct kubeconfig_entry *e, const struct list_spec *spec,
                       const yaml_node_t *item, const yaml_node_t **name, char *err)
{
	yaml_node_t *n;
	int count = 0;

	if (item == NULL || item->type != YAML_MAPPING_NODE)
		return err_set(err, "'%s': %s[%d]: %s, not a mapping", e->f->path, e->list,
		               e->index, item ? node_kind(item) : "nothing");
	n = map_get(e->f, item, "name", &count);
	if (count > 1)
		return err_set(err, "'%s': %s[%d].name: given %d times", e->f->path, e->list,
		               e->index, count);
	if (!is_null(n) && n->type != YAML_SCALAR_NODE)
		return err_set(err, "'%s': %s[%d].name: %s, not a string", e->f->path, e->list,
		               e->index, node_kind(n));
	*name = is_null(n) ? NULL : n;

	n = map_get(e->f, item, spec->kind, &count);
	if (count > 1)
		return err_set(err, "'%s': %s[%d].%s: given %d times", e->f->path, e->list,
		               e->index, spec->kind, count);
	if (!is_null(n) && n->type != YAML_MAPPING_NODE)
		return err_set(err, "'%s': %s[%d].%s: %s, not a mapping", e->f->path, e->list,
		               e->index, spec->kind, node_kind(n));
	e->body = is_null(n) ? NULL : n;
	for (size_t i = 0; i < spec->nfields; i++) {
		if (check_field(e, &spec->fields[i], err) < 0)
			return -1;
	}
	return 0;
}

static int same_name(const yaml_node_t *a, const yaml_node_t *b)
{
	size_t la = a ? a->data.scalar.length : 0, lb = b ? b->data.scalar.length : 0;

	return la == lb && (la == 0 || memcmp(a->data.scalar.value, b->data.scalar.value, la) == 0);
}

static int check_list(struct kubeconfig_file *f, const struct list_spec *spec, char *err)
{
	const yaml_node_t **names = NULL;
	int count = 0, rc = -1;
	yaml_node_t *seq = map_get(f, f->root, spec->list, &count);
	ptrdiff_t n;

	if (count > 1)
		return err_set(err, "'%s': %s: given %d times", f->path, spec->list, count);
	if (is_null(seq))
		return 0;
	if (seq->type != YAML_SEQUENCE_NODE)
		return err_set(err, "'%s': %s: %s, not a list", f->path, spec->list,
		               node_kind(seq));
	n = seq->data.sequence.items.top - seq->data.sequence.items.start;
	if (n > MAX_ENTRIES)
		return err_set(err, "'%s': %s: %td entries, more than the limit of %d", f->path,
		               spec->list, n, MAX_ENTRIES);
	/* An array of node pointers. */
	names = xcalloc((size_t)n + 1, sizeof(*names)); // NOLINT(bugprone-sizeof-expression)
	for (int i = 0; i < (int)n; i++) {
		struct kubeconfig_entry e = {f, spec->list, spec->kind, i, NULL};
		const yaml_node_t *item = node_at(f, seq->data.sequence.items.start[i]);

		if (check_entry(&e, spec, item, &names[i], err) < 0)
			goto out;
		/* clientcmd's conversion from list to map refuses a name twice. */
		for (int j = 0; j < i; j++) {
			if (!same_name(names[i], names[j]))
				continue;
			err_set(err, "'%s': %s[%d].name: '%.*s' is also the name of %s[%d]",
			        f->path, spec->list, i,
			        names[i] ? (int)names[i]->data.scalar.length : 0,
			        names[i] ? (const char *)names[i]->data.scalar.value : "",
			        spec->list, j);
			goto out;
		}
	}
	rc = 0;
out:
	free(names);
	return rc;
}

static int check_file(struct kubeconfig_file *f, char *err)
{
	static const struct {
		const char *key, *want;
	} HEADER[] = {{"apiVersion", "v1"}, {"kind", "Config"}};
	char cur[KUBE_CONFIG_NAME_LEN];

	for (size_t i = 0; i < sizeof(HEADER) / sizeof(HEADER[0]); i++) {
		int count = 0;
		yaml_node_t *n = map_get(f, f->root, HEADER[i].key, &count);

		/* Absent, they default to these; anything else is another
		 * kind of object that the decoder refuses. */
		if (!is_null(n) && !scalar_equals(n, HEADER[i].want))
			return err_set(err, "'%s': %s: not '%s', so not a kubeconfig", f->path,
			               HEADER[i].key, HEADER[i].want);
	}
	if (kubeconfig_file_current_context(f, cur, sizeof(cur), err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(LISTS) / sizeof(LISTS[0]); i++) {
		if (check_list(f, &LISTS[i], err) < 0)
			return -1;
	}
	return 0;
}

/* --- The file --- */

/* The absolute, clean folder of path, which relative paths inside it are
 * relative to. */
static int set_dir(struct kubeconfig_file *f, const char *path, char *err)
{
	char dir[2 * KUBE_CONFIG_PATH_LEN + 2];
	char cwd[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int folder = slash == NULL ? 0 : (int)(slash - path);

	if (path[0] == '/') {
		snprintf(dir, sizeof(dir), "/%.*s", folder, path);
	} else {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return err_set(err, "'%s': getcwd: %s", path, strerror(errno));
		snprintf(dir, sizeof(dir), "%s/%.*s", cwd, folder, path);
	}
	clean_path(dir);
	if (strlen(dir) >= sizeof(f->dir))
		return err_set(err, "'%s': the folder's path is too long", path);
	memcpy(f->dir, dir, strlen(dir) + 1);
	return 0;
}

static int parse_error(const struct kubeconfig_file *f, const yaml_parser_t *p, char *err)
{
	const char *problem = p->problem ? p->problem : "cannot parse";

	if (p->error == YAML_MEMORY_ERROR)
		die("out of memory parsing '%s'", f->path);
	if (p->error == YAML_READER_ERROR)
		return err_set(err, "'%s': not YAML: byte %zu: %s", f->path, p->problem_offset,
		               problem);
	return err_set(err, "'%s': not YAML: line %zu column %zu: %s%s%s", f->path,
	               p->problem_mark.line + 1, p->problem_mark.column + 1, problem,
	               p->context ? " " : "", p->context ? p->context : "");
}

/* libyaml's scanner takes time quadratic in the depth of nested flow
 * collections ('[[[[...'): a mebibyte of them would hold the operator for
 * minutes. A kubeconfig nests four deep, so anything past FLOW_DEPTH_MAX is
 * refused before libyaml sees it. Quoted scalars and comments are skipped,
 * so a bracket inside a string does not count. */
#define FLOW_DEPTH_MAX 64

static int check_flow_depth(const struct kubeconfig_file *f, const unsigned char *text, size_t len,
                            char *err)
{
	size_t line = 1;
	int depth = 0;
	unsigned char quote = 0, prev = '\n';

	for (size_t i = 0; i < len; prev = text[i], i++) {
		unsigned char c = text[i];

		if (c == '\n')
			line++;
		if (quote != 0) {
			if (quote == '"' && c == '\\' && i + 1 < len)
				i++;
			else if (c == quote)
				quote = 0;
			continue;
		}
		if ((c == '\'' || c == '"') && strchr(" \t\n[{,:-", prev) != NULL) {
			quote = c;
		} else if (c == '#' && strchr(" \t\n", prev) != NULL) {
			while (i + 1 < len && text[i + 1] != '\n')
				i++;
		} else if (c == '[' || c == '{') {
			if (++depth > FLOW_DEPTH_MAX)
				return err_set(
				    err,
				    "'%s': not YAML we accept: line %zu: flow collections nested "
				    "deeper than %d",
				    f->path, line, FLOW_DEPTH_MAX);
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return 0;
}

int kubeconfig_file_open(struct kubeconfig_file *f, const char *path, char *err)
{
	unsigned char *text = NULL;
	size_t len = 0;
	yaml_parser_t parser;
	int have_parser = 0;
	yaml_node_t *root;
	int rc = -1;

	memset(f, 0, sizeof(*f));
	if (path == NULL || path[0] == '\0')
		return err_set(err, "kubeconfig: empty path");
	if (strlen(path) >= sizeof(f->path))
		return err_set(err, "kubeconfig '%.100s...': path too long", path);
	memcpy(f->path, path, strlen(path) + 1);
	if (set_dir(f, path, err) < 0 ||
	    file_read_all(path, KUBECONFIG_FILE_MAX, &text, &len, err) < 0 ||
	    check_flow_depth(f, text, len, err) < 0)
		goto out;
	if (!yaml_parser_initialize(&parser))
		die("out of memory");
	have_parser = 1;
	yaml_parser_set_input_string(&parser, text, len);
	if (!yaml_parser_load(&parser, &f->doc)) {
		parse_error(f, &parser, err);
		goto out;
	}
	f->have_doc = 1;
	root = yaml_document_get_root_node(&f->doc);
	if (root != NULL && root->type != YAML_MAPPING_NODE && !is_null(root)) {
		err_set(err, "'%s': not a kubeconfig: the top level is %s, not a mapping", f->path,
		        node_kind(root));
		goto out;
	}
	f->root = root != NULL && root->type == YAML_MAPPING_NODE ? root : NULL;
	rc = check_file(f, err);
out:
	if (have_parser) {
		/* The parser's copies of the text hold tokens and keys too. */
		if (parser.raw_buffer.start)
			OPENSSL_cleanse(parser.raw_buffer.start,
			                (size_t)(parser.raw_buffer.end - parser.raw_buffer.start));
		if (parser.buffer.start)
			OPENSSL_cleanse(parser.buffer.start,
			                (size_t)(parser.buffer.end - parser.buffer.start));
		yaml_parser_delete(&parser);
	}
	if (text != NULL)
		OPENSSL_cleanse(text, len);
	free(text);
	if (rc < 0)
		kubeconfig_file_close(f);
	return rc;
}

void kubeconfig_file_close(struct kubeconfig_file *f)
{
	if (f == NULL)
		return;
	if (f->have_doc) {
		for (yaml_node_t *n = f->doc.nodes.start; n < f->doc.nodes.top; n++) {
			if (n->type == YAML_SCALAR_NODE && n->data.scalar.value != NULL)
				OPENSSL_cleanse(n->data.scalar.value, n->data.scalar.length);
		}
		yaml_document_delete(&f->doc);
	}
	f->have_doc = 0;
	f->root = NULL;
}

int kubeconfig_file_current_context(struct kubeconfig_file *f, char *out, size_t n, char *err)
{
	int count = 0;
	yaml_node_t *v = map_get(f, f->root, "current-context", &count);

	out[0] = '\0';
	if (count > 1)
		return err_set(err, "'%s': current-context: given %d times", f->path, count);
	if (is_null(v))
		return 0;
	if (v->type != YAML_SCALAR_NODE)
		return err_set(err, "'%s': current-context: %s, not a string", f->path,
		               node_kind(v));
	if (v->data.scalar.length >= n || memchr(v->data.scalar.value, '\0', v->data.scalar.length))
		return err_set(err, "'%s': current-context: not a name of at most %zu bytes",
		               f->path, n - 1);
	memcpy(out, v->data.scalar.value, v->data.scalar.length);
	out[v->data.scalar.length] = '\0';
	return 0;
}

int kubeconfig_file_find(struct kubeconfig_file *f, const char *list, const char *name,
                         struct kubeconfig_entry *e)
{
	const struct list_spec *spec = NULL;
	int count = 0;
	yaml_node_t *seq = map_get(f, f->root, list, &count);

	for (size_t i = 0; i < sizeof(LISTS) / sizeof(LISTS[0]); i++) {
		if (strcmp(LISTS[i].list, list) == 0)
			spec = &LISTS[i];
	}
	if (spec == NULL || seq == NULL || seq->type != YAML_SEQUENCE_NODE)
		return 0;
	for (yaml_node_item_t *it = seq->data.sequence.items.start;
	     it < seq->data.sequence.items.top; it++) {
		yaml_node_t *item = node_at(f, *it);
		yaml_node_t *nm = map_get(f, item, "name", &count);
		int matches = is_null(nm) ? name[0] == '\0' : scalar_equals(nm, name);

		if (!matches)
			continue;
		*e = (struct kubeconfig_entry){f, spec->list, spec->kind,
		                               (int)(it - seq->data.sequence.items.start),
		                               map_get(f, item, spec->kind, &count)};
		if (is_null(e->body))
			e->body = NULL;
		return 1;
	}
	return 0;
}
