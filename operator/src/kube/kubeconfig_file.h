/* kubeconfig_file.h - one kubeconfig file as client-go decodes it, for
 * kubeconfig.c, which picks a context, its cluster and its user from one
 * or more of these.
 *
 * Opening reads the file (at most KUBECONFIG_FILE_MAX bytes), parses its
 * first YAML document with libyaml and checks every cluster, context and
 * user for what client-go's decoder refuses in any of them, used or not:
 * a list that is not a list, an entry that is not a mapping, a string or
 * boolean field of another type, *-data that is not base64, two entries
 * of one list with the same name. Unknown fields are ignored, as the
 * decoder ignores them. What only matters for the entries in use (a
 * missing server, an exec user) is kubeconfig.c's to check.
 *
 * Every message names the file and the field path, as
 * "'/k/config': users[0].user.client-key-data: invalid base64 at byte 12",
 * and never a value of a field that may hold a secret.
 */
#ifndef MWJ_KUBECONFIG_FILE_H
#define MWJ_KUBECONFIG_FILE_H

#include <stddef.h>
#include <yaml.h>

#include "err.h"
#include "kubeconfig.h"

/* A kubeconfig is a few KiB; this leaves room for many clusters and
 * embedded certificates while bounding what a hostile file costs. */
#define KUBECONFIG_FILE_MAX (1 << 20)

struct kubeconfig_file {
	char path[KUBE_CONFIG_PATH_LEN]; /* as given: for messages */
	char dir[KUBE_CONFIG_PATH_LEN];  /* its folder, absolute: relative paths resolve here */
	yaml_document_t doc;
	int have_doc;
	yaml_node_t *root; /* the top-level mapping; NULL for an empty file */
};

/* One entry of a list: clusters[i].cluster, contexts[i].context or
 * users[i].user. Borrowed from its file. */
struct kubeconfig_entry {
	struct kubeconfig_file *f;
	const char *list; /* "clusters", "contexts", "users" */
	const char *kind; /* "cluster", "context", "user" */
	int index;
	yaml_node_t *body; /* the mapping; NULL when the entry has none */
};

/* --- The file --- */

/* Reads, parses and checks the kubeconfig at path into f. Returns 0, or -1
 * with a message (f is then closed). A missing file is an error here;
 * callers that skip missing files check first. */
int kubeconfig_file_open(struct kubeconfig_file *f, const char *path, char *err);

/* Frees the document after overwriting its text (tokens, keys). Accepts a
 * zeroed or closed f. */
void kubeconfig_file_close(struct kubeconfig_file *f);

/* current-context into out (n bytes); "" when unset. Returns 0 or -1. */
int kubeconfig_file_current_context(struct kubeconfig_file *f, char *out, size_t n, char *err);

/* Finds the entry of list ("clusters", "contexts" or "users") named name.
 * Returns 1 and fills e, or 0 when there is none. */
int kubeconfig_file_find(struct kubeconfig_file *f, const char *list, const char *name,
                         struct kubeconfig_entry *e);

/* --- Fields of an entry (key is a field of its body) --- */

/* Whether key is set to something other than null. */
int kubeconfig_entry_has(const struct kubeconfig_entry *e, const char *key);

/* A string field into out (n bytes). Returns 1 when set, 0 when absent or
 * null (out is then ""), -1 with a message when longer than n - 1 bytes. */
int kubeconfig_entry_string(const struct kubeconfig_entry *e, const char *key, char *out, size_t n,
                            char *err);

/* A file path field, resolved against the file's folder when relative and
 * cleaned as Go's filepath.Join cleans it. Returns as kubeconfig_entry_string. */
int kubeconfig_entry_path(const struct kubeconfig_entry *e, const char *key, char *out, size_t n,
                          char *err);

/* A boolean field; absent or null is 0. Returns 0 or -1. */
int kubeconfig_entry_bool(const struct kubeconfig_entry *e, const char *key, int *out, char *err);

/* A base64 field, decoded into a malloc'd buffer with a NUL after its *len
 * bytes, which the caller frees (after OPENSSL_cleanse, for a key).
 * Returns 1 when set, 0 when absent or null (*out NULL), -1 with a
 * message. */
int kubeconfig_entry_data(const struct kubeconfig_entry *e, const char *key, char **out,
                          size_t *len, char *err);

/* Writes "'<file>': <list>[<i>].<kind>.<key>: <message>" into err and
 * returns -1. */
int kubeconfig_entry_fail(const struct kubeconfig_entry *e, const char *key, char *err,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
