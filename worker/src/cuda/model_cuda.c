/* model_cuda.c - the model's layers on one GPU: cuBLAS for the products,
 * kernels.cu for the rest. */
#include "model_cuda.h"

#include <string.h>

#include "conv.h"
#include "cuda_check.h"
#include "kernels.h"

/* cuBLAS's workspace: its documentation asks for one set by the caller
 * when work is captured in graphs; 32 MiB covers Hopper's largest. */
#define WORKSPACE_BYTES ((size_t)32 << 20)

/* Row-major C (M, N) = alpha op(A) op(B) + beta C, as cblas_sgemm with
 * CblasRowMajor: cuBLAS is column-major, and a row-major matrix is its
 * transpose, so C^T = op(B)^T op(A)^T is the product to ask for. */
static void gemm(struct cuda_model *cm, int ta, int tb, int M, int N, int K, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
	const float one = 1.0f;

	CUBLAS_CHECK(cublasSgemm(cm->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
	                         ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &one, B, ldb, A, lda,
	                         &beta, C, ldc));
}

/* Floats of the activation buffers for max_batch; with base, carves them. */
static size_t carve(struct cuda_model *cm, float *base)
{
	const struct model *m = cm->host;
	size_t off = 0, B = (size_t)cm->max_batch, widest = 0;

#define TAKE(ptr, n)                                                                               \
	do {                                                                                       \
		(ptr) = base ? base + off : NULL;                                                  \
		off += ((n) + 63) & ~(size_t)63; /* 256-byte aligned */                            \
	} while (0)
	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		struct cuda_layer *cl = &cm->layers[i];
		TAKE(cl->out, B * l->out_len);
		cl->cols = cl->dcols = NULL;
		if (l->kind == LAYER_CONV2D) {
			size_t rows = (size_t)l->kh * l->kw * l->in_c;
			size_t M = B * (size_t)l->out_h * l->out_w;
			TAKE(cl->cols, (rows + 1) * M);
			if (i > 0)
				TAKE(cl->dcols, rows * M);
		}
		if (l->out_len > widest)
			widest = l->out_len;
		if (i > 0 && l->in_len > widest)
			widest = l->in_len;
	}
	TAKE(cm->dlogits, B * m->out_len);
	TAKE(cm->dbuf[0], B * widest);
	TAKE(cm->dbuf[1], B * widest);
	TAKE(cm->ones, B);
#undef TAKE
	return off;
}

void cuda_model_init(struct cuda_model *cm, const struct model *host, int device, int max_batch)
{
	size_t n = host->nparams, nacts;

	memset(cm, 0, sizeof(*cm));
	cm->host = host;
	cm->device = device;
	cm->max_batch = max_batch;
	CUDA_CHECK(cudaSetDevice(device));
	CUDA_CHECK(cudaStreamCreateWithFlags(&cm->stream, cudaStreamNonBlocking));
	CUBLAS_CHECK(cublasCreate(&cm->blas));
	CUBLAS_CHECK(cublasSetStream(cm->blas, cm->stream));
	/* FP32 throughout (the default math mode; TF32 must be asked for): TF32 would round the
	 * inputs of every product to 10 bits of mantissa, and the GPU would no longer train the
	 * model the CPU trains. */
	CUBLAS_CHECK(cublasSetMathMode(cm->blas, CUBLAS_DEFAULT_MATH));
	CUDA_CHECK(cudaMalloc(&cm->workspace, WORKSPACE_BYTES));
	CUBLAS_CHECK(cublasSetWorkspace(cm->blas, cm->workspace, WORKSPACE_BYTES));
	CUDA_CHECK(cudaMalloc((void **)&cm->params, n * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&cm->grads, n * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&cm->sums, 4 * sizeof(double)));
	nacts = carve(cm, NULL);
	CUDA_CHECK(cudaMalloc((void **)&cm->acts, nacts * sizeof(float)));
	carve(cm, cm->acts);
	CUDA_CHECK(cudaMemsetAsync(cm->grads, 0, n * sizeof(float), cm->stream));
	CUDA_CHECK(cudaMemsetAsync(cm->sums, 0, 4 * sizeof(double), cm->stream));
	kernel_fill(cm->ones, 1.0f, max_batch, cm->stream);
	CUDA_CHECK(cudaStreamSynchronize(cm->stream));
}

void cuda_model_release(struct cuda_model *cm)
{
	if (!cm->host)
		return;
	cudaSetDevice(cm->device);
	if (cm->stream)
		cudaStreamSynchronize(cm->stream);
	cudaFree(cm->acts);
	cudaFree(cm->params);
	cudaFree(cm->grads);
	cudaFree(cm->sums);
	if (cm->blas)
		cublasDestroy(cm->blas);
	cudaFree(cm->workspace);
	if (cm->stream)
		cudaStreamDestroy(cm->stream);
	memset(cm, 0, sizeof(*cm));
}

static void conv_forward_gpu(struct cuda_model *cm, int i, const float *in, int B)
{
	const struct layer *l = &cm->host->layers[i];
	struct cuda_layer *cl = &cm->layers[i];
	int K = l->kh * l->kw * l->in_c, M = B * l->out_h * l->out_w;
	const float *wb = cm->params + l->w_off; /* (K + 1, OC): the bias is row K */

	kernel_im2col(cl->cols, in, B, l->in_h, l->in_w, l->in_c, l->kh, l->kw, cm->stream);
	/* out (M, OC) = cols^T (M, K + 1) @ wb (K + 1, OC) */
	gemm(cm, 1, 0, M, l->out_c, K + 1, cl->cols, M, wb, l->out_c, 0.0f, cl->out, l->out_c);
	if (l->relu)
		kernel_bias_act(cl->out, NULL, M, l->out_c, 1, cm->stream);
}

void cuda_model_forward(struct cuda_model *cm, const float *x, int B)
{
	const struct model *m = cm->host;
	const float *in = x;

	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		struct cuda_layer *cl = &cm->layers[i];
		switch (l->kind) {
		case LAYER_CONV2D:
			conv_forward_gpu(cm, i, in, B);
			break;
		case LAYER_MAXPOOL2:
			kernel_maxpool_forward(cl->out, in, B, l->in_h, l->in_w, l->in_c,
			                       cm->stream);
			break;
		case LAYER_DENSE:
			/* out (B, OUT) = in (B, IN) @ w^T (IN, OUT), then bias and ReLU */
			gemm(cm, 0, 1, B, l->out_c, l->units_in, in, l->units_in,
			     cm->params + l->w_off, l->units_in, 0.0f, cl->out, l->out_c);
			kernel_bias_act(cl->out, cm->params + l->b_off, B, l->out_c, l->relu,
			                cm->stream);
			break;
		default:
			break; /* backend_cuda_supports refuses the rest */
		}
		in = cl->out;
	}
}

void cuda_model_loss(struct cuda_model *cm, const float *y, int B, float scale, int backward)
{
	const struct model *m = cm->host;

	kernel_xent(backward ? cm->dlogits : NULL, cm->sums, cm->layers[m->nlayers - 1].out, y, B,
	            (int)m->out_len, scale, cm->stream);
}

/* Whether layer i, computing its input's gradient, also applies the
 * backward pass of the ReLU that produced that input (model.c does the
 * same). */
static int absorbs_input_relu(const struct model *m, int i)
{
	return i > 0 && m->layers[i - 1].relu &&
	       (m->layers[i].kind == LAYER_DENSE || m->layers[i].kind == LAYER_MAXPOOL2);
}

static void conv_backward_gpu(struct cuda_model *cm, int i, const float *dout, float *din, int B)
{
	const struct layer *l = &cm->host->layers[i];
	struct cuda_layer *cl = &cm->layers[i];
	int K = l->kh * l->kw * l->in_c, M = B * l->out_h * l->out_w;

	/* dwb (K + 1, OC) = cols (K + 1, M) @ dout (M, OC): the bias's too */
	gemm(cm, 0, 0, K + 1, l->out_c, M, cl->cols, M, dout, l->out_c, 0.0f, cm->grads + l->w_off,
	     l->out_c);
	if (!din)
		return;
	/* dcols (K, M) = w (K, OC) @ dout^T (OC, M), then back onto the pixels */
	gemm(cm, 0, 1, K, M, l->out_c, cm->params + l->w_off, l->out_c, dout, l->out_c, 0.0f,
	     cl->dcols, M);
	kernel_col2im(din, cl->dcols, B, l->in_h, l->in_w, l->in_c, l->kh, l->kw, cm->stream);
}

static void dense_backward_gpu(struct cuda_model *cm, int i, const float *dout, float *din,
                               const float *in, int B, int absorb)
{
	const struct layer *l = &cm->host->layers[i];
	int IN = l->units_in, OUT = l->out_c;
	const float one = 1.0f, zero = 0.0f;

	/* dw (OUT, IN) = dout^T (OUT, B) @ in (B, IN) */
	gemm(cm, 1, 0, OUT, IN, B, dout, OUT, in, IN, 0.0f, cm->grads + l->w_off, IN);
	/* db (OUT) = the column sums of dout: dout as cuBLAS sees it,
	 * (OUT, B) column-major, times a vector of ones */
	CUBLAS_CHECK(cublasSgemv(cm->blas, CUBLAS_OP_N, OUT, B, &one, dout, OUT, cm->ones, 1, &zero,
	                         cm->grads + l->b_off, 1));
	if (!din)
		return;
	/* din (B, IN) = dout (B, OUT) @ w (OUT, IN) */
	gemm(cm, 0, 0, B, IN, OUT, dout, OUT, cm->params + l->w_off, IN, 0.0f, din, IN);
	if (absorb)
		kernel_relu_backward(din, in, (long)B * IN, cm->stream);
}

void cuda_model_backward(struct cuda_model *cm, const float *x, int B, cuda_layer_done_fn done,
                         void *ctx)
{
	const struct model *m = cm->host;
	float *dout = cm->dlogits;
	int relu_done = 0; /* dout already has this layer's ReLU applied */

	for (int i = m->nlayers - 1; i >= 0; i--) {
		const struct layer *l = &m->layers[i];
		const float *in = i > 0 ? cm->layers[i - 1].out : x;
		float *din = i > 0 ? (dout == cm->dbuf[0] ? cm->dbuf[1] : cm->dbuf[0]) : NULL;
		int absorb = absorbs_input_relu(m, i);

		if (l->relu && !relu_done)
			kernel_relu_backward(dout, cm->layers[i].out, (long)B * l->out_len,
			                     cm->stream);
		switch (l->kind) {
		case LAYER_CONV2D:
			conv_backward_gpu(cm, i, dout, din, B);
			break;
		case LAYER_MAXPOOL2:
			if (din)
				kernel_maxpool_backward(din, dout, in, cm->layers[i].out, B,
				                        l->in_h, l->in_w, l->in_c, absorb,
				                        cm->stream);
			break;
		case LAYER_DENSE:
			dense_backward_gpu(cm, i, dout, din, in, B, absorb);
			break;
		default:
			break; /* backend_cuda_supports refuses the rest */
		}
		if (done)
			done(ctx, i);
		relu_done = absorb;
		dout = din;
	}
}
