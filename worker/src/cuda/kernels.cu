/* kernels.cu - the GPU's small kernels (kernels.h): grid-stride loops over
 * the arithmetic of elem.h. */
#include "kernels.h"

#include "cuda_check.h"
#include "elem.h"
#include "loss.h"

#define THREADS 256
/* Enough blocks to fill any GPU; the loops stride over the rest. */
#define MAX_BLOCKS 65535L

static unsigned blocks_for(long n)
{
	long b = (n + THREADS - 1) / THREADS;

	return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

#define GRID_LOOP(i, n)                                                               \
	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);           \
	     i += (long)gridDim.x * blockDim.x)

static __global__ void pixels_k(float *x, const uint8_t *p, long n)
{
	GRID_LOOP(i, n)
	x[i] = elem_pixel(p[i]);
}

void kernel_pixels(float *x, const uint8_t *p, long n, cudaStream_t s)
{
	pixels_k<<<blocks_for(n), THREADS, 0, s>>>(x, p, n);
	KERNEL_CHECK();
}

static __global__ void im2col_k(float *cols, const float *in, long total, long M, int H, int W,
                                int C, int KH, int KW)
{
	GRID_LOOP(i, total)
	cols[i] = elem_im2col(in, i, M, H, W, C, KH, KW);
}

void kernel_im2col(float *cols, const float *in, int B, int H, int W, int C, int KH, int KW,
                   cudaStream_t s)
{
	long M = (long)B * (H - KH + 1) * (W - KW + 1), total = ((long)KH * KW * C + 1) * M;

	im2col_k<<<blocks_for(total), THREADS, 0, s>>>(cols, in, total, M, H, W, C, KH, KW);
	KERNEL_CHECK();
}

static __global__ void col2im_k(float *din, const float *dcols, long total, long M, int H, int W,
                                int C, int KH, int KW)
{
	GRID_LOOP(j, total)
	din[j] = elem_col2im(dcols, j, M, H, W, C, KH, KW);
}

void kernel_col2im(float *din, const float *dcols, int B, int H, int W, int C, int KH, int KW,
                   cudaStream_t s)
{
	long M = (long)B * (H - KH + 1) * (W - KW + 1), total = (long)B * H * W * C;

	col2im_k<<<blocks_for(total), THREADS, 0, s>>>(din, dcols, total, M, H, W, C, KH, KW);
	KERNEL_CHECK();
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

	bias_act_k<<<blocks_for(n), THREADS, 0, s>>>(x, bias, n, cols, relu);
	KERNEL_CHECK();
}

static __global__ void relu_backward_k(float *d, const float *y, long n)
{
	GRID_LOOP(i, n)
	if (!(y[i] > 0.0f))
		d[i] = 0.0f;
}

void kernel_relu_backward(float *d, const float *y, long n, cudaStream_t s)
{
	relu_backward_k<<<blocks_for(n), THREADS, 0, s>>>(d, y, n);
	KERNEL_CHECK();
}

static __global__ void maxpool_k(float *out, const float *in, long n, int H, int W, int C)
{
	GRID_LOOP(o, n)
	out[o] = elem_maxpool(in, o, H, W, C);
}

void kernel_maxpool_forward(float *out, const float *in, int B, int H, int W, int C,
                            cudaStream_t s)
{
	long n = (long)B * (H / 2) * (W / 2) * C;

	maxpool_k<<<blocks_for(n), THREADS, 0, s>>>(out, in, n, H, W, C);
	KERNEL_CHECK();
}

static __global__ void maxpool_backward_k(float *din, const float *dout, const float *in,
                                          const float *out, long n, int H, int W, int C,
                                          int mask)
{
	GRID_LOOP(j, n)
	din[j] = elem_maxpool_backward(dout, in, out, j, H, W, C, mask);
}

void kernel_maxpool_backward(float *din, const float *dout, const float *in, const float *out,
                             int B, int H, int W, int C, int mask_by_input, cudaStream_t s)
{
	long n = (long)B * H * W * C;

	maxpool_backward_k<<<blocks_for(n), THREADS, 0, s>>>(din, dout, in, out, n, H, W, C,
	                                                     mask_by_input);
	KERNEL_CHECK();
}

/* One block: each thread takes examples tid, tid + THREADS, ..., then the
 * block adds the threads' sums in a fixed tree. */
static __global__ void xent_k(float *dlogits, double *sums, const float *logits,
                              const float *labels, int B, int K, float scale)
{
	__shared__ double loss[THREADS], correct[THREADS];
	double l = 0.0, c = 0.0;

	for (int i = threadIdx.x; i < B; i += THREADS) {
		double li;
		int ci;
		loss_xent_example(dlogits ? dlogits + (long)i * K : NULL, logits + (long)i * K,
		                  (int)labels[i], K, scale, &li, &ci);
		l += li;
		c += ci;
	}
	loss[threadIdx.x] = l;
	correct[threadIdx.x] = c;
	__syncthreads();
	for (int half = THREADS / 2; half > 0; half /= 2) {
		if ((int)threadIdx.x < half) {
			loss[threadIdx.x] += loss[threadIdx.x + half];
			correct[threadIdx.x] += correct[threadIdx.x + half];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		sums[0] = loss[0];
		sums[1] = correct[0];
		sums[2] = (double)B;
	}
}

void kernel_xent(float *dlogits, double *sums, const float *logits, const float *labels, int B,
                 int K, float scale, cudaStream_t s)
{
	xent_k<<<1, THREADS, 0, s>>>(dlogits, sums, logits, labels, B, K, scale);
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
                              const float *alpha, float c1, float c2, float eps, float lr,
                              float wd)
{
	float a = *alpha;

	GRID_LOOP(i, n)
	{
		if (wd != 0.0f)
			elem_weight_decay(&w[i], lr, wd);
		elem_adam(&w[i], &m[i], &v[i], g[i], a, c1, c2, eps);
	}
}

void kernel_adam(float *w, float *m, float *v, const float *g, long n, const float *alpha,
                 float c1, float c2, float eps, float lr, float wd, cudaStream_t s)
{
	adam_k<<<blocks_for(n), THREADS, 0, s>>>(w, m, v, g, n, alpha, c1, c2, eps, lr, wd);
	KERNEL_CHECK();
}

static __global__ void adagrad_k(float *w, float *acc, const float *g, long n, float lr,
                                 float eps, float wd)
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
