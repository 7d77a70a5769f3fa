/* model_cuda.c - the model's layers on one GPU: cuBLAS for the products,
 * kernels.cu for the rest, in model.c's order. */
#include "model_cuda.h"

#include <string.h>

#include "batchnorm.h"
#include "conv.h"
#include "cuda_check.h"
#include "dropout.h"
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

/* Rows of the last axis a layer's output has in a batch of B. */
static long rows_of(const struct layer *l, int B)
{
	return (long)B * l->out_h * l->out_w;
}

/* A convolution's taps, and the rows of its cols: with a bias, one more. */
static int conv_taps(const struct layer *l)
{
	return l->conv.KH * l->conv.KW * l->conv.C;
}

/* Floats of the activation buffers for max_batch; with base, carves them. */
static size_t carve(struct cuda_model *cm, float *base)
{
	const struct model *m = cm->host;
	size_t off = 0, B = (size_t)cm->max_batch, widest = m->out_len;

#define TAKE(ptr, n)                                                                               \
	do {                                                                                       \
		(ptr) = base ? base + off : NULL;                                                  \
		off += ((n) + 63) & ~(size_t)63; /* 256-byte aligned */                            \
	} while (0)
	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		struct cuda_layer *cl = &cm->layers[i];
		memset(cl, 0, sizeof(*cl));
		TAKE(cl->out, B * l->out_len);
		if (l->pre)
			TAKE(cl->pre, B * l->out_len);
		if (l->kind == LAYER_CONV2D) {
			size_t taps = (size_t)conv_taps(l);
			size_t M = B * (size_t)l->conv.OH * l->conv.OW;
			TAKE(cl->cols, (taps + (size_t)l->conv.bias) * M);
			if (i > 0)
				TAKE(cl->dcols, taps * M);
		}
		if (l->kind == LAYER_BATCHNORM) {
			TAKE(cl->mean, (size_t)l->in_c);
			TAKE(cl->invstd, (size_t)l->in_c);
			TAKE(cl->coef, 3 * (size_t)l->in_c);
		}
		if (l->out_len > widest)
			widest = l->out_len;
		if (i > 0 && l->in_len > widest)
			widest = l->in_len;
	}
	TAKE(cm->dlogits, B * m->out_len);
	TAKE(cm->dbuf[0], B * widest);
	TAKE(cm->dbuf[1], B * widest);
#undef TAKE
	return off;
}

void cuda_model_init(struct cuda_model *cm, const struct model *host, int device, int max_batch)
{
	size_t n = host->nparams, ng = host->nparams + host->nstats, nacts;

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
	/* At least a float each, so that a model without parameters or state
	 * still has buffers to point at. */
	CUDA_CHECK(cudaMalloc((void **)&cm->params, (n ? n : 1) * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&cm->grads, (ng ? ng : 1) * sizeof(float)));
	CUDA_CHECK(
	    cudaMalloc((void **)&cm->state, (host->nstate ? host->nstate : 1) * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&cm->sums, CUDA_SUMS * sizeof(double)));
	CUDA_CHECK(cudaMalloc((void **)&cm->pos, sizeof(uint64_t)));
	nacts = carve(cm, NULL);
	CUDA_CHECK(cudaMalloc((void **)&cm->acts, nacts * sizeof(float)));
	carve(cm, cm->acts);
	CUDA_CHECK(cudaMemsetAsync(cm->grads, 0, (ng ? ng : 1) * sizeof(float), cm->stream));
	CUDA_CHECK(cudaMemsetAsync(cm->sums, 0, CUDA_SUMS * sizeof(double), cm->stream));
	CUDA_CHECK(cudaMemsetAsync(cm->pos, 0, sizeof(uint64_t), cm->stream));
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
	cudaFree(cm->state);
	cudaFree(cm->sums);
	cudaFree(cm->pos);
	if (cm->blas)
		cublasDestroy(cm->blas);
	cudaFree(cm->workspace);
	if (cm->stream)
		cudaStreamDestroy(cm->stream);
	memset(cm, 0, sizeof(*cm));
}

static void copy(struct cuda_model *cm, float *dst, const float *src, size_t n)
{
	CUDA_CHECK(
	    cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, cm->stream));
}

/* --- The forward pass --- */

/* The activation of a conv or dense layer, from pre (when kept) into out. */
static void activate(struct cuda_model *cm, const struct layer *l, struct cuda_layer *cl, int B)
{
	if (cl->pre)
		kernel_act_forward(cl->out, cl->pre, rows_of(l, B), l->out_c, &l->act, cm->stream);
}

static void conv_forward_gpu(struct cuda_model *cm, const struct layer *l, struct cuda_layer *cl,
                             const float *in, int B)
{
	const struct conv_geom *g = &l->conv;
	int KC = conv_taps(l) + g->bias, M = B * g->OH * g->OW;
	const float *wb = cm->params + l->w_off; /* (KC, OC): with a bias, it is row K */
	float *dst = cl->pre ? cl->pre : cl->out;

	kernel_im2col(cl->cols, in, B, g, cm->stream);
	/* dst (M, OC) = cols^T (M, KC) @ wb (KC, OC) */
	gemm(cm, 1, 0, M, g->OC, KC, cl->cols, M, wb, g->OC, 0.0f, dst, g->OC);
	if (l->relu && !cl->pre)
		kernel_bias_act(dst, NULL, M, g->OC, 1, cm->stream);
	activate(cm, l, cl, B);
}

static void dense_forward_gpu(struct cuda_model *cm, const struct layer *l, struct cuda_layer *cl,
                              const float *in, int B)
{
	long rows = rows_of(l, B);
	float *dst = cl->pre ? cl->pre : cl->out;
	int relu = l->relu && !cl->pre;

	/* dst (rows, OUT) = in (rows, IN) @ w^T (IN, OUT), then bias and ReLU */
	gemm(cm, 0, 1, (int)rows, l->out_c, l->units_in, in, l->units_in, cm->params + l->w_off,
	     l->units_in, 0.0f, dst, l->out_c);
	if (l->b_len || relu)
		kernel_bias_act(dst, l->b_len ? cm->params + l->b_off : NULL, rows, l->out_c, relu,
		                cm->stream);
	activate(cm, l, cl, B);
}

static void batchnorm_forward_gpu(struct cuda_model *cm, const struct layer *l,
                                  struct cuda_layer *cl, const float *in, int B, int training)
{
	const float *gamma = l->scale ? cm->params + l->w_off : NULL;
	const float *beta = l->center ? cm->params + l->b_off : NULL;
	long N = (long)B * l->in_h * l->in_w;
	int C = l->in_c;

	if (!training) {
		kernel_batchnorm_infer(cl->out, cl->coef, cl->coef + C, in, cm->state + l->s_off,
		                       cm->state + l->s_off + C, gamma, beta, N, C, l->epsilon,
		                       cm->stream);
		return;
	}
	/* The batch's mean and variance also go where the gradients'
	 * all-reduce sums them (model.h). */
	kernel_batchnorm_train(cl->out, cl->mean, cl->invstd,
	                       cm->grads + cm->host->nparams + l->st_off, cl->coef, cl->coef + C,
	                       in, gamma, beta, N, C, l->epsilon, cm->stream);
}

static void layer_forward(struct cuda_model *cm, int i, const float *in, int B, int training)
{
	const struct layer *l = &cm->host->layers[i];
	struct cuda_layer *cl = &cm->layers[i];
	cudaStream_t st = cm->stream;

	switch (l->kind) {
	case LAYER_CONV2D:
		conv_forward_gpu(cm, l, cl, in, B);
		break;
	case LAYER_DENSE:
		dense_forward_gpu(cm, l, cl, in, B);
		break;
	case LAYER_MAXPOOL2:
		kernel_maxpool_forward(cl->out, in, B, l->in_h, l->in_w, l->in_c, st);
		break;
	case LAYER_MAXPOOL:
		kernel_maxpool_geom_forward(cl->out, in, B, &l->pool, st);
		break;
	case LAYER_AVGPOOL:
		kernel_avgpool_forward(cl->out, in, B, &l->pool, st);
		break;
	case LAYER_GLOBAL_AVGPOOL:
		kernel_global_avgpool_forward(cl->out, in, B, l->in_h * l->in_w, l->in_c, st);
		break;
	case LAYER_DROPOUT:
		if (training && l->rate > 0.0f)
			kernel_dropout(cl->out, in, B, (long)l->in_len, l->key, cm->pos, l->rate,
			               dropout_scale(l->rate), st);
		else
			copy(cm, cl->out, in, (size_t)B * l->in_len);
		break;
	case LAYER_ACTIVATION:
		if (cl->pre) /* the loss reads it: cuda_model_logits */
			copy(cm, cl->pre, in, (size_t)B * l->in_len);
		kernel_act_forward(cl->out, in, rows_of(l, B), l->out_c, &l->act, st);
		break;
	case LAYER_BATCHNORM:
		batchnorm_forward_gpu(cm, l, cl, in, B, training);
		break;
	}
}

void cuda_model_forward(struct cuda_model *cm, const float *x, int B, int training)
{
	const float *in = x;

	for (int i = 0; i < cm->host->nlayers; i++) {
		layer_forward(cm, i, in, B, training);
		in = cm->layers[i].out;
	}
}

const float *cuda_model_logits(const struct cuda_model *cm)
{
	const struct model *m = cm->host;
	const struct cuda_layer *cl = &cm->layers[m->nlayers - 1];

	return m->output_logits && cl->pre ? cl->pre : cl->out;
}

const float *cuda_model_outputs(const struct cuda_model *cm)
{
	return cm->layers[cm->host->nlayers - 1].out;
}

void cuda_model_loss(struct cuda_model *cm, const struct loss_spec *spec, const float *y, int B,
                     float scale, int backward)
{
	kernel_loss(backward ? cm->dlogits : NULL, cm->sums, cuda_model_logits(cm),
	            cuda_model_outputs(cm), y, B, spec, scale, cm->stream);
}

/* --- The backward pass --- */

/* Whether layer i, computing its input's gradient, also applies the
 * backward pass of the ReLU that produced that input (model.c's rule). */
static int absorbs_input_relu(const struct model *m, int i)
{
	return i > 0 && m->layers[i - 1].relu && !m->layers[i - 1].pre &&
	       (m->layers[i].kind == LAYER_DENSE || m->layers[i].kind == LAYER_MAXPOOL2);
}

/* The gradient of a conv or dense layer's output, dout, into that of its
 * activation's input, in place; nothing where the loss gave it already
 * (the last layer's logits) or the next layer applied the ReLU. */
static void activation_backward(struct cuda_model *cm, int i, float *dout, int B, int relu_done)
{
	const struct model *m = cm->host;
	const struct layer *l = &m->layers[i];
	const struct cuda_layer *cl = &cm->layers[i];

	if (i == m->nlayers - 1 && m->output_logits)
		return;
	if (l->relu && !relu_done)
		kernel_relu_backward(dout, cl->out, (long)B * (long)l->out_len, cm->stream);
	else if (cl->pre)
		kernel_act_backward(dout, dout, cl->out, cl->pre, rows_of(l, B), l->out_c, &l->act,
		                    cm->stream);
}

static void conv_backward_gpu(struct cuda_model *cm, const struct layer *l,
                              const struct cuda_layer *cl, const float *dout, float *din, int B)
{
	const struct conv_geom *g = &l->conv;
	int K = conv_taps(l), KC = K + g->bias, M = B * g->OH * g->OW, OC = g->OC;

	/* dwb (KC, OC) = cols (KC, M) @ dout (M, OC): the bias's too */
	gemm(cm, 0, 0, KC, OC, M, cl->cols, M, dout, OC, 0.0f, cm->grads + l->w_off, OC);
	if (!din)
		return;
	/* dcols (K, M) = w (K, OC) @ dout^T (OC, M), then back onto the pixels */
	gemm(cm, 0, 1, K, M, OC, cm->params + l->w_off, OC, dout, OC, 0.0f, cl->dcols, M);
	kernel_col2im(din, cl->dcols, B, g, cm->stream);
}

static void dense_backward_gpu(struct cuda_model *cm, const struct layer *l, const float *dout,
                               float *din, const float *in, int B, int absorb)
{
	int IN = l->units_in, OUT = l->out_c;
	long rows = rows_of(l, B);

	/* dw (OUT, IN) = dout^T (OUT, rows) @ in (rows, IN) */
	gemm(cm, 1, 0, OUT, IN, (int)rows, dout, OUT, in, IN, 0.0f, cm->grads + l->w_off, IN);
	if (l->b_len)
		kernel_col_sums(cm->grads + l->b_off, dout, rows, OUT, cm->stream);
	if (!din)
		return;
	/* din (rows, IN) = dout (rows, OUT) @ w (OUT, IN) */
	gemm(cm, 0, 0, (int)rows, IN, OUT, dout, OUT, cm->params + l->w_off, IN, 0.0f, din, IN);
	if (absorb)
		kernel_relu_backward(din, in, rows * IN, cm->stream);
}

/* Layer i's backward pass: its gradients, and din when not NULL. */
static void layer_backward(struct cuda_model *cm, int i, float *din, const float *dout,
                           const float *in, int B)
{
	const struct model *m = cm->host;
	const struct layer *l = &m->layers[i];
	const struct cuda_layer *cl = &cm->layers[i];
	cudaStream_t st = cm->stream;
	int absorb = absorbs_input_relu(m, i), C = l->in_c;

	switch (l->kind) {
	case LAYER_CONV2D:
		conv_backward_gpu(cm, l, cl, dout, din, B);
		break;
	case LAYER_DENSE:
		dense_backward_gpu(cm, l, dout, din, in, B, absorb);
		break;
	case LAYER_MAXPOOL2:
		if (din)
			kernel_maxpool_backward(din, dout, in, cl->out, B, l->in_h, l->in_w, C,
			                        absorb, st);
		break;
	case LAYER_MAXPOOL:
		if (din)
			kernel_maxpool_geom_backward(din, dout, in, cl->out, B, &l->pool, st);
		break;
	case LAYER_AVGPOOL:
		if (din)
			kernel_avgpool_backward(din, dout, B, &l->pool, st);
		break;
	case LAYER_GLOBAL_AVGPOOL:
		if (din)
			kernel_global_avgpool_backward(din, dout, B, l->in_h * l->in_w, C, st);
		break;
	case LAYER_DROPOUT:
		if (din && l->rate > 0.0f)
			kernel_dropout(din, dout, B, (long)l->in_len, l->key, cm->pos, l->rate,
			               dropout_scale(l->rate), st);
		else if (din)
			copy(cm, din, dout, (size_t)B * l->in_len);
		break;
	case LAYER_ACTIVATION:
		if (!din)
			break;
		if (i == m->nlayers - 1 && m->output_logits)
			copy(cm, din, dout, (size_t)B * l->in_len);
		else
			kernel_act_backward(din, dout, cl->out, in, rows_of(l, B), l->out_c,
			                    &l->act, st);
		break;
	case LAYER_BATCHNORM:
		kernel_batchnorm_backward(
		    din, l->scale ? cm->grads + l->w_off : NULL,
		    l->center ? cm->grads + l->b_off : NULL, cl->coef, cl->coef + C,
		    cl->coef + 2 * (size_t)C, dout, in, cl->mean, cl->invstd,
		    l->scale ? cm->params + l->w_off : NULL, (long)B * l->in_h * l->in_w, C, st);
		break;
	}
}

void cuda_model_backward(struct cuda_model *cm, const float *x, int B, cuda_layer_done_fn done,
                         void *ctx)
{
	const struct model *m = cm->host;
	float *dout = cm->dlogits;
	int relu_done = 0; /* dout already has this layer's ReLU applied */
	int lowest = 0;    /* below the lowest layer with parameters, nothing to do */

	while (lowest < m->nlayers - 1 && m->layers[lowest].w_len + m->layers[lowest].b_len == 0)
		lowest++;
	for (int i = m->nlayers - 1; i >= lowest; i--) {
		const struct layer *l = &m->layers[i];
		const float *in = i > 0 ? cm->layers[i - 1].out : x;
		float *din = i > lowest ? (dout == cm->dbuf[0] ? cm->dbuf[1] : cm->dbuf[0]) : NULL;
		if (l->kind == LAYER_CONV2D || l->kind == LAYER_DENSE)
			activation_backward(cm, i, dout, B, relu_done);
		layer_backward(cm, i, din, dout, in, B);
		if (done)
			done(ctx, i);
		relu_done = absorbs_input_relu(m, i);
		dout = din;
	}
}

void cuda_model_update_state(struct cuda_model *cm, int world)
{
	const struct model *m = cm->host;

	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		float keep, take;
		if (l->kind != LAYER_BATCHNORM)
			continue;
		batchnorm_momentum(&keep, &take, l->momentum);
		kernel_batchnorm_moving(cm->state + l->s_off, cm->state + l->s_off + l->in_c,
		                        cm->grads + m->nparams + l->st_off, l->in_c, world, keep,
		                        take, cm->stream);
	}
}
