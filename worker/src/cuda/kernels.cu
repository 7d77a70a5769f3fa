/* kernels.cu - the GPU's small kernels (kernels.h): grid-stride loops over
 * the arithmetic of elem.h. */
#include "kernels.h"

#include "cuda_check.h"
#include "elem.h"
#include "loss.h"
#include "metrics.h"

#define THREADS 256
/* Enough blocks to fill any GPU; the loops stride over the rest. */
#define MAX_BLOCKS 65535L

static unsigned blocks_for(long n)
{
	long b = (n + THREADS - 1) / THREADS;

	return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

#define GRID_LOOP(i, n)                                                                            \
	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                        \
	     i += (long)gridDim.x * blockDim.x)

/* A launch of kernel k over n outputs, checked. */
#define LAUNCH(k, n, s, ...)                                                                       \
	do {                                                                                       \
		long n_ = (n);                                                                     \
		if (n_ > 0) {                                                                      \
			k<<<blocks_for(n_), THREADS, 0, (s)>>>(__VA_ARGS__);                       \
			KERNEL_CHECK();                                                            \
		}                                                                                  \
	} while (0)

/* --- Input --- */

static __global__ void pixels_k(float *x, const uint8_t *p, long n, float scale)
{
	GRID_LOOP(i, n)
	x[i] = elem_pixel(p[i], scale);
}

void kernel_pixels(float *x, const uint8_t *p, long n, float scale, cudaStream_t s)
{
	LAUNCH(pixels_k, n, s, x, p, n, scale);
}

/* --- Convolution and dense layers --- */

static __global__ void im2col_k(float *cols, const float *in, long total, long M,
                                struct conv_geom g)
{
	GRID_LOOP(i, total)
	cols[i] = elem_im2col(in, i, M, &g);
}

void kernel_im2col(float *cols, const float *in, int B, const struct conv_geom *g, cudaStream_t s)
{
	long M = (long)B * g->OH * g->OW, total = ((long)g->KH * g->KW * g->C + g->bias) * M;

	LAUNCH(im2col_k, total, s, cols, in, total, M, *g);
}

static __global__ void col2im_k(float *din, const float *dcols, long total, long M,
                                struct conv_geom g)
{
	GRID_LOOP(j, total)
	din[j] = elem_col2im(dcols, j, M, &g);
}

void kernel_col2im(float *din, const float *dcols, int B, const struct conv_geom *g, cudaStream_t s)
{
	long M = (long)B * g->OH * g->OW, total = (long)B * g->H * g->W * g->C;

	LAUNCH(col2im_k, total, s, din, dcols, total, M, *g);
}

static __global__ void bias_act_k(float *x, const float *bias, long n, int cols, int relu)
{
	GRID_LOOP(i, n)
	{
		float v = x[i];
		if (bias)
			v += bias[i % cols];
		x[i] = relu && !(v > 0.0f) ? 0.0f : v;
	}
}

void kernel_bias_act(float *x, const float *bias, long rows, int cols, int relu, cudaStream_t s)
{
	long n = rows * cols;

	LAUNCH(bias_act_k, n, s, x, bias, n, cols, relu);
}

static __global__ void relu_backward_k(float *d, const float *y, long n)
{
	GRID_LOOP(i, n)
	if (!(y[i] > 0.0f))
		d[i] = 0.0f;
}

void kernel_relu_backward(float *d, const float *y, long n, cudaStream_t s)
{
	LAUNCH(relu_backward_k, n, s, d, y, n);
}

static __global__ void col_sums_k(float *out, const float *x, long rows, int cols)
{
	GRID_LOOP(j, cols)
	out[j] = elem_col_sum(x, (int)j, rows, cols);
}

void kernel_col_sums(float *out, const float *x, long rows, int cols, cudaStream_t s)
{
	LAUNCH(col_sums_k, cols, s, out, x, rows, cols);
}

/* --- Activations --- */

static __global__ void act_forward_k(float *y, const float *x, long n, struct keras_act a)
{
	GRID_LOOP(i, n)
	y[i] = elem_act(x[i], &a);
}

static __global__ void softmax_k(float *y, const float *x, long rows, long cols)
{
	GRID_LOOP(r, rows)
	elem_softmax_row(y + r * cols, x + r * cols, cols);
}

void kernel_act_forward(float *y, const float *x, long rows, long cols, const struct keras_act *a,
                        cudaStream_t s)
{
	if (a->kind == KERAS_ACT_SOFTMAX)
		LAUNCH(softmax_k, cols > 0 ? rows : 0, s, y, x, rows, cols);
	else
		LAUNCH(act_forward_k, rows * cols, s, y, x, rows * cols, *a);
}

static __global__ void act_backward_k(float *dx, const float *dy, const float *y, const float *x,
                                      long n, struct keras_act a)
{
	GRID_LOOP(i, n)
	dx[i] = elem_act_backward(dy[i], y ? y[i] : 0.0f, x ? x[i] : 0.0f, &a);
}

static __global__ void softmax_backward_k(float *dx, const float *dy, const float *y, long rows,
                                          long cols)
{
	GRID_LOOP(r, rows)
	elem_softmax_backward_row(dx + r * cols, dy + r * cols, y + r * cols, cols);
}

void kernel_act_backward(float *dx, const float *dy, const float *y, const float *x, long rows,
                         long cols, const struct keras_act *a, cudaStream_t s)
{
	if (a->kind == KERAS_ACT_SOFTMAX)
		LAUNCH(softmax_backward_k, cols > 0 ? rows : 0, s, dx, dy, y, rows, cols);
	else
		LAUNCH(act_backward_k, rows * cols, s, dx, dy, y, x, rows * cols, *a);
}

/* --- Pooling --- */

static __global__ void maxpool_k(float *out, const float *in, long n, int H, int W, int C)
{
	GRID_LOOP(o, n)
	out[o] = elem_maxpool(in, o, H, W, C);
}

void kernel_maxpool_forward(float *out, const float *in, int B, int H, int W, int C, cudaStream_t s)
{
	long n = (long)B * (H / 2) * (W / 2) * C;

	LAUNCH(maxpool_k, n, s, out, in, n, H, W, C);
}

static __global__ void maxpool_backward_k(float *din, const float *dout, const float *in,
                                          const float *out, long n, int H, int W, int C, int mask)
{
	GRID_LOOP(j, n)
	din[j] = elem_maxpool_backward(dout, in, out, j, H, W, C, mask);
}

void kernel_maxpool_backward(float *din, const float *dout, const float *in, const float *out,
                             int B, int H, int W, int C, int mask_by_input, cudaStream_t s)
{
	long n = (long)B * H * W * C;

	LAUNCH(maxpool_backward_k, n, s, din, dout, in, out, n, H, W, C, mask_by_input);
}

static __global__ void maxpool_geom_k(float *out, const float *in, long n, struct pool_geom g)
{
	GRID_LOOP(o, n)
	out[o] = elem_maxpool_geom(in, o, &g);
}

void kernel_maxpool_geom_forward(float *out, const float *in, int B, const struct pool_geom *g,
                                 cudaStream_t s)
{
	long n = (long)B * g->OH * g->OW * g->C;

	LAUNCH(maxpool_geom_k, n, s, out, in, n, *g);
}

static __global__ void maxpool_geom_backward_k(float *din, const float *dout, const float *in,
                                               const float *out, long n, struct pool_geom g)
{
	GRID_LOOP(j, n)
	din[j] = elem_maxpool_geom_backward(dout, in, out, j, &g);
}

void kernel_maxpool_geom_backward(float *din, const float *dout, const float *in, const float *out,
                                  int B, const struct pool_geom *g, cudaStream_t s)
{
	long n = (long)B * g->H * g->W * g->C;

	LAUNCH(maxpool_geom_backward_k, n, s, din, dout, in, out, n, *g);
}

static __global__ void avgpool_k(float *out, const float *in, long n, struct pool_geom g)
{
	GRID_LOOP(o, n)
	out[o] = elem_avgpool(in, o, &g);
}

void kernel_avgpool_forward(float *out, const float *in, int B, const struct pool_geom *g,
                            cudaStream_t s)
{
	long n = (long)B * g->OH * g->OW * g->C;

	LAUNCH(avgpool_k, n, s, out, in, n, *g);
}

static __global__ void avgpool_backward_k(float *din, const float *dout, long n, struct pool_geom g)
{
	GRID_LOOP(j, n)
	din[j] = elem_avgpool_backward(dout, j, &g);
}

void kernel_avgpool_backward(float *din, const float *dout, int B, const struct pool_geom *g,
                             cudaStream_t s)
{
	long n = (long)B * g->H * g->W * g->C;

	LAUNCH(avgpool_backward_k, n, s, din, dout, n, *g);
}

static __global__ void global_avgpool_k(float *out, const float *in, long n, int HW, int C)
{
	GRID_LOOP(o, n)
	out[o] = elem_global_avgpool(in, o, HW, C);
}

void kernel_global_avgpool_forward(float *out, const float *in, int B, int HW, int C,
                                   cudaStream_t s)
{
	long n = (long)B * C;

	LAUNCH(global_avgpool_k, n, s, out, in, n, HW, C);
}

static __global__ void global_avgpool_backward_k(float *din, const float *dout, long n, int HW,
                                                 int C)
{
	GRID_LOOP(j, n)
	din[j] = elem_global_avgpool_backward(dout, j, HW, C);
}

void kernel_global_avgpool_backward(float *din, const float *dout, int B, int HW, int C,
                                    cudaStream_t s)
{
	long n = (long)B * HW * C;

	LAUNCH(global_avgpool_backward_k, n, s, din, dout, n, HW, C);
}

/* --- Dropout --- */

static __global__ void dropout_k(float *out, const float *in, long n, long len, uint64_t key,
                                 const uint64_t *pos0, float rate, float scale)
{
	uint64_t p = *pos0;

	GRID_LOOP(i, n)
	out[i] = elem_dropout(in, i, len, key, p, rate, scale);
}

void kernel_dropout(float *out, const float *in, int B, long len, uint64_t key,
                    const uint64_t *pos0, float rate, float scale, cudaStream_t s)
{
	long n = (long)B * len;

	LAUNCH(dropout_k, n, s, out, in, n, len, key, pos0, rate, scale);
}

/* --- Batch normalisation: a channel per thread, then an element per
 * thread --- */

static __global__ void bn_train_channel_k(float *mean, float *invstd, float *stats, float *s,
                                          float *t, const float *x, const float *gamma,
                                          const float *beta, long N, int C, float eps)
{
	GRID_LOOP(c, C)
	{
		elem_batchnorm_train_channel(mean, stats + C, invstd, s, t, x, gamma, beta, N, C,
		                             (int)c, eps);
		stats[c] = mean[c];
	}
}

static __global__ void bn_apply_k(float *y, const float *x, long n, int C, const float *s,
                                  const float *t)
{
	GRID_LOOP(i, n)
	y[i] = elem_batchnorm(x, i, C, s, t);
}

void kernel_batchnorm_train(float *y, float *mean, float *invstd, float *stats, float *s_,
                            float *t_, const float *x, const float *gamma, const float *beta,
                            long N, int C, float eps, cudaStream_t s)
{
	LAUNCH(bn_train_channel_k, C, s, mean, invstd, stats, s_, t_, x, gamma, beta, N, C, eps);
	LAUNCH(bn_apply_k, N * C, s, y, x, N * C, C, s_, t_);
}

static __global__ void bn_infer_channel_k(float *s, float *t, const float *mm, const float *mv,
                                          const float *gamma, const float *beta, int C, float eps)
{
	GRID_LOOP(c, C)
	elem_batchnorm_infer_channel(s, t, mm, mv, gamma, beta, (int)c, eps);
}

void kernel_batchnorm_infer(float *y, float *s_, float *t_, const float *x,
                            const float *moving_mean, const float *moving_var, const float *gamma,
                            const float *beta, long N, int C, float eps, cudaStream_t s)
{
	LAUNCH(bn_infer_channel_k, C, s, s_, t_, moving_mean, moving_var, gamma, beta, C, eps);
	LAUNCH(bn_apply_k, N * C, s, y, x, N * C, C, s_, t_);
}

static __global__ void bn_grad_channel_k(float *dgamma, float *dbeta, float *a, float *b, float *k,
                                         const float *dy, const float *x, const float *mean,
                                         const float *invstd, const float *gamma, long N, int C)
{
	GRID_LOOP(c, C)
	elem_batchnorm_grad_channel(dgamma, dbeta, a, b, k, dy, x, mean, invstd, gamma, N, C,
	                            (int)c);
}

static __global__ void bn_backward_k(float *dx, const float *dy, const float *x, long n, int C,
                                     const float *mean, const float *a, const float *b,
                                     const float *k)
{
	GRID_LOOP(i, n)
	dx[i] = elem_batchnorm_backward(dy, x, i, C, mean, a, b, k);
}

void kernel_batchnorm_backward(float *dx, float *dgamma, float *dbeta, float *a, float *b, float *k,
                               const float *dy, const float *x, const float *mean,
                               const float *invstd, const float *gamma, long N, int C,
                               cudaStream_t s)
{
	LAUNCH(bn_grad_channel_k, C, s, dgamma, dbeta, a, b, k, dy, x, mean, invstd, gamma, N, C);
	if (dx)
		LAUNCH(bn_backward_k, N * C, s, dx, dy, x, N * C, C, mean, a, b, k);
}

static __global__ void bn_moving_k(float *mm, float *mv, const float *stats, int C, int world,
                                   float keep, float take)
{
	GRID_LOOP(c, C)
	elem_batchnorm_moving(mm, mv, stats, C, (int)c, world, keep, take);
}

void kernel_batchnorm_moving(float *moving_mean, float *moving_var, const float *stats, int C,
                             int world, float keep, float take, cudaStream_t s)
{
	LAUNCH(bn_moving_k, C, s, moving_mean, moving_var, stats, C, world, keep, take);
}

/* --- The loss --- */

/* One block: each thread takes examples tid, tid + THREADS, ..., then the
 * block adds the threads' sums in a fixed tree. */
static __global__ void loss_k(float *dz, double *sums, const float *z, const float *p,
                              const float *y, int B, struct loss_spec spec, float scale)
{
	enum { WORDS = 1 + LOSS_MAX_METRICS };
	__shared__ double part[WORDS][THREADS];
	double mine[WORDS] = {0};

	elem_loss_rows(dz, mine, z, p, y, (int)threadIdx.x, THREADS, B, &spec, scale);
	for (int w = 0; w < WORDS; w++)
		part[w][threadIdx.x] = mine[w];
	__syncthreads();
	for (int half = THREADS / 2; half > 0; half /= 2) {
		if ((int)threadIdx.x < half)
			for (int w = 0; w < WORDS; w++)
				part[w][threadIdx.x] += part[w][threadIdx.x + half];
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		sums[0] = part[0][0];
		sums[1] = (double)B;
		for (int m = 0; m < METRICS_MAX; m++)
			sums[2 + m] = m < spec.nmetrics ? part[1 + m][0] : 0.0;
	}
}

void kernel_loss(float *dz, double *sums, const float *z, const float *p, const float *y, int B,
                 const struct loss_spec *spec, float scale, cudaStream_t s)
{
	loss_k<<<1, THREADS, 0, s>>>(dz, sums, z, p, y, B, *spec, scale);
	KERNEL_CHECK();
}

/* The optimizers: wd is the same for every thread, so the branch costs
 * nothing, and a kernel with the decay does in one pass what optimizer.c
 * does in two, the same arithmetic per element. */
static __global__ void sgd_k(float *w, const float *g, long n, float lr, float wd)
{
	GRID_LOOP(i, n)
	{
		if (wd != 0.0f)
			elem_weight_decay(&w[i], lr, wd);
		elem_sgd(&w[i], g[i], lr);
	}
}

void kernel_sgd(float *w, const float *g, long n, float lr, float wd, cudaStream_t s)
{
	sgd_k<<<blocks_for(n), THREADS, 0, s>>>(w, g, n, lr, wd);
	KERNEL_CHECK();
}

static __global__ void sgd_momentum_k(float *w, float *v, const float *g, long n, float lr,
                                      float momentum, int nesterov, float wd)
{
	GRID_LOOP(i, n)
	{
		if (wd != 0.0f)
			elem_weight_decay(&w[i], lr, wd);
		elem_sgd_momentum(&w[i], &v[i], g[i], lr, momentum, nesterov);
	}
}

void kernel_sgd_momentum(float *w, float *v, const float *g, long n, float lr, float momentum,
                         int nesterov, float wd, cudaStream_t s)
{
	sgd_momentum_k<<<blocks_for(n), THREADS, 0, s>>>(w, v, g, n, lr, momentum, nesterov, wd);
	KERNEL_CHECK();
}

static __global__ void adam_k(float *w, float *m, float *v, const float *g, long n,
                              const float *alpha, float c1, float c2, float eps, float lr, float wd)
{
	float a = *alpha;

	GRID_LOOP(i, n)
	{
		if (wd != 0.0f)
			elem_weight_decay(&w[i], lr, wd);
		elem_adam(&w[i], &m[i], &v[i], g[i], a, c1, c2, eps);
	}
}

void kernel_adam(float *w, float *m, float *v, const float *g, long n, const float *alpha, float c1,
                 float c2, float eps, float lr, float wd, cudaStream_t s)
{
	adam_k<<<blocks_for(n), THREADS, 0, s>>>(w, m, v, g, n, alpha, c1, c2, eps, lr, wd);
	KERNEL_CHECK();
}

static __global__ void adagrad_k(float *w, float *acc, const float *g, long n, float lr, float eps,
                                 float wd)
{
	GRID_LOOP(i, n)
	{
		if (wd != 0.0f)
			elem_weight_decay(&w[i], lr, wd);
		elem_adagrad(&w[i], &acc[i], g[i], lr, eps);
	}
}

void kernel_adagrad(float *w, float *acc, const float *g, long n, float lr, float eps, float wd,
                    cudaStream_t s)
{
	adagrad_k<<<blocks_for(n), THREADS, 0, s>>>(w, acc, g, n, lr, eps, wd);
	KERNEL_CHECK();
}

static __global__ void rmsprop_k(float *w, float *v, float *mom, float *a, const float *g, long n,
                                 float lr, float rho, float c_rho, float momentum, float eps,
                                 float wd)
{
	GRID_LOOP(i, n)
	{
		if (wd != 0.0f)
			elem_weight_decay(&w[i], lr, wd);
		elem_rmsprop(&w[i], &v[i], mom ? &mom[i] : NULL, a ? &a[i] : NULL, g[i], lr, rho,
		             c_rho, momentum, eps);
	}
}

void kernel_rmsprop(float *w, float *v, float *mom, float *a, const float *g, long n, float lr,
                    float rho, float c_rho, float momentum, float eps, float wd, cudaStream_t s)
{
	rmsprop_k<<<blocks_for(n), THREADS, 0, s>>>(w, v, mom, a, g, n, lr, rho, c_rho, momentum,
	                                            eps, wd);
	KERNEL_CHECK();
}

static __global__ void fill_k(float *p, float v, long n)
{
	GRID_LOOP(i, n)
	p[i] = v;
}

void kernel_fill(float *p, float v, long n, cudaStream_t s)
{
	fill_k<<<blocks_for(n), THREADS, 0, s>>>(p, v, n);
	KERNEL_CHECK();
}
