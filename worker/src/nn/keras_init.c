/* keras_init.c - the initializers a layer's options name
 * (keras/src/initializers/): by name, as initializers.get takes them, or as
 * initializers.serialize writes them, an object of the constructor's
 * arguments. */
#include <stdio.h>
#include <string.h>

#include "keras_model.h"
#include "keras_read.h"

/* params: what the config holds besides "seed" (random ones only). */
enum init_params { INIT_NONE, INIT_SEEDED, INIT_NORMAL, INIT_UNIFORM };

static const struct init_spec {
	const char *class_name, *snake; /* initializers.get takes either */
	enum keras_init_kind kind;
	enum init_params params;
	double a, b; /* the constructor's defaults */
} INITS[] = {
    {"Zeros", "zeros", KERAS_INIT_ZEROS, INIT_NONE, 0, 0},
    {"Ones", "ones", KERAS_INIT_ONES, INIT_NONE, 0, 0},
    {"GlorotUniform", "glorot_uniform", KERAS_INIT_GLOROT_UNIFORM, INIT_SEEDED, 0, 0},
    {"GlorotNormal", "glorot_normal", KERAS_INIT_GLOROT_NORMAL, INIT_SEEDED, 0, 0},
    {"HeUniform", "he_uniform", KERAS_INIT_HE_UNIFORM, INIT_SEEDED, 0, 0},
    {"HeNormal", "he_normal", KERAS_INIT_HE_NORMAL, INIT_SEEDED, 0, 0},
    {"LecunUniform", "lecun_uniform", KERAS_INIT_LECUN_UNIFORM, INIT_SEEDED, 0, 0},
    {"LecunNormal", "lecun_normal", KERAS_INIT_LECUN_NORMAL, INIT_SEEDED, 0, 0},
    /* RandomNormal(mean=0.0, stddev=0.05), RandomUniform(minval=-0.05,
     * maxval=0.05), TruncatedNormal(mean=0.0, stddev=0.05) */
    {"RandomNormal", "random_normal", KERAS_INIT_RANDOM_NORMAL, INIT_NORMAL, 0.0, 0.05},
    {"RandomUniform", "random_uniform", KERAS_INIT_RANDOM_UNIFORM, INIT_UNIFORM, -0.05, 0.05},
    {"TruncatedNormal", "truncated_normal", KERAS_INIT_TRUNCATED_NORMAL, INIT_NORMAL, 0.0, 0.05},
};
#define NINITS (sizeof(INITS) / sizeof(INITS[0]))

/* The initializer named name: a class name, its snake case, or one of
 * initializers/__init__.py's aliases ("zero", "one", "uniform", "normal"). */
static const struct init_spec *find_init(const char *name)
{
	static const struct {
		const char *alias, *snake;
	} ALIASES[] = {
	    {"zero", "zeros"},
	    {"one", "ones"},
	    {"uniform", "random_uniform"},
	    {"normal", "random_normal"},
	};

	for (size_t i = 0; i < sizeof(ALIASES) / sizeof(ALIASES[0]); i++)
		if (strcmp(name, ALIASES[i].alias) == 0)
			name = ALIASES[i].snake;
	for (size_t i = 0; i < NINITS; i++)
		if (strcmp(name, INITS[i].class_name) == 0 || strcmp(name, INITS[i].snake) == 0)
			return &INITS[i];
	return NULL;
}

void keras_init_set(struct keras_init *ini, enum keras_init_kind kind, double a, double b)
{
	ini->kind = kind;
	ini->a = a;
	ini->b = b;
	ini->has_seed = 0;
	ini->seed = 0;
}

static int read_init_seed(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_init *ini = out;

	return keras_seed(v, &ini->has_seed, &ini->seed, ctx, key, err);
}

/* a is a mean or a bound: any finite number; b is a bound, or a standard
 * deviation, which cannot be negative. */
static int read_init_a(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_init *ini = out;

	return keras_number(v, -1e6, 1e6, &ini->a, ctx, key, err);
}

static int read_init_b(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_init *ini = out;
	double lo = strcmp(key, "stddev") == 0 ? 0 : -1e6;

	return keras_number(v, lo, 1e6, &ini->b, ctx, key, err);
}

static const struct keras_key INIT_SEED_KEYS[] = {{"seed", read_init_seed, 0}, {NULL, NULL, 0}};
static const struct keras_key INIT_NORMAL_KEYS[] = {
    {"mean", read_init_a, 0}, {"stddev", read_init_b, 0}, {NULL, NULL, 0}};
static const struct keras_key INIT_UNIFORM_KEYS[] = {
    {"minval", read_init_a, 0}, {"maxval", read_init_b, 0}, {NULL, NULL, 0}};

/* null is initializers.get(None): Layer.add_weight then takes
 * "glorot_uniform" for a float variable, biases too. */
int keras_init_read(struct keras_init *ini, const cJSON *v, const char *ctx, const char *key,
                    char *err)
{
	const struct keras_key *none[] = {NULL};
	const struct keras_key *seeded[] = {INIT_SEED_KEYS, NULL};
	const struct keras_key *normal[] = {INIT_SEED_KEYS, INIT_NORMAL_KEYS, NULL};
	const struct keras_key *uniform[] = {INIT_SEED_KEYS, INIT_UNIFORM_KEYS, NULL};
	const struct keras_key *const *tables[] = {none, seeded, normal, uniform};
	const struct init_spec *spec;
	char inner[KERAS_CTX_LEN];
	struct keras_obj o;
	const char *name;
	int fn;

	if (cJSON_IsNull(v)) {
		keras_init_set(ini, KERAS_INIT_GLOROT_UNIFORM, 0, 0);
		return 0;
	}
	if (keras_named(&o, &name, &fn, v, ctx, key, err) < 0)
		return -1;
	spec = fn ? NULL : find_init(name);
	if (spec == NULL)
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (only Zeros, Ones, GlorotUniform, "
		                    "GlorotNormal, HeUniform, HeNormal, LecunUniform, LecunNormal, "
		                    "RandomNormal, RandomUniform, TruncatedNormal)");
	keras_init_set(ini, spec->kind, spec->a, spec->b);
	if (o.config == NULL)
		return 0;
	snprintf(inner, sizeof(inner), "%s: %s", ctx, key);
	if (keras_read_keys(ini, o.config, tables[spec->params], inner, err) < 0)
		return -1;
	if (spec->params == INIT_UNIFORM && ini->a > ini->b)
		return keras_refuse(err, inner, "minval", cJSON_GetObjectItem(o.config, "minval"),
		                    "is not supported (more than maxval %g)", ini->b);
	return 0;
}
