/* prom_text.c - the Prometheus text format; see prom_text.h. */
#include "prom_text.h"

#include <math.h>

/* Writes s with backslash and newline escaped, and the double quote too
 * in a label value. */
static void escaped(FILE *f, const char *s, int quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

static void value_out(FILE *f, double v)
{
	if (isnan(v))
		fputs("NaN", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", f);
	else if (v == floor(v) && fabs(v) < 1e15)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.17g", v);
}

void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	escaped(f, help, 0);
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

void prom_sample(FILE *f, const char *name, const struct prom_label *labels, int n, double value)
{
	fputs(name, f);
	if (n > 0) {
		fputc('{', f);
		for (int i = 0; i < n; i++) {
			fprintf(f, "%s%s=\"", i ? "," : "", labels[i].name);
			escaped(f, labels[i].value, 1);
			fputc('"', f);
		}
		fputc('}', f);
	}
	fputc(' ', f);
	value_out(f, value);
	fputc('\n', f);
}

void prom_single(FILE *f, const char *name, const char *type, const char *help, double value)
{
	prom_family(f, name, type, help);
	prom_sample(f, name, NULL, 0, value);
}

void prom_histogram(FILE *f, const char *name, const double *bounds,
                    const unsigned long *cumulative, int nbounds, unsigned long count, double sum)
{
	char le[32];

	for (int b = 0; b < nbounds; b++) {
		snprintf(le, sizeof(le), "%g", bounds[b]);
		fprintf(f, "%s_bucket{le=\"%s\"} %lu\n", name, le, cumulative[b]);
	}
	fprintf(f, "%s_bucket{le=\"+Inf\"} %lu\n", name, count);
	fprintf(f, "%s_sum ", name);
	value_out(f, sum);
	fprintf(f, "\n%s_count %lu\n", name, count);
}
