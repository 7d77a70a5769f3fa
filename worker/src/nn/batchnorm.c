/* batchnorm.c - batch normalisation over the last axis (batchnorm.h).
 *
 * Every pass works on chunks of up to CHUNK channels, whose sums or
 * coefficients fit on the stack, so nothing is allocated. The passes that
 * sum over rows share channels among the threads, each channel summed in
 * row order by one thread; the element-wise passes share rows. Either way
 * each value is computed the same way whatever the split. */
#include "batchnorm.h"

#include "parallel.h"
#include "simd.h"

#define CHUNK 64

/* s1, s2 (w) = sum x, sum x^2 over N rows of x, which points at the
 * chunk's first channel in row 0. */
SIMD_CLONES
static void stat_chunk(double *restrict s1, double *restrict s2, const float *restrict x, size_t N,
                       int C, int w)
{
	for (int j = 0; j < w; j++)
		s1[j] = s2[j] = 0.0;
	for (size_t r = 0; r < N; r++) {
		const float *xr = x + r * C;
		for (int j = 0; j < w; j++) {
			double v = xr[j];
			s1[j] += v;
			s2[j] += v * v;
		}
	}
}

/* s1, s2 (w) = sum dy, sum dy xhat; mean and invstd point at the chunk's
 * first channel. */
SIMD_CLONES
static void grad_chunk_sums(double *restrict s1, double *restrict s2, const float *restrict dy,
                            const float *restrict x, const float *restrict mean,
                            const float *restrict invstd, size_t N, int C, int w)
{
	for (int j = 0; j < w; j++)
		s1[j] = s2[j] = 0.0;
	for (size_t r = 0; r < N; r++) {
		const float *dyr = dy + r * C, *xr = x + r * C;
		for (int j = 0; j < w; j++) {
			double d = dyr[j];
			s1[j] += d;
			s2[j] += d * (((double)xr[j] - mean[j]) * invstd[j]);
		}
	}
}

/* y = x s + t over rows rows of the chunk; y may be x. */
SIMD_CLONES
static void apply_chunk(float *y, const float *x, const float *s, const float *t, size_t rows,
                        int C, int w)
{
	for (size_t r = 0; r < rows; r++)
		for (int j = 0; j < w; j++)
			y[r * C + j] = batchnorm_apply(x[r * C + j], s[j], t[j]);
}

/* dx from the chunk's coefficients; dx may be dy. */
SIMD_CLONES
static void grad_chunk(float *dx, const float *dy, const float *x, const float *mean,
                       const float *a, const float *b, const float *k, size_t rows, int C, int w)
{
	for (size_t r = 0; r < rows; r++)
		for (int j = 0; j < w; j++)
			dx[r * C + j] =
			    batchnorm_grad(dy[r * C + j], x[r * C + j], mean[j], a[j], b[j], k[j]);
}

/* What a pass reads and writes; each pass uses some of the fields. */
struct bn_job {
	float *out;                   /* y or dx (N, C) */
	float *mean, *var, *invstd;   /* statistics written */
	float *dgamma, *dbeta;        /* parameter gradients written */
	double *sums;                 /* (2, C) written */
	const float *x, *dy;          /* (N, C) */
	const float *gamma, *beta;    /* NULL: 1, 0 */
	const float *cmean, *cinvstd; /* statistics read (training) */
	const float *mmean, *mvar;    /* moving statistics (inference) */
	const double *csums;          /* (2, C) read */
	size_t N;
	int C;
	float eps;
	double count;
};

static int chunk_width(int c0, int hi)
{
	return hi - c0 < CHUNK ? hi - c0 : CHUNK;
}

/* The parts of a channel split: [*lo, *hi). */
static void channel_range(const struct bn_job *j, int part, int parts, size_t align, int *lo,
                          int *hi)
{
	size_t a, b;

	parallel_range((size_t)j->C, part, parts, align, &a, &b);
	*lo = (int)a, *hi = (int)b;
}

static void stats_part(void *ctx, int part, int parts)
{
	const struct bn_job *j = ctx;
	double s1[CHUNK], s2[CHUNK];
	int lo, hi;

	channel_range(j, part, parts, 1, &lo, &hi);
	for (int c0 = lo; c0 < hi; c0 += CHUNK) {
		int w = chunk_width(c0, hi);
		stat_chunk(s1, s2, j->x + c0, j->N, j->C, w);
		for (int i = 0; i < w; i++) {
			if (j->sums) {
				j->sums[c0 + i] = s1[i];
				j->sums[j->C + c0 + i] = s2[i];
			}
			if (!j->mean)
				continue;
			double m, v;
			batchnorm_moments(&m, &v, s1[i], s2[i], j->count);
			j->mean[c0 + i] = (float)m;
			if (j->var)
				j->var[c0 + i] = (float)v;
			j->invstd[c0 + i] = batchnorm_invstd(v, j->eps);
		}
	}
}

/* Rows shared; per chunk, s and t from the training statistics (cmean,
 * cinvstd) or from the moving ones. */
static void normalize_part(void *ctx, int part, int parts)
{
	const struct bn_job *j = ctx;
	float s[CHUNK], t[CHUNK];
	size_t lo, hi;

	parallel_range(j->N, part, parts, 1, &lo, &hi);
	for (int c0 = 0; c0 < j->C && lo < hi; c0 += CHUNK) {
		int w = chunk_width(c0, j->C);
		for (int i = 0; i < w; i++) {
			int c = c0 + i;
			float g = j->gamma ? j->gamma[c] : 1.0f, b = j->beta ? j->beta[c] : 0.0f;
			if (j->cmean)
				batchnorm_coeffs(&s[i], &t[i], j->cmean[c], j->cinvstd[c], g, b);
			else
				batchnorm_coeffs(&s[i], &t[i], j->mmean[c],
				                 batchnorm_invstd(j->mvar[c], j->eps), g, b);
		}
		apply_chunk(j->out + lo * j->C + c0, j->x + lo * j->C + c0, s, t, hi - lo, j->C, w);
	}
}

/* a, b, k (w) of a chunk from its sums. */
static void grad_coeffs(float *a, float *b, float *k, const struct bn_job *j, int c0, int w,
                        const double *s1, const double *s2)
{
	for (int i = 0; i < w; i++) {
		int c = c0 + i;
		batchnorm_grad_coeffs(&a[i], &b[i], &k[i], j->cinvstd[c],
		                      j->gamma ? j->gamma[c] : 1.0f, s1[i], s2[i], j->count);
	}
}

/* Channels shared: the sums (into sums, or into dgamma and dbeta and on
 * to dx when out is set), each channel's over all rows. */
static void grad_sums_part(void *ctx, int part, int parts)
{
	const struct bn_job *j = ctx;
	double s1[CHUNK], s2[CHUNK];
	float a[CHUNK], b[CHUNK], k[CHUNK];
	int lo, hi;

	/* dx is written by channel: whole cache lines per thread */
	channel_range(j, part, parts, j->out ? 16 : 1, &lo, &hi);
	for (int c0 = lo; c0 < hi; c0 += CHUNK) {
		int w = chunk_width(c0, hi);
		grad_chunk_sums(s1, s2, j->dy + c0, j->x + c0, j->cmean + c0, j->cinvstd + c0, j->N,
		                j->C, w);
		for (int i = 0; i < w; i++) {
			if (j->sums) {
				j->sums[c0 + i] = s1[i];
				j->sums[j->C + c0 + i] = s2[i];
			}
			if (j->dbeta)
				j->dbeta[c0 + i] = (float)s1[i];
			if (j->dgamma)
				j->dgamma[c0 + i] = (float)s2[i];
		}
		if (!j->out)
			continue;
		grad_coeffs(a, b, k, j, c0, w, s1, s2);
		grad_chunk(j->out + c0, j->dy + c0, j->x + c0, j->cmean + c0, a, b, k, j->N, j->C,
		           w);
	}
}

/* Rows shared: dx from the given sums. */
static void input_grad_part(void *ctx, int part, int parts)
{
	const struct bn_job *j = ctx;
	float a[CHUNK], b[CHUNK], k[CHUNK];
	size_t lo, hi;

	parallel_range(j->N, part, parts, 1, &lo, &hi);
	for (int c0 = 0; c0 < j->C && lo < hi; c0 += CHUNK) {
		int w = chunk_width(c0, j->C);
		size_t at = lo * j->C + c0;
		grad_coeffs(a, b, k, j, c0, w, j->csums + c0, j->csums + j->C + c0);
		grad_chunk(j->out + at, j->dy + at, j->x + at, j->cmean + c0, a, b, k, hi - lo,
		           j->C, w);
	}
}

static void run(parallel_fn fn, struct bn_job *j)
{
	if (j->N == 0 || j->C <= 0)
		return;
	if (j->N * (size_t)j->C < PARALLEL_MIN_ELEMS)
		fn(j, 0, 1);
	else
		parallel_run(fn, j);
}

void batchnorm_stat_sums(double *sums, const float *x, size_t N, int C)
{
	struct bn_job j = {.sums = sums, .x = x, .N = N, .C = C};

	run(stats_part, &j);
}

void batchnorm_stats(float *mean, float *var, float *invstd, const double *sums, double count,
                     int C, float eps)
{
	for (int c = 0; c < C; c++) {
		double m, v;
		batchnorm_moments(&m, &v, sums[c], sums[C + c], count);
		mean[c] = (float)m;
		if (var)
			var[c] = (float)v;
		invstd[c] = batchnorm_invstd(v, eps);
	}
}

void batchnorm_normalize(float *y, const float *x, const float *mean, const float *invstd,
                         const float *gamma, const float *beta, size_t N, int C)
{
	struct bn_job j = {.out = y,
	                   .x = x,
	                   .gamma = gamma,
	                   .beta = beta,
	                   .cmean = mean,
	                   .cinvstd = invstd,
	                   .N = N,
	                   .C = C};

	run(normalize_part, &j);
}

void batchnorm_forward_train(float *y, float *mean, float *var, float *invstd, const float *x,
                             const float *gamma, const float *beta, size_t N, int C, float eps)
{
	struct bn_job j = {.mean = mean,
	                   .var = var,
	                   .invstd = invstd,
	                   .x = x,
	                   .N = N,
	                   .C = C,
	                   .eps = eps,
	                   .count = (double)N};

	run(stats_part, &j);
	batchnorm_normalize(y, x, mean, invstd, gamma, beta, N, C);
}

void batchnorm_forward_infer(float *y, const float *x, const float *gamma, const float *beta,
                             const float *moving_mean, const float *moving_var, size_t N, int C,
                             float eps)
{
	struct bn_job j = {.out = y,
	                   .x = x,
	                   .gamma = gamma,
	                   .beta = beta,
	                   .mmean = moving_mean,
	                   .mvar = moving_var,
	                   .N = N,
	                   .C = C,
	                   .eps = eps};

	run(normalize_part, &j);
}

void batchnorm_grad_sums(double *sums, const float *dy, const float *x, const float *mean,
                         const float *invstd, size_t N, int C)
{
	struct bn_job j = {
	    .sums = sums, .x = x, .dy = dy, .cmean = mean, .cinvstd = invstd, .N = N, .C = C};

	run(grad_sums_part, &j);
}

void batchnorm_param_grads(float *dgamma, float *dbeta, const double *sums, int C)
{
	for (int c = 0; c < C; c++) {
		if (dbeta)
			dbeta[c] = (float)sums[c];
		if (dgamma)
			dgamma[c] = (float)sums[C + c];
	}
}

void batchnorm_input_grad(float *dx, const float *dy, const float *x, const float *mean,
                          const float *invstd, const float *gamma, const double *sums, double count,
                          size_t N, int C)
{
	struct bn_job j = {.out = dx,
	                   .x = x,
	                   .dy = dy,
	                   .gamma = gamma,
	                   .cmean = mean,
	                   .cinvstd = invstd,
	                   .csums = sums,
	                   .N = N,
	                   .C = C,
	                   .count = count};

	run(input_grad_part, &j);
}

void batchnorm_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x,
                        const float *mean, const float *invstd, const float *gamma, size_t N, int C)
{
	struct bn_job j = {.out = dx,
	                   .dgamma = dgamma,
	                   .dbeta = dbeta,
	                   .x = x,
	                   .dy = dy,
	                   .gamma = gamma,
	                   .cmean = mean,
	                   .cinvstd = invstd,
	                   .N = N,
	                   .C = C,
	                   .count = (double)N};

	run(grad_sums_part, &j);
}

void batchnorm_update_moving(float *moving_mean, float *moving_var, const float *mean,
                             const float *var, int C, double momentum)
{
	float keep, take;

	batchnorm_momentum(&keep, &take, momentum);
	for (int c = 0; c < C; c++) {
		moving_mean[c] = batchnorm_moving(moving_mean[c], mean[c], keep, take);
		moving_var[c] = batchnorm_moving(moving_var[c], var[c], keep, take);
	}
}
