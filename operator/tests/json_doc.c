/* json_doc.c - JSON documents for the operator's tests (json_doc.h). */
#include "json_doc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_DOC_MAX (1 << 20) /* a fixture file's size, with its NUL */

cJSON *json_doc_parse(const char *s)
{
	char *t = strdup(s);
	cJSON *doc;

	assert_non_null(t);
	for (char *p = t; *p != '\0'; p++) {
		if (*p == '\'')
			*p = '"';
	}
	doc = cJSON_Parse(t);
	if (doc == NULL)
		fail_msg("bad test document: %s", t);
	free(t);
	return doc;
}

cJSON *json_doc_load(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t len = 0;
	cJSON *doc;

	if (f == NULL)
		fail_msg("open '%s' (tests run from the repository root)", path);
	text = calloc(1, JSON_DOC_MAX);
	assert_non_null(text);
	len = fread(text, 1, JSON_DOC_MAX - 1, f);
	fclose(f);
	text[len] = '\0';
	doc = cJSON_Parse(text);
	if (doc == NULL)
		fail_msg("'%s' is not JSON", path);
	free(text);
	return doc;
}

void json_doc_assert_equal(const cJSON *got, const char *want)
{
	cJSON *w = json_doc_parse(want);
	char *g = cJSON_PrintUnformatted(got);
	char *ws = cJSON_PrintUnformatted(w);

	if (!cJSON_Compare(got, w, 1))
		fail_msg("got  %s\nwant %s", g, ws);
	free(g);
	free(ws);
	cJSON_Delete(w);
}
