/* keras_model.c - a Keras Sequential file read into a plan of layers: the
 * file (JSON or a .keras zip), the shape it has (Keras 3 or 2), the model's
 * config and its input shape; each layer is keras_layers.c's, the compile
 * config keras_compile.c's. */
#include "keras_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "file_read.h"
#include "json.h"
#include "keras_read.h"
#include "keras_zip.h"

/* The files of examples/models/, from the C file the build generates
 * (scripts/embed-models.sh). */
extern const struct keras_builtin keras_builtins[];
extern const size_t keras_builtins_count;
extern const char keras_builtins_names[];

/* Where the model's input shape came from, for the message when two
 * places in the file disagree (Sequential.build raises then too). */
struct input_shape {
	int rank; /* 0 until a place gives it */
	int dims[KERAS_MAX_RANK];
	char from[KERAS_CTX_LEN];
};

/* What the readers of the model's own keys share. */
struct model_read {
	struct keras_model *km;
	struct input_shape in;
	const cJSON *layers;
	char ctx[KERAS_CTX_LEN]; /* "model 'sequential'" */
};

/* --- The input shape --- */

/* A batch shape, [batch, d1, ..., dn]: batch null (or a fixed batch size,
 * which changes nothing here), then 1 to KERAS_MAX_RANK sizes. */
static int read_shape(const cJSON *v, int *rank, int dims[KERAS_MAX_RANK], const char *ctx,
                      const char *key, char *err)
{
	int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0, batch;
	const cJSON *b = cJSON_GetArrayItem(v, 0);

	if (n < 2 || n > KERAS_MAX_RANK + 1)
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (a batch axis and 1 to %d axes of examples)",
		                    KERAS_MAX_RANK);
	if (!cJSON_IsNull(b) && keras_int(b, 1, KERAS_MAX_DIM, &batch, ctx, key, err) < 0)
		return keras_refuse(err, ctx, key, v, "must start with null or a batch size");
	for (int i = 1; i < n; i++)
		if (keras_int(cJSON_GetArrayItem(v, i), 1, KERAS_MAX_DIM, &dims[i - 1], ctx, key,
		              err) < 0)
			return keras_refuse(
			    err, ctx, key, v,
			    "is not supported (every axis of an example needs a size "
			    "in [1, %d])",
			    KERAS_MAX_DIM);
	*rank = n - 1;
	return 0;
}

static void shape_text(char *buf, size_t len, int rank, const int *dims)
{
	int n = snprintf(buf, len, "(");

	for (int i = 0; i < rank && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - n, "%s%d", i ? ", " : "", dims[i]);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - n, ")");
}

/* Reads the shape at v (key in ctx) as the model's input: the first place
 * to give it sets it, the others must agree. */
static int take_shape(struct model_read *r, const cJSON *v, const char *ctx, const char *key,
                      char *err)
{
	int rank = 0, dims[KERAS_MAX_RANK] = {0};
	char had[64], got[64];

	if (cJSON_IsNull(v))
		return 0;
	if (read_shape(v, &rank, dims, ctx, key, err) < 0)
		return -1;
	if (r->in.rank == 0) {
		r->in.rank = rank;
		memcpy(r->in.dims, dims, sizeof(dims));
		snprintf(r->in.from, sizeof(r->in.from), "%s \"%s\"", ctx, key);
		return 0;
	}
	if (rank == r->in.rank && memcmp(dims, r->in.dims, rank * sizeof(int)) == 0)
		return 0;
	shape_text(had, sizeof(had), r->in.rank, r->in.dims);
	shape_text(got, sizeof(got), rank, dims);
	return err_set(err, "%s: \"%s\": input shape %s does not match %s of %s", ctx, key, got,
	               had, r->in.from);
}

/* --- InputLayer (keras/src/layers/core/input_layer.py) --- */

struct input_read {
	struct model_read *r;
	int has_shape;
};

static int read_input_shape(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct input_read *ir = out;

	if (strcmp(key, "batch_input_shape") == 0)
		ir->r->km->keras_version = 2;
	ir->has_shape = 1;
	return take_shape(ir->r, v, ctx, key, err);
}

static int read_input_name(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	char name[KERAS_NAME_LEN];

	(void)out;
	return keras_name(v, name, sizeof(name), ctx, key, err);
}

/* Keras 3: batch_shape, dtype, sparse, ragged, name, optional; tf-keras:
 * batch_input_shape, dtype, sparse, ragged, name. */
static const struct keras_key INPUT_KEYS[] = {
    {"batch_shape", read_input_shape, 0},
    {"batch_input_shape", read_input_shape, 0},
    {"dtype", keras_need_float32, 0}, /* images arrive as floats */
    {"sparse", keras_need_false, 0},
    {"ragged", keras_need_false, 0},
    {"name", read_input_name, 0},
    {"optional", keras_need_false, 0},
    {NULL, NULL, 0},
};

static int read_input_layer(struct model_read *r, const struct keras_obj *o, const char *ctx,
                            char *err)
{
	const struct keras_key *tables[] = {INPUT_KEYS, NULL};
	struct input_read ir = {r, 0};

	if (o->config == NULL)
		return err_set(err, "%s: \"config\" is missing", ctx);
	if (keras_read_keys(&ir, o->config, tables, ctx, err) < 0)
		return -1;
	if (!ir.has_shape)
		return err_set(err, "%s: \"batch_shape\" is missing", ctx);
	return 0;
}

/* --- The layers --- */

/* "layer 'conv2d' (Conv2D)", or "layers[3] (Conv2D)" before a name. */
static void layer_ctx(char *ctx, size_t len, int i, const struct keras_obj *o)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o->config, "name");
	char n[KERAS_NAME_LEN], c[KERAS_NAME_LEN];

	keras_clean(c, sizeof(c), o->class_name);
	if (cJSON_IsString(name))
		snprintf(ctx, len, "layer '%s' (%s)", keras_clean(n, sizeof(n), name->valuestring),
		         c);
	else
		snprintf(ctx, len, "layers[%d] (%s)", i, c);
}

/* Keras 2 writes the model's input shape on the first layer when there is
 * no InputLayer (Layer.get_config's batch_input_shape). */
static int first_layer_shape(struct model_read *r, const struct keras_obj *o, int first,
                             const char *ctx, char *err)
{
	const cJSON *bis = cJSON_GetObjectItemCaseSensitive(o->config, "batch_input_shape");

	if (bis == NULL || cJSON_IsNull(bis))
		return 0;
	if (!first)
		return keras_refuse(
		    err, ctx, "batch_input_shape", bis,
		    "is not supported (only the first layer says the model's input)");
	r->km->keras_version = 2;
	return take_shape(r, bis, ctx, "batch_input_shape", err);
}

static int check_unique(const struct keras_model *km, const char *ctx, char *err)
{
	const struct keras_layer *l = &km->layers[km->nlayers];

	for (int i = 0; i < km->nlayers; i++)
		if (strcmp(km->layers[i].name, l->name) == 0)
			return err_set(err,
			               "%s: the name of an earlier layer too (Keras requires "
			               "unique names)",
			               ctx);
	return 0;
}

static int read_layer(struct model_read *r, const cJSON *node, int i, int *rank, char *err)
{
	static const char *const extra[] = {"build_config", NULL};
	struct keras_model *km = r->km;
	struct keras_obj o;
	char ctx[KERAS_CTX_LEN], at[32];

	snprintf(at, sizeof(at), "layers[%d]", i);
	if (keras_obj_read(&o, node, extra, r->ctx, at, err) < 0)
		return -1;
	layer_ctx(ctx, sizeof(ctx), i, &o);
	if (strcmp(o.class_name, "InputLayer") == 0) {
		if (i != 0)
			return err_set(err, "%s: an InputLayer is only the first layer", ctx);
		if (read_input_layer(r, &o, ctx, err) < 0)
			return -1;
		*rank = r->in.rank;
		return 0;
	}
	if (km->nlayers == KERAS_MAX_LAYERS)
		return err_set(err, "%s: more than %d layers", r->ctx, KERAS_MAX_LAYERS);
	if (first_layer_shape(r, &o, i == 0, ctx, err) < 0)
		return -1;
	if (i == 0)
		*rank = r->in.rank;
	if (keras_layer_read(&km->layers[km->nlayers], &o, *rank, ctx, err) < 0 ||
	    check_unique(km, ctx, err) < 0)
		return -1;
	*rank = keras_layer_out_rank(&km->layers[km->nlayers], *rank);
	km->nlayers++;
	return 0;
}

static int read_layers(struct model_read *r, const cJSON *layers, char *err)
{
	const cJSON *it;
	int i = 0, rank = r->in.rank;

	if (!cJSON_IsArray(layers))
		return keras_refuse(err, r->ctx, "layers", layers, "must be a list of layers");
	cJSON_ArrayForEach(it, layers)
	{
		if (read_layer(r, it, i, &rank, err) < 0)
			return -1;
		i++;
	}
	if (r->km->nlayers == 0)
		return err_set(err, "%s: has no layers", r->ctx);
	return 0;
}

/* --- The model --- */

static int read_model_name(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct model_read *r = out;

	return keras_name(v, r->km->name, sizeof(r->km->name), ctx, key, err);
}

static int read_layer_list(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct model_read *r = out;

	(void)ctx, (void)key, (void)err;
	r->layers = v;
	return 0;
}

static int read_build_input_shape(void *out, const cJSON *v, const char *ctx, const char *key,
                                  char *err)
{
	return take_shape(out, v, ctx, key, err);
}

/* Sequential.get_config: Model's name, trainable and dtype, the layers,
 * and build_input_shape once built. */
static const struct keras_key SEQUENTIAL_KEYS[] = {
    {"name", read_model_name, 0},
    {"trainable", keras_need_trainable, 0},
    {"dtype", keras_need_float32, 0},
    {"layers", read_layer_list, 1},
    {"build_input_shape", read_build_input_shape, 0},
    {NULL, NULL, 0},
};

/* Model.get_build_config: {"input_shape": [...]}. */
static const struct keras_key BUILD_KEYS[] = {
    {"input_shape", read_build_input_shape, 1},
    {NULL, NULL, 0},
};

static int read_sequential(struct model_read *r, const cJSON *config, char *err)
{
	const struct keras_key *tables[] = {SEQUENTIAL_KEYS, NULL};

	/* Keras 2.2 and before wrote the list of layers alone. */
	if (cJSON_IsArray(config)) {
		r->km->keras_version = 2;
		return read_layers(r, config, err);
	}
	if (keras_read_keys(r, config, tables, r->ctx, err) < 0)
		return -1;
	return read_layers(r, r->layers, err);
}

/* The model class: Sequential only. A Functional model's layers are a
 * graph (inbound_nodes), not a stack. */
static int check_class(const char *class_name, char *err)
{
	char c[KERAS_NAME_LEN];

	if (strcmp(class_name, "Sequential") == 0)
		return 0;
	if (strcmp(class_name, "Functional") == 0 || strcmp(class_name, "Model") == 0)
		return err_set(err, "a %s model is not supported (only Sequential)",
		               keras_clean(c, sizeof(c), class_name));
	return err_set(err, "model class '%s' is not supported (only Sequential)",
	               keras_clean(c, sizeof(c), class_name));
}

static int read_root(struct keras_model *km, const cJSON *root, char *err)
{
	static const char *const extra[] = {"build_config", "compile_config", "keras_version",
	                                    "backend", NULL};
	struct model_read r = {km, {0}, NULL, "model"};
	const cJSON *name, *build, *compile, *version;
	struct keras_obj o;

	if (keras_obj_read(&o, root, extra, "file", "model", err) < 0 ||
	    check_class(o.class_name, err) < 0)
		return -1;
	if (o.config == NULL)
		return err_set(err, "model: \"config\" is missing");
	name = cJSON_GetObjectItemCaseSensitive(o.config, "name");
	snprintf(km->name, sizeof(km->name), "sequential");
	if (cJSON_IsString(name)) {
		char n[KERAS_NAME_LEN];

		snprintf(r.ctx, sizeof(r.ctx), "model '%s'",
		         keras_clean(n, sizeof(n), name->valuestring));
	}
	version = cJSON_GetObjectItemCaseSensitive(root, "keras_version");
	km->keras_version = cJSON_IsString(version) && version->valuestring[0] == '2' ? 2 : 3;
	build = cJSON_GetObjectItemCaseSensitive(root, "build_config");
	if (build != NULL && !cJSON_IsNull(build)) {
		const struct keras_key *tables[] = {BUILD_KEYS, NULL};
		char ctx[KERAS_CTX_LEN + 16];

		snprintf(ctx, sizeof(ctx), "%s: build_config", r.ctx);
		if (keras_read_keys(&r, build, tables, ctx, err) < 0)
			return -1;
	}
	if (read_sequential(&r, o.config, err) < 0)
		return -1;
	km->in_rank = r.in.rank;
	memcpy(km->in_shape, r.in.dims, sizeof(km->in_shape));
	compile = cJSON_GetObjectItemCaseSensitive(root, "compile_config");
	if (compile != NULL && !cJSON_IsNull(compile))
		return keras_compile_read(&km->compile, compile, err);
	return 0;
}

/* --- Reading one --- */

int keras_model_parse(struct keras_model *km, const char *text, size_t len, const char *what,
                      char *err)
{
	cJSON *root = NULL;
	int rc = -1;

	memset(km, 0, sizeof(*km));
	if (len > KERAS_MAX_FILE_BYTES) {
		err_set(err, "%zu bytes, more than the %zu a model file may hold", len,
		        KERAS_MAX_FILE_BYTES);
		goto out;
	}
	root = json_parse(text, len, err);
	if (root == NULL || read_root(km, root, err) < 0)
		goto out;
	km->json = xmalloc(len + 1);
	memcpy(km->json, text, len);
	km->json[len] = '\0';
	km->json_len = len;
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc < 0) {
		keras_model_release(km);
		err_prefix(err, "%s", what);
	}
	return rc;
}

/* The file whole, in a buffer the caller frees, of at most
 * KERAS_MAX_FILE_BYTES. */
static unsigned char *read_file(const char *path, size_t *len, char *err)
{
	struct stat st;
	unsigned char *buf = NULL;
	int fd = file_open_regular(path, &st, err);

	if (fd < 0)
		return NULL;
	if (st.st_size <= 0 || (unsigned long long)st.st_size > KERAS_MAX_FILE_BYTES) {
		err_set(err, "'%s': %lld bytes, not a model file (1 byte to %zu)", path,
		        (long long)st.st_size, KERAS_MAX_FILE_BYTES);
		close(fd);
		return NULL;
	}
	buf = xmalloc((size_t)st.st_size);
	if (file_read_exact(fd, buf, (size_t)st.st_size, path, err) < 0) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

int keras_model_load(struct keras_model *km, const char *path, char *err)
{
	unsigned char *buf;
	char *config = NULL;
	size_t len = 0, config_len = 0;
	char what[ERR_LEN];
	int rc = -1;

	memset(km, 0, sizeof(*km));
	buf = read_file(path, &len, err);
	if (buf == NULL)
		return -1;
	/* A .keras file is told by its content: people rename files. */
	if (keras_zip_is_zip(buf, len)) {
		if (keras_zip_read(buf, len, "config.json", KERAS_MAX_FILE_BYTES, &config,
		                   &config_len, err) < 0) {
			err_prefix(err, "'%s'", path);
			goto out;
		}
		snprintf(what, sizeof(what), "'%s': config.json", path);
		rc = keras_model_parse(km, config, config_len, what, err);
	} else {
		snprintf(what, sizeof(what), "'%s'", path);
		rc = keras_model_parse(km, (const char *)buf, len, what, err);
	}
out:
	free(config);
	free(buf);
	return rc;
}

int keras_model_builtin(struct keras_model *km, const char *name, char *err)
{
	char what[KERAS_CTX_LEN];

	for (size_t i = 0; name != NULL && i < keras_builtins_count; i++) {
		if (strcmp(name, keras_builtins[i].name) == 0) {
			snprintf(what, sizeof(what), "built-in model '%s'", name);
			return keras_model_parse(km, keras_builtins[i].text, keras_builtins[i].len,
			                         what, err);
		}
	}
	memset(km, 0, sizeof(*km));
	return err_set(err, "unknown model '%s' (built in: %s; or the path of a Keras model file)",
	               keras_clean(what, sizeof(what), name != NULL ? name : ""),
	               keras_builtins_names);
}

const char *keras_model_builtin_names(void)
{
	return keras_builtins_names;
}

void keras_model_release(struct keras_model *km)
{
	if (km == NULL)
		return;
	free(km->json);
	memset(km, 0, sizeof(*km));
}

int keras_model_open(struct keras_model *km, const char *name_or_path, char *err)
{
	if (strchr(name_or_path, '/') == NULL && strchr(name_or_path, '.') == NULL)
		return keras_model_builtin(km, name_or_path, err);
	return keras_model_load(km, name_or_path, err);
}
