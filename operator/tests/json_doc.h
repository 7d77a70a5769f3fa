/* json_doc.h - JSON documents for the operator's tests: written inline
 * with ' for " (so they need no escaping in C strings), or read from a
 * fixture file.
 *
 * Both fail the running cmocka test rather than returning an error, so
 * call them from a test body. The caller deletes the tree returned.
 */
#ifndef MWJ_JSON_DOC_H
#define MWJ_JSON_DOC_H

#include <cjson/cJSON.h>

/* A tree parsed from s with every ' turned into ". */
cJSON *json_doc_parse(const char *s);

/* Fails the test unless got equals the document want (written as for
 * json_doc_parse), printing both. */
void json_doc_assert_equal(const cJSON *got, const char *want);

/* The JSON file at path (from the repository root, up to 1 MiB). */
cJSON *json_doc_load(const char *path);

#endif
