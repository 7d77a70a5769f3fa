/* model_cuda.h - a replica of the model on one GPU: the same layers, the
 * same parameter layout (model.h), its buffers in the GPU's memory, and
 * the forward and backward passes enqueued on one stream.
 *
 * Every layer model.h builds runs here, with model.c's passes step for
 * step: which layer keeps its activation's input (pre), which ReLU a
 * later layer applies, where the loss reads the logits, which layers the
 * backward pass skips. The matrix products are cuBLAS's sgemm in FP32 (no
 * TF32, so the GPU computes what the CPU computes, in another order), the
 * convolution lowered through im2col for any strides and padding (without
 * the CPU's direct path for one input channel: cuBLAS is not short of
 * work there), its bias in the product as a row of ones (conv.h); a dense
 * layer's bias and ReLU in one kernel, its bias gradient the column sums
 * in row order. The rest is kernels.cu, whose arithmetic is the CPU's
 * (elem.h): pooling, activations, dropout (the mask of dropout.h at the
 * stream position in cm->pos), batch normalisation with the batch's
 * statistics written beyond the gradients, as model.c writes them, and the
 * loss. Nothing is allocated after cuda_model_init, so a step can be
 * captured in a CUDA graph; cuBLAS gets a fixed workspace for the same
 * reason, and because that also keeps its results the same bits from run
 * to run.
 */
#ifndef MWJ_CUDA_MODEL_H
#define MWJ_CUDA_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "loss.h"
#include "metrics.h"
#include "model.h"

/* The doubles of cm->sums: metrics_to_words' layout (the loss, the count,
 * the metrics), which the loss writes, then two the backend fills: the
 * preemption notices, and the replicas whose batch statistics the
 * all-reduce sums (1 on each). */
enum { CUDA_SUM_NOTICE = METRICS_WORDS, CUDA_SUM_REPLICAS, CUDA_SUMS };

struct cuda_layer {
	float *out;           /* (max_batch, out_len) */
	float *pre;           /* (max_batch, out_len): where the host layer keeps one */
	float *cols;          /* conv: (KC, max_batch * OH * OW) */
	float *dcols;         /* conv not first: (K, max_batch * OH * OW) */
	float *mean, *invstd; /* batch normalisation: (C) each, for backward */
	float *coef;          /* batch normalisation: (3, C) scratch */
};

struct cuda_model {
	const struct model *host; /* shapes, offsets and flags, borrowed */
	int device, max_batch;
	cudaStream_t stream;
	cublasHandle_t blas;
	void *workspace;
	float *params; /* (nparams) */
	float *grads;  /* (nparams + nstats): the batch statistics last, as model.h */
	float *state;  /* (nstate): the moving statistics */
	float *acts;   /* every buffer below, in one allocation */
	struct cuda_layer layers[MODEL_MAX_LAYERS];
	float *dlogits; /* (max_batch, out_len) */
	float *dbuf[2]; /* ping-pong activation gradients */
	double *sums;   /* (CUDA_SUMS) */
	uint64_t *pos;  /* (1): the stream position of the batch's first example */
};

/* Called after each layer's gradients are final in the backward pass,
 * layer by layer, last first: lets the caller start reducing them. */
typedef void (*cuda_layer_done_fn)(void *ctx, int layer);

/* Makes the replica on device for batches up to max_batch, its parameters
 * and state uninitialized (the caller copies the host's), with a stream
 * and a cuBLAS handle of its own. Dies when the GPU is out of memory.
 * release accepts a zeroed struct. */
void cuda_model_init(struct cuda_model *cm, const struct model *host, int device, int max_batch);
void cuda_model_release(struct cuda_model *cm);

/* Enqueue on cm->stream, and return at once. cudaSetDevice(cm->device)
 * must be current.
 * forward: x (B, in_len) -> every layer's output; training (dropout's
 * masks at *cm->pos, which the caller writes on the stream first, and the
 * batch's statistics into grads beyond nparams) or inference (the moving
 * statistics).
 * loss: the loss and metric sums of spec over what the loss reads (the
 * logits) and the outputs against y (B, spec->T) into cm->sums (metrics'
 * words), and, if backward, the logits' gradient scaled by scale.
 * backward: the gradients of everything for x after a training forward
 * pass, into cm->grads (overwritten), calling done(ctx, layer) after each
 * layer's are enqueued, down to the lowest layer with parameters, as
 * model_backward; done may be NULL.
 * update_state: moves the moving statistics toward the batch statistics
 * in grads, summed there over world replicas, as model_update_state. */
void cuda_model_forward(struct cuda_model *cm, const float *x, int B, int training);
void cuda_model_loss(struct cuda_model *cm, const struct loss_spec *spec, const float *y, int B,
                     float scale, int backward);
void cuda_model_backward(struct cuda_model *cm, const float *x, int B, cuda_layer_done_fn done,
                         void *ctx);
void cuda_model_update_state(struct cuda_model *cm, int world);

/* What the loss reads on the GPU (model_logits), and the outputs. */
const float *cuda_model_logits(const struct cuda_model *cm);
const float *cuda_model_outputs(const struct cuda_model *cm);

#endif
