/* prom_text.h - writing metrics in the Prometheus text exposition format
 * (version 0.0.4): a family's "# HELP" and "# TYPE" lines, then its
 * samples, each "name{label="value",...} value". Label values and help
 * texts are escaped as the format says (backslash, double quote in
 * labels, newline); values are written so that they read back exactly
 * (integers as integers, +Inf, NaN).
 */
#ifndef MWJ_PROM_TEXT_H
#define MWJ_PROM_TEXT_H

#include <stdio.h>

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct prom_label {
	const char *name, *value;
};

/* "# HELP name help" and "# TYPE name type" (counter, gauge, histogram). */
void prom_family(FILE *f, const char *name, const char *type, const char *help);

/* One sample; labels may be NULL when n is 0. */
void prom_sample(FILE *f, const char *name, const struct prom_label *labels, int n, double value);

/* A family of one sample without labels: the header and the value. */
void prom_single(FILE *f, const char *name, const char *type, const char *help, double value);

/* A histogram's samples (after its family line): name_bucket{le=...} for
 * each bound (cumulative counts) and +Inf, name_sum and name_count. */
void prom_histogram(FILE *f, const char *name, const double *bounds,
                    const unsigned long *cumulative, int nbounds, unsigned long count, double sum);

#endif
