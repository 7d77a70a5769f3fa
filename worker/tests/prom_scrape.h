/* prom_scrape.h - what the tests of /metrics share: a GET over a real
 * socket on 127.0.0.1, a strict reading of the Prometheus text format
 * (version 0.0.4), a sample's value, and the port an mwj-worker says it
 * serves on.
 *
 * Like testutil.h, everything here fails the running cmocka test instead
 * of returning an error: call it from a test body only.
 */
#ifndef MWJ_PROM_SCRAPE_H
#define MWJ_PROM_SCRAPE_H

#include <sys/types.h>

/* GETs path from 127.0.0.1:port (HTTP/1.0, one connection, read to its
 * end). Returns the malloc'd body, NUL-terminated, which the caller frees;
 * *status is the HTTP status and, if content_type is not NULL, the
 * Content-Type header is copied there (ctype_len bytes). Fails the test
 * if the server cannot be reached or the answer is not HTTP. */
char *prom_scrape_get(int port, const char *path, int *status, char *content_type,
                      size_t ctype_len);

/* Fails the test, showing the offending line, unless text is the text
 * format: "# HELP name text" then "# TYPE name counter|gauge|histogram"
 * before a family's samples, each family once; every sample of a family
 * declared so (a histogram's _bucket{le}, _sum, _count), name and labels
 * well-formed, label values quoted and escaped, the value a number, +Inf,
 * -Inf or NaN; every counter named ..._total; a histogram's buckets
 * cumulative, ending at +Inf, which equals its _count. Returns the number
 * of samples. */
int prom_scrape_check(const char *text);

/* The value of the sample written exactly as sample ("name" or
 * "name{k=\"v\",...}", the labels in the order served) in text. Fails the
 * test if there is none. */
double prom_scrape_value(const char *text, const char *sample);

/* Whether text holds a "# TYPE" line for family. */
int prom_scrape_has(const char *text, const char *family);

/* The port mwj-worker process pid logged into err_path ("serving
 * /metrics on port N"), waiting for the line until deadline
 * (testutil_now() clock). Fails the test, showing the log, if pid exits
 * first or the deadline passes. */
int prom_scrape_port(pid_t pid, const char *err_path, double deadline);

#endif
