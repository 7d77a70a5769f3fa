/* parse.h - checked number parsing for flags, environment and config.
 *
 * Every function takes the whole string: leading/trailing garbage, an empty
 * string, overflow and values outside [min, max] are errors. On error it
 * returns -1, leaves *out untouched and writes a message into err (ERR_LEN)
 * such as "'12x' is not a whole number" or "'0' is out of range [1, 4096]".
 */
#ifndef MWJ_PARSE_H
#define MWJ_PARSE_H

#include <stdint.h>

int parse_i64(const char *s, int64_t min, int64_t max, int64_t *out, char *err);
int parse_int(const char *s, int min, int max, int *out, char *err);
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err);
/* Finite doubles only: "nan" and "inf" are rejected. */
int parse_double(const char *s, double min, double max, double *out, char *err);

/* A truth value as Go's strconv.ParseBool reads it (Kubernetes flags do):
 * 1, t, T, true, TRUE, True; 0, f, F, false, FALSE, False. */
int parse_bool(const char *s, int *out, char *err);

/* A duration as Go writes one, in milliseconds: a decimal number and a
 * unit (ms, s, m, h), possibly several ("1m30s"), within [min_ms,
 * max_ms]. "15s", "500ms", "1.5s". */
int parse_duration_ms(const char *s, long long min_ms, long long max_ms, long long *out, char *err);

#endif
