/* model_file.h - the trained model on disk: "<model-dir>/model.mwj".
 *
 * Format, version 2 (all integers little-endian):
 *   offset 0   8 bytes  magic "MWJMODEL"
 *          8   u32      format version (2)
 *         12   u32      H, length of the JSON header
 *         16   H bytes  JSON header: {"format":"mwj-model","version":2,
 *                       "model":"cnn","arch":"input 28x28x1; conv2d ...",
 *                       "arch_hash":"<16 hex digits>","input":[28,28],
 *                       "outputs":10,"num_params":N,"model_state":S,
 *                       "dtype":"float32","keras":"<the model's Keras
 *                       JSON, as a string>","trained":{"optimizer":"sgd",
 *                       ...,"loss":"sparse_categorical_crossentropy",
 *                       "from_logits":true,"metrics":["accuracy"]}}
 *     16 + H   N float32 parameters in the model's layer order
 *     ...      S float32 the model's state (batch normalisation's moving
 *                       statistics)
 *     end - 4  u32      CRC-32C of every byte before it
 * The Keras JSON is the architecture: evaluate builds the model from it
 * alone, and checks that it gives the arch_hash recorded. Version 1 (mwj
 * 0.1: the two built-in models, by name, on 28x28x1 inputs, no state and
 * no Keras JSON) is read too.
 * A reader must refuse an unknown version, a length that disagrees with the
 * header, a bad CRC, or an architecture other than the one it builds. This
 * one refuses anything but a regular file, and a length that disagrees
 * with the header before it reads or allocates the parameters.
 */
#ifndef MWJ_MODEL_FILE_H
#define MWJ_MODEL_FILE_H

#include <stdint.h>

#include "keras_model.h"
#include "loss.h"
#include "model.h"

#define MODEL_FILE_NAME    "model.mwj"
#define MODEL_FILE_VERSION 2

/* How the model was trained, recorded in the header for people and tools,
 * and the loss and metrics, which evaluate uses again. */
struct model_file_info {
	const char *optimizer;
	double learning_rate;
	int batch_size; /* per worker */
	int workers;
	int epochs;
	long global_step;
	uint64_t seed;
	const struct loss_config *loss; /* NULL: none recorded */
	int nmetrics;
	const enum metric_kind *metrics; /* as asked for, before loss_resolve */
	float rescale;                   /* --rescale: 0 for the data's default */
};

/* Creates dir if needed and writes m, built from km, atomically. Returns 0,
 * or -1 with a message in err. */
int model_file_save(const char *dir, const struct model *m, const struct keras_model *km,
                    const struct model_file_info *info, char *err);

/* What a model file holds: the model, built for max_batch examples a step
 * with its parameters and state, the Keras plan it was built from, and
 * the loss and metrics it was trained with (has_loss 0 when the file
 * records none). */
struct model_file {
	struct model *model;
	struct keras_model *km;
	int has_loss;
	struct loss_config loss;
	int nmetrics;
	enum metric_kind metrics[LOSS_MAX_METRICS];
	float rescale; /* what training's inputs were scaled by: 0, the data's default */
};

/* Reads "<dir>/model.mwj", checks it, and builds the model it describes
 * for up to max_batch examples per step. Returns 0 with f filled (release
 * it with model_file_release), or -1 with a message in err naming the
 * file. */
int model_file_load(const char *dir, int max_batch, struct model_file *f, char *err);
void model_file_release(struct model_file *f);

#endif
