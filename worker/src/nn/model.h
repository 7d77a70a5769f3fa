/* model.h - the seed models: a sequence of layers over three contiguous
 * buffers (parameters, gradients, activations), each allocated once.
 *
 * Tensors are NHWC and kernels use Keras' layouts: conv (KH, KW, C, OC),
 * dense (OUT, IN). Parameters are laid out layer by layer in forward order
 * (kernel, then bias), so each layer's gradients are one contiguous slice of
 * the gradient buffer, and the backward pass finishes them last layer first.
 */
#ifndef MWJ_MODEL_H
#define MWJ_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "grad_slice.h"

#define MODEL_MAX_LAYERS 8
#define MODEL_DESC_LEN   512
/* Refuse shapes whose buffers would exceed this, rather than dying in
 * malloc: a model file header is outside input. */
#define MODEL_MAX_BYTES (16ull << 30)

enum layer_kind { LAYER_CONV2D, LAYER_MAXPOOL2, LAYER_DENSE };

struct layer {
	enum layer_kind kind;
	int relu;                          /* ReLU applied to the output */
	int in_h, in_w, in_c;              /* per example; a dense layer sees in_h*in_w*in_c */
	int out_h, out_w, out_c;           /* dense: 1, 1, units */
	int kh, kw;                        /* conv kernel */
	size_t in_len, out_len;            /* per-example element counts */
	size_t w_off, w_len, b_off, b_len; /* slices of params and grads */
	float *out;                        /* (max_batch, out_h, out_w, out_c), view into acts */
	float *cols;  /* conv: (kh*kw*in_c, max_batch*out_h*out_w) im2col scratch */
	float *dcols; /* conv not first: scratch for the input gradient */
};

struct model {
	char name[32];
	char desc[MODEL_DESC_LEN]; /* canonical architecture string, hashed */
	uint64_t arch_hash;
	int in_h, in_w, in_c, classes;
	int max_batch;
	int nlayers;
	struct layer layers[MODEL_MAX_LAYERS];
	size_t nparams, nacts;
	float *params;    /* (nparams) */
	float *grads;     /* (nparams) */
	int grads_zeroed; /* grads holds zeros: see model_backward */
	float *acts;      /* (nacts): outputs, scratch and the two gradient buffers */
	float *dlogits;   /* (max_batch, classes), view into acts */
	float *dbuf[2];   /* ping-pong activation gradients, views into acts */
};

/* Model construction
 * model_new: builds the named model ("cnn" or "cnn-pool") for inputs of
 * (in_h, in_w, in_c) and up to max_batch examples per step, with parameters
 * zeroed. Returns a model the caller frees with model_free, or NULL with a
 * message in err for an unknown name, an input too small for the model, or
 * buffers larger than MODEL_MAX_BYTES.
 * model_plan: what model_new would build, without allocating it: 0 with
 * its parameter count and architecture hash, or -1 with the message
 * model_new would give. For readers of a file that names a model, which
 * check that the file holds its parameters before a hostile header makes
 * them allocate gigabytes.
 * model_names: the valid names, for --help and error messages. */
struct model *model_new(const char *name, int in_h, int in_w, int in_c, int classes, int max_batch,
                        char *err);
int model_plan(const char *name, int in_h, int in_w, int in_c, int classes, int max_batch,
               size_t *nparams, uint64_t *arch_hash, char *err);
void model_free(struct model *m);
const char *model_names(void);

/* Keras' default initializers: Glorot-uniform kernels, zero biases, drawn in
 * layer order from the seed. */
void model_init_params(struct model *m, uint64_t seed);

/* Training step pieces
 * model_forward: x (B, in_h, in_w, in_c) -> logits (B, classes), B <= max_batch.
 * model_backward: reads model->dlogits (B, classes), which the caller fills,
 * and overwrites model->grads with the gradients for the same x and B. If
 * grads_zeroed is set (the caller's promise that grads holds zeros, as the
 * optimizer leaves it), the dense kernels' gradients are added to those
 * zeros instead, which saves clearing them; the flag is cleared.
 * on_grads, if not NULL, is called with slices of grads as they become
 * final (grad_slice.h): layer by layer, last layer first, and within a dense
 * layer block by block. Slices of one layer may be reported from several
 * compute threads at once; they never overlap, together they cover the
 * layer's parameters exactly once, and parameters are no longer read by the
 * backward pass once their slice is reported, so the callback may update
 * them. */
void model_forward(struct model *m, const float *x, int B);
const float *model_logits(const struct model *m);
void model_backward(struct model *m, const float *x, int B, grad_ready_fn on_grads, void *ctx);

/* Floating-point operations of the matrix products of one training step
 * (forward and backward) at batch B, for throughput reports. */
double model_step_gemm_flops(const struct model *m, int B);

#endif
