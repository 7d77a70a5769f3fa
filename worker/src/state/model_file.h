/* model_file.h - the trained model on disk: "<model-dir>/model.mwj".
 *
 * Format, version 1 (all integers little-endian):
 *   offset 0   8 bytes  magic "MWJMODEL"
 *          8   u32      format version (1)
 *         12   u32      H, length of the JSON header
 *         16   H bytes  JSON header: {"format":"mwj-model","version":1,
 *                       "model":"cnn","arch":"input 28x28x1; conv2d ...",
 *                       "arch_hash":"<16 hex digits>","input":[28,28,1],
 *                       "classes":10,"num_params":N,"dtype":"float32",
 *                       "trained":{...how it was trained...}}
 *     16 + H   N float32 parameters in the model's layer order
 *     end - 4  u32      CRC-32C of every byte before it
 * A reader must refuse an unknown version, a length that disagrees with the
 * header, a bad CRC, or an architecture other than the one it builds. This
 * one refuses anything but a regular file, and a length that disagrees
 * with the header before it reads or allocates the parameters.
 */
#ifndef MWJ_MODEL_FILE_H
#define MWJ_MODEL_FILE_H

#include <stdint.h>

#include "model.h"

#define MODEL_FILE_NAME    "model.mwj"
#define MODEL_FILE_VERSION 1

/* How the model was trained, recorded in the header for people and tools. */
struct model_file_info {
	const char *optimizer;
	double learning_rate;
	int batch_size; /* per worker */
	int workers;
	int epochs;
	long global_step;
	uint64_t seed;
};

/* Creates dir if needed and writes the model atomically. Returns 0, or -1 with
 * a message in err. */
int model_file_save(const char *dir, const struct model *m, const struct model_file_info *info,
                    char *err);

/* Reads "<dir>/model.mwj", checks it, and builds the model it describes for
 * up to max_batch examples per step. Returns a model the caller frees with
 * model_free, or NULL with a message in err naming the file. */
struct model *model_file_load(const char *dir, int max_batch, char *err);

#endif
