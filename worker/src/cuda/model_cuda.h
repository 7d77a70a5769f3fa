/* model_cuda.h - a replica of the model on one GPU: the same layers, the
 * same parameter layout (model.h), its buffers in the GPU's memory, and
 * the forward and backward passes enqueued on one stream.
 *
 * The matrix products are cuBLAS's sgemm in FP32 (no TF32, so the GPU
 * computes what the CPU computes, in another order), the convolution
 * lowered through im2col as on the CPU (without the CPU's direct path for
 * one input channel: cuBLAS is not short of work there), the bias of a
 * convolution in the product as a row of ones (conv.h), a dense layer's
 * bias and ReLU in one kernel, its bias gradient a product with a vector
 * of ones. Nothing is allocated after cuda_model_init, so a step can be
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

#include "model.h"

struct cuda_layer {
	float *out;   /* (max_batch, out_len) */
	float *cols;  /* conv: (K + 1, max_batch * OH * OW) */
	float *dcols; /* conv not first: (K, max_batch * OH * OW) */
};

struct cuda_model {
	const struct model *host; /* shapes and offsets, borrowed */
	int device, max_batch;
	cudaStream_t stream;
	cublasHandle_t blas;
	void *workspace;
	float *params, *grads; /* (nparams) each */
	float *acts;           /* every buffer below, in one allocation */
	struct cuda_layer layers[MODEL_MAX_LAYERS];
	float *dlogits; /* (max_batch, out_len) */
	float *dbuf[2]; /* ping-pong activation gradients */
	float *ones;    /* (max_batch) of 1.0f, for bias gradients */
	double *sums;   /* (4): the step's loss, correct, count, notices */
};

/* Called after each layer's gradients are final in the backward pass,
 * layer by layer, last first: lets the caller start reducing them. */
typedef void (*cuda_layer_done_fn)(void *ctx, int layer);

/* Makes the replica on device for batches up to max_batch, its parameters
 * uninitialized (cuda_model_upload fills them), with a stream and a cuBLAS
 * handle of its own. Dies when the GPU is out of memory. release accepts a
 * zeroed struct. */
void cuda_model_init(struct cuda_model *cm, const struct model *host, int device, int max_batch);
void cuda_model_release(struct cuda_model *cm);

/* Enqueue on cm->stream, and return at once. cudaSetDevice(cm->device)
 * must be current.
 * forward: x (B, H, W, C) -> the last layer's output, the logits.
 * loss: the loss and correct sums of the logits against y (B) into
 * cm->sums[0..2], and, if backward, the logits' gradient scaled by scale.
 * backward: the gradients of everything for x, into cm->grads
 * (overwritten), calling done(ctx, layer) after each layer's are
 * enqueued; done may be NULL. */
void cuda_model_forward(struct cuda_model *cm, const float *x, int B);
void cuda_model_loss(struct cuda_model *cm, const float *y, int B, float scale, int backward);
void cuda_model_backward(struct cuda_model *cm, const float *x, int B, cuda_layer_done_fn done,
                         void *ctx);

#endif
