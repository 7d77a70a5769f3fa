/* model.h - a Keras Sequential model (keras_model.h) over contiguous
 * buffers, each allocated once: parameters, gradients, state and
 * activations (llm.c's layout).
 *
 * Tensors are NHWC and kernels use Keras' layouts but one: conv (KH, KW, C,
 * OC) then its bias, as Keras; dense (OUT, IN) then its bias, the transpose
 * of Keras' (IN, OUT) (PyTorch's order, which OpenBLAS runs faster, see
 * dense.h); batch normalisation gamma then beta. Parameters are laid out
 * layer by layer in forward order, each layer's contiguous, so its
 * gradients are one slice of the gradient buffer, and the backward pass
 * finishes them last layer first.
 *
 * Flatten and Reshape move no data in NHWC: they are not layers here, only
 * a change of shape between two layers. Every other layer of the file is
 * one layer of the model, its activation fused in (a ReLU into the
 * convolution's and the dense product's own passes).
 *
 * Non-trainable variables (BatchNormalization's moving mean and variance)
 * live in the state buffer, which backups, the state sync and the model
 * file carry with the parameters. While training, each batch
 * normalisation layer also writes its batch mean and variance into the
 * gradient buffer after the parameters' gradients (nstats floats), so
 * that they are summed across workers with the gradients; then
 * model_update_state averages them into the moving statistics, which is
 * what MultiWorkerMirroredStrategy's MEAN aggregation of those variables
 * gives.
 */
#ifndef MWJ_MODEL_H
#define MWJ_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "conv.h"
#include "grad_slice.h"
#include "keras_model.h"
#include "pool.h"

#define MODEL_MAX_LAYERS KERAS_MAX_LAYERS
#define MODEL_DESC_LEN   8192
#define MODEL_NAME_LEN   KERAS_NAME_LEN
/* Refuse shapes whose buffers would exceed this, rather than dying in
 * malloc: a model file is outside input. */
#define MODEL_MAX_BYTES (16ull << 30)

enum layer_kind {
	LAYER_CONV2D,
	LAYER_MAXPOOL2, /* 2x2, stride 2, valid: the seed models', a path of its own */
	LAYER_MAXPOOL,
	LAYER_AVGPOOL,
	LAYER_GLOBAL_AVGPOOL,
	LAYER_DENSE,
	LAYER_DROPOUT,
	LAYER_ACTIVATION,
	LAYER_BATCHNORM,
};

struct layer {
	enum layer_kind kind;
	int source;              /* its index among the file's layers, for messages */
	struct keras_act act;    /* conv, dense, activation; linear for none */
	int relu;                /* act is a ReLU fused into the layer's own pass */
	int in_h, in_w, in_c;    /* per example */
	int out_h, out_w, out_c; /* dense: in_h, in_w, units */
	size_t in_len, out_len;  /* per-example element counts */
	int kh, kw;              /* conv kernel */
	struct conv_geom conv;
	struct pool_geom pool;
	int units_in;                      /* dense: the width of an input row (in_c) */
	size_t w_off, w_len, b_off, b_len; /* params: kernel (gamma), bias (beta) */
	size_t s_off, s_len;               /* state: moving mean (C), moving variance (C) */
	size_t st_off;                     /* batch mean (C), variance (C) in grads, from nparams */
	float rate;                        /* dropout */
	uint64_t key;                      /* dropout: the mask's key (dropout_key) */
	double momentum;                   /* batch normalisation */
	float epsilon;
	int center, scale;
	/* Views into acts. */
	float *out;           /* (max_batch, out_len) */
	float *pre;           /* (max_batch, out_len): the activation's input, when kept */
	float *cols;          /* conv: im2col scratch */
	float *dcols;         /* conv not first: scratch for the input gradient */
	float *mean, *invstd; /* batch normalisation: (C) each, for backward */
	int synchronized;     /* batch normalisation over the global batch */
	double *sums;         /* synchronized: (2C + 1) the forward's global sum x, sum
	                       * x^2 and rows, then (2C) the backward's sums */
};

/* A sum across the workers inside a pass, for the batch normalisation
 * layers that say "synchronized": sums the n doubles of v over every
 * worker in place and returns 0, or -1 once the group has failed (the
 * step is then lost, and the layer finishes it on this worker's own
 * batch). */
struct model_sync {
	int (*sum)(void *ctx, double *v, size_t n);
	void *ctx;
};

/* How a forward pass runs: training (dropout, batch statistics) or not,
 * for dropout where the batch's first example is in the data stream, so
 * that its mask is a function of the example, and with sync, how
 * synchronized batch normalisation layers meet the other workers (NULL:
 * alone, each layer sees this worker's batch, which for a world of one is
 * the global batch). */
struct model_pass {
	int training;
	uint64_t pos;
	const struct model_sync *sync;
};

struct model {
	char name[MODEL_NAME_LEN];
	char desc[MODEL_DESC_LEN]; /* canonical architecture string, hashed */
	uint64_t arch_hash;
	int in_rank, in_shape[KERAS_MAX_RANK]; /* what the file says an example is */
	int in_h, in_w, in_c;                  /* as the first layer sees it */
	size_t in_len;
	size_t out_len;    /* outputs per example */
	int output_logits; /* the loss reads the last activation's input */
	int max_batch;
	int nlayers;
	struct layer layers[MODEL_MAX_LAYERS];
	size_t nparams, nstate, nstats, nacts;
	float *params;          /* (nparams) */
	float *grads;           /* (nparams + nstats) */
	int grads_zeroed;       /* grads holds zeros: see model_backward */
	float *state;           /* (nstate) */
	float *acts;            /* (nacts): outputs, scratch and the two gradient buffers */
	float *dlogits;         /* (max_batch, out_len), view into acts */
	float *dbuf[2];         /* ping-pong activation gradients, views into acts */
	double *sync_sums;      /* the synchronized layers' sums, NULL if none */
	struct model_pass pass; /* of the last forward pass */
	uint64_t seed;          /* model_init_params': dropout's keys */
};

/* What a model needs, before it is built. */
struct model_size {
	size_t nparams, nstate;
	uint64_t arch_hash;
	size_t bytes; /* every buffer at max_batch */
};

/* Model construction
 * model_new: builds km for up to max_batch examples per step, its
 * parameters zeroed, the state at Keras' initial values. output_logits:
 * the loss will read the last layer's activation input (a softmax or
 * sigmoid that the cross-entropy takes as logits, loss.h), which is then
 * kept. Returns a model the caller frees with model_free, or NULL with a
 * message in err naming the layer for a shape that does not fit (an input
 * too small for a kernel, a Reshape whose size differs, a Dense or Conv2D
 * on a rank it does not take), or buffers larger than MODEL_MAX_BYTES.
 * model_plan: what model_new would build, without allocating it: 0 with
 * its sizes, or -1 with the message model_new would give. For readers of a
 * file that names a model, which check that the file holds its parameters
 * before a hostile header makes them allocate gigabytes. */
struct model *model_new(const struct keras_model *km, int max_batch, int output_logits, char *err);
int model_plan(const struct keras_model *km, int max_batch, int output_logits,
               struct model_size *out, char *err);
void model_free(struct model *m);

/* Whether the file's last layer ends in a softmax or a sigmoid, whose
 * input a cross-entropy reads as logits (loss.h): KERAS_ACT_SOFTMAX,
 * KERAS_ACT_SIGMOID, or KERAS_ACT_LINEAR for anything else. */
enum keras_activation model_output_activation(const struct keras_model *km);

/* How a loss reads the model km builds, as Keras 3 under TensorFlow does
 * (loss.h): a cross-entropy after a softmax or a sigmoid (either, for any
 * of the three) reads that activation's input as logits, whatever
 * from_logits says; otherwise the loss reads the outputs, as logits when
 * from_logits says so. Sets *spec_logits (for loss_resolve) and
 * *output_logits (for model_new). */
void model_loss_reads(const struct keras_model *km, const struct loss_config *c, int *spec_logits,
                      int *output_logits);

/* The file's initializers (kernel, bias, gamma, beta), in layer order,
 * drawn from seed except where an initializer has a seed of its own; the
 * moving statistics at their initial values; dropout's keys from seed.
 * Keras' defaults are Glorot-uniform kernels and zero biases. */
void model_init_params(struct model *m, const struct keras_model *km, uint64_t seed);

/* Training step pieces
 * model_forward: x (B, in_len) -> outputs (B, out_len), B <= max_batch;
 * pass NULL is inference.
 * model_logits: what the loss reads (the last activation's input with
 * output_logits, else the outputs); model_outputs: the outputs.
 * model_backward: reads model->dlogits (B, out_len), the gradient of the
 * loss with respect to model_logits, which the caller fills, and
 * overwrites model->grads with the gradients for the same x, B and pass.
 * If grads_zeroed is set (the caller's promise that grads holds zeros, as
 * the optimizer leaves it), the dense kernels' gradients are added to
 * those zeros instead, which saves clearing them; the flag is cleared.
 * on_grads, if not NULL, is called with slices of grads as they become
 * final (grad_slice.h): layer by layer, last layer first, and within a
 * dense layer block by block, a batch normalisation layer's statistics
 * with its parameters. Slices of one layer may be reported from several
 * compute threads at once; they never overlap, together they cover the
 * parameters and statistics exactly once, and parameters are no longer
 * read by the backward pass once their slice is reported, so the callback
 * may update them.
 * model_update_state: after the statistics in grads (beyond nparams) have
 * been summed over world workers, moves the moving statistics toward
 * their mean; a layer synchronized in the pass moves them toward the
 * global batch's statistics it computed.
 * In a pass with sync, a synchronized layer sums its statistics across
 * the workers in the forward pass, and in the backward pass, after
 * reporting its parameters' gradients, the sums its input gradient needs;
 * below the lowest layer with parameters no gradient is computed. */
void model_forward(struct model *m, const float *x, int B, const struct model_pass *pass);
const float *model_logits(const struct model *m);
const float *model_outputs(const struct model *m);
void model_backward(struct model *m, const float *x, int B, grad_ready_fn on_grads, void *ctx);
void model_update_state(struct model *m, int world);

/* Floating-point operations of the matrix products of one training step
 * (forward and backward) at batch B as this code computes them, for
 * throughput reports: a convolution on the Winograd path counts its
 * transformed products (conv_geom_macs), not im2col's. */
double model_step_gemm_flops(const struct model *m, int B);

#endif
