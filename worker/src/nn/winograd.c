/* winograd.c - 3x3, stride-1 convolution by F(2x2, 3x3) (winograd.h).
 *
 * Work goes a block of tiles at a time: the block's transformed inputs V
 * (16, tiles, C) and products M (16, tiles, OC) stay in the thread's share
 * of cache, and the transforms read and write the tensors once each. The
 * 16 products of a block are small (tiles x C times C x OC), too small for
 * OpenBLAS, which would pack more than it multiplies; block_gemm below
 * keeps a 6 x 16 block of results in vector registers instead, and sums in
 * channel order like any loop here. */
#include "winograd.h"

#include <stdint.h>
#include <string.h>

#include "dense.h"
#include "parallel.h"
#include "simd.h"

enum {
	WINO_X = 16,        /* positions of a 4x4 tile */
	WINO_ROWS = 6,      /* rows of block_gemm's register block */
	WINO_MIN_TILES = 6, /* the fewest tiles a block may hold */
};

/* Floats of cache each compute thread works in: zeros, a sink for the
 * outputs past the image's edge, and a block's V and M. 256 KiB, half of
 * the smallest L2 among the CPUs we run on. In BSS, so that only the
 * threads that run touch theirs. */
#define WINO_PART_FLOATS ((size_t)1 << 16)
static float part_scratch[PARALLEL_MAX_THREADS][WINO_PART_FLOATS] __attribute__((aligned(64)));

/* B^T = (1 0 -1 0, 0 1 1 0, 0 -1 1 0, 0 1 0 -1) and A^T = (1 1 1 0,
 * 0 1 -1 -1) are written out in input_tile, output_tile and grad_tile. */

/* G (4x3), which spreads a 3x3 kernel over the 4x4 tile. */
static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

static size_t max_channels(const struct conv_geom *g)
{
	return (size_t)(g->C > g->OC ? g->C : g->OC);
}

/* Tiles a block holds when a thread computes nx of the 16 positions. */
static size_t block_tiles(const struct conv_geom *g, size_t nx)
{
	return (WINO_PART_FLOATS - 2 * max_channels(g)) / (nx * (size_t)(g->C + g->OC));
}

int winograd_fits(const struct conv_geom *g)
{
	return g->KH == 3 && g->KW == 3 && g->SH == 1 && g->SW == 1 && g->C % 8 == 0 &&
	       g->OC % 8 == 0 && g->PT <= 2 && g->PL <= 2 && g->OH > 0 && g->OW > 0 &&
	       block_tiles(g, WINO_X) >= WINO_MIN_TILES;
}

size_t winograd_cols_len(const struct conv_geom *g)
{
	return (size_t)WINO_X * (size_t)g->C * (size_t)g->OC;
}

/* --- The product: out (rows, K) [+]= a (rows, n) @ b (n, K) --- */

typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
/* The same, at any float's alignment and aliasing floats: what loads and
 * stores go through. */
typedef float v8f_u __attribute__((vector_size(32), aligned(4), may_alias));

static inline void v8_load(v8f *v, const float *p)
{
	*v = *(const v8f_u *)p;
}

static inline void v8_store(float *p, const v8f *v)
{
	*(v8f_u *)p = *v;
}

/* R rows of out by 8 * NV columns: a's element (r, j) is a[r * ars + j *
 * ajs], so one routine serves V (tiles, C) as it is and transposed. Each
 * result sums j in order, from out's value if acc is set, else from 0.
 * Always inlined, so each (R, NV) is compiled with its block in
 * registers. */
static inline __attribute__((always_inline)) void
micro(float *restrict out, size_t ldo, const float *restrict a, size_t ars, size_t ajs,
      const float *restrict b, size_t ldb, size_t n, int R, int NV, int acc)
{
	v8f s[WINO_ROWS][2] = {{{0}}};

	if (acc)
		for (int r = 0; r < R; r++)
			for (int v = 0; v < NV; v++)
				v8_load(&s[r][v], out + (size_t)r * ldo + 8 * (size_t)v);
	for (size_t j = 0; j < n; j++) {
		v8f b0, b1 = {0};
		v8_load(&b0, b + j * ldb);
		if (NV > 1)
			v8_load(&b1, b + j * ldb + 8);
		for (int r = 0; r < R; r++) {
			float x = a[(size_t)r * ars + j * ajs];
			v8f xv = {x, x, x, x, x, x, x, x};
			s[r][0] += xv * b0;
			if (NV > 1)
				s[r][1] += xv * b1;
		}
	}
	for (int r = 0; r < R; r++)
		for (int v = 0; v < NV; v++)
			v8_store(out + (size_t)r * ldo + 8 * (size_t)v, &s[r][v]);
}

#define MICRO_CASE(R, NV)                                                                          \
	case R:                                                                                    \
		micro(out, ldo, a, ars, ajs, b, ldb, n, R, NV, acc);                               \
		break

#define MICRO_SWITCH(rows, NV)                                                                     \
	switch (rows) {                                                                            \
		MICRO_CASE(6, NV);                                                                 \
		MICRO_CASE(5, NV);                                                                 \
		MICRO_CASE(4, NV);                                                                 \
		MICRO_CASE(3, NV);                                                                 \
		MICRO_CASE(2, NV);                                                                 \
	default:                                                                                   \
		micro(out, ldo, a, ars, ajs, b, ldb, n, 1, NV, acc);                               \
	}

/* K is a multiple of 8: blocks of 16 columns, then one of 8. */
SIMD_CLONES static void block_gemm(float *out0, size_t ldo, const float *a0, size_t ars, size_t ajs,
                                   const float *b0, size_t ldb, size_t rows, size_t n, size_t K,
                                   int acc)
{
	for (size_t r0 = 0; r0 < rows; r0 += WINO_ROWS) {
		int R = rows - r0 < WINO_ROWS ? (int)(rows - r0) : WINO_ROWS;
		for (size_t k0 = 0; k0 < K; k0 += 16) {
			float *out = out0 + r0 * ldo + k0;
			const float *a = a0 + r0 * ars, *b = b0 + k0;
			if (K - k0 >= 16) {
				MICRO_SWITCH(R, 2)
			} else {
				MICRO_SWITCH(R, 1)
			}
		}
	}
}

/* --- Transforms --- */

/* Tile t's example and its row and column among the th x tw tiles. */
static size_t tile_at(size_t t, int th, int tw, int *ty, int *tx)
{
	size_t per = (size_t)th * (size_t)tw, r = t % per;

	*ty = (int)(r / (size_t)tw);
	*tx = (int)(r % (size_t)tw);
	return t / per;
}

/* The 16 input pixels under tile t of the convolution g computes, as
 * pointers to their C channels; zero for those outside the image. */
static void tile_inputs(const float *p[WINO_X], const float *in, const struct conv_geom *g,
                        size_t t, int th, int tw, const float *zero)
{
	int ty, tx;
	size_t b = tile_at(t, th, tw, &ty, &tx);

	for (int a = 0; a < 4; a++) {
		int ih = 2 * ty - g->PT + a;
		for (int c = 0; c < 4; c++) {
			int iw = 2 * tx - g->PL + c;
			p[a * 4 + c] = ih < 0 || ih >= g->H || iw < 0 || iw >= g->W
			                   ? zero
			                   : in + (((b * (size_t)g->H + (size_t)ih) * (size_t)g->W +
			                            (size_t)iw) *
			                           (size_t)g->C);
		}
	}
}

/* The offsets in (B, OH, OW, OC) of the 4 output pixels of tile t, or
 * SIZE_MAX for those past the image's edge. */
static void tile_outputs(size_t off[4], const struct conv_geom *g, size_t t, int th, int tw)
{
	int ty, tx;
	size_t b = tile_at(t, th, tw, &ty, &tx);

	for (int a = 0; a < 2; a++)
		for (int c = 0; c < 2; c++) {
			int oh = 2 * ty + a, ow = 2 * tx + c;
			off[a * 2 + c] =
			    oh >= g->OH || ow >= g->OW
			        ? SIZE_MAX
			        : ((b * (size_t)g->OH + (size_t)oh) * (size_t)g->OW + (size_t)ow) *
			              (size_t)g->OC;
		}
}

/* V_x = (B^T d B)_x for x in [x0, x1), over C channels, to v + (x - x0) *
 * xs: B^T's rows first, then its columns, 8 channels at a time. */
SIMD_CLONES static void input_tile(float *restrict v, size_t xs, const float *const p[WINO_X],
                                   size_t C, int x0, int x1)
{
	for (size_t c = 0; c < C; c += 8) {
		v8f d[WINO_X], t[WINO_X], u[WINO_X];
		for (int q = 0; q < WINO_X; q++)
			v8_load(&d[q], p[q] + c);
		for (int b = 0; b < 4; b++) {
			t[0 + b] = d[0 + b] - d[8 + b];
			t[4 + b] = d[4 + b] + d[8 + b];
			t[8 + b] = d[8 + b] - d[4 + b];
			t[12 + b] = d[4 + b] - d[12 + b];
		}
		for (int i = 0; i < 16; i += 4) {
			u[i + 0] = t[i + 0] - t[i + 2];
			u[i + 1] = t[i + 1] + t[i + 2];
			u[i + 2] = t[i + 2] - t[i + 1];
			u[i + 3] = t[i + 1] - t[i + 3];
		}
		for (int x = x0; x < x1; x++)
			v8_store(v + (size_t)(x - x0) * xs + c, &u[x]);
	}
}

/* The 2x2 outputs y = A^T M A of one tile, over K channels, plus the bias,
 * then ReLU if relu is set; m + x * xs holds M_x. 8 channels at a time. */
SIMD_CLONES static void output_tile(float *const o[4], const float *restrict m, size_t xs, size_t K,
                                    const float *restrict bias, int relu)
{
	for (size_t k = 0; k < K; k += 8) {
		v8f r[WINO_X], s[4][2], y[4], bv, zero = {0};
		for (int x = 0; x < WINO_X; x++)
			v8_load(&r[x], m + (size_t)x * xs + k);
		v8_load(&bv, bias + k);
		for (int i = 0; i < 4; i++) {
			s[i][0] = r[i * 4 + 0] + r[i * 4 + 1] + r[i * 4 + 2];
			s[i][1] = r[i * 4 + 1] - r[i * 4 + 2] - r[i * 4 + 3];
		}
		y[0] = s[0][0] + s[1][0] + s[2][0] + bv;
		y[1] = s[0][1] + s[1][1] + s[2][1] + bv;
		y[2] = s[1][0] - s[2][0] - s[3][0] + bv;
		y[3] = s[1][1] - s[2][1] - s[3][1] + bv;
		for (int q = 0; q < 4; q++) {
			if (relu) /* y where y > 0, else 0 (NaN included) */
				y[q] = (v8f)((v8i)y[q] & (y[q] > zero));
			v8_store(o[q] + k, &y[q]);
		}
	}
}

/* (A dy A^T)_x for x in [x0, x1), from the tile's 2x2 output gradients y,
 * over K channels, to dm + (x - x0) * xs: A's rows (1 0, 1 1, 1 -1,
 * 0 -1) down, then across, 8 channels at a time. */
SIMD_CLONES static void grad_tile(float *restrict dm, size_t xs, const float *const y[4], size_t K,
                                  int x0, int x1)
{
	for (size_t k = 0; k < K; k += 8) {
		v8f y00, y01, y10, y11, q[4][2], u[WINO_X];
		v8_load(&y00, y[0] + k);
		v8_load(&y01, y[1] + k);
		v8_load(&y10, y[2] + k);
		v8_load(&y11, y[3] + k);
		q[0][0] = y00, q[0][1] = y01;
		q[1][0] = y00 + y10, q[1][1] = y01 + y11;
		q[2][0] = y00 - y10, q[2][1] = y01 - y11;
		q[3][0] = -y10, q[3][1] = -y11;
		for (int i = 0; i < 4; i++) {
			u[i * 4 + 0] = q[i][0];
			u[i * 4 + 1] = q[i][0] + q[i][1];
			u[i * 4 + 2] = q[i][0] - q[i][1];
			u[i * 4 + 3] = -q[i][1];
		}
		for (int x = x0; x < x1; x++)
			v8_store(dm + (size_t)(x - x0) * xs + k, &u[x]);
	}
}

/* U (16, Ci, Co) = G g G^T for every channel pair of the convolution
 * computed: g itself (Ci = C, Co = OC), or with flip its transpose, the
 * input gradient's (Ci = OC, Co = C, the kernel turned half a turn). */
static void kernel_transform(float *U, const float *wb, const struct conv_geom *g, int flip)
{
	size_t C = (size_t)g->C, OC = (size_t)g->OC;
	size_t Ci = flip ? OC : C, Co = flip ? C : OC;

	for (size_t ci = 0; ci < Ci; ci++)
		for (size_t co = 0; co < Co; co++) {
			double k[3][3], gk[4][3];
			for (int a = 0; a < 3; a++)
				for (int b = 0; b < 3; b++)
					k[a][b] =
					    flip
					        ? wb[((size_t)((2 - a) * 3 + 2 - b) * C + co) * OC +
					             ci]
					        : wb[((size_t)(a * 3 + b) * C + ci) * OC + co];
			for (int i = 0; i < 4; i++)
				for (int b = 0; b < 3; b++)
					gk[i][b] = G[i][0] * k[0][b] + G[i][1] * k[1][b] +
					           G[i][2] * k[2][b];
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					U[((size_t)(i * 4 + j) * Ci + ci) * Co + co] =
					    (float)(gk[i][0] * G[j][0] + gk[i][1] * G[j][1] +
					            gk[i][2] * G[j][2]);
		}
}

/* dwb's kernel rows = G^T dU G for every channel pair. */
static void kernel_grads(float *dwb, const float *dU, const struct conv_geom *g)
{
	size_t C = (size_t)g->C, OC = (size_t)g->OC;

	for (size_t c = 0; c < C; c++)
		for (size_t k = 0; k < OC; k++) {
			double u[4][4], gu[3][4];
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					u[i][j] = dU[((size_t)(i * 4 + j) * C + c) * OC + k];
			for (int a = 0; a < 3; a++)
				for (int j = 0; j < 4; j++)
					gu[a][j] = G[0][a] * u[0][j] + G[1][a] * u[1][j] +
					           G[2][a] * u[2][j] + G[3][a] * u[3][j];
			for (int a = 0; a < 3; a++)
				for (int b = 0; b < 3; b++)
					dwb[((size_t)(a * 3 + b) * C + c) * OC + k] =
					    (float)(gu[a][0] * G[0][b] + gu[a][1] * G[1][b] +
					            gu[a][2] * G[2][b] + gu[a][3] * G[3][b]);
		}
}

/* --- The passes --- */

struct wino_job {
	float *out, *dU, *db;
	const float *in, *dout, *U, *bias;
	const struct conv_geom *g; /* the convolution computed */
	size_t tiles;
	int B, th, tw, relu;
};

static void job_tiles(struct wino_job *j, const struct conv_geom *g, int B)
{
	j->g = g;
	j->B = B;
	j->th = (g->OH + 1) / 2;
	j->tw = (g->OW + 1) / 2;
	j->tiles = (size_t)B * (size_t)j->th * (size_t)j->tw;
}

double winograd_macs(const struct conv_geom *g, int B)
{
	struct wino_job j;

	job_tiles(&j, g, B);
	return (double)WINO_X * (double)j.tiles * (double)g->C * (double)g->OC;
}

/* A part's zeros and sink, each max_channels long, then its blocks. */
static float *part_buffer(int part, const struct conv_geom *g, float **zero, float **sink)
{
	size_t z = max_channels(g);
	float *buf = part_scratch[part];

	memset(buf, 0, sizeof(float) * z);
	*zero = buf;
	*sink = buf + z;
	return buf + 2 * z;
}

/* The tiles of one part: out = conv(in, U) + bias, block by block. */
static void forward_part(void *ctx, int part, int parts)
{
	const struct wino_job *j = ctx;
	const struct conv_geom *g = j->g;
	size_t C = (size_t)g->C, K = (size_t)g->OC, tb = block_tiles(g, WINO_X), lo, hi;
	float *zero, *sink, *V = part_buffer(part, g, &zero, &sink), *M = V + WINO_X * tb * C;
	const float *bias = j->bias ? j->bias : zero;

	parallel_range(j->tiles, part, parts, 1, &lo, &hi);
	for (size_t t0 = lo; t0 < hi; t0 += tb) {
		size_t nt = hi - t0 < tb ? hi - t0 : tb;
		for (size_t i = 0; i < nt; i++) {
			const float *p[WINO_X];
			tile_inputs(p, j->in, g, t0 + i, j->th, j->tw, zero);
			input_tile(V + i * C, tb * C, p, C, 0, WINO_X);
		}
		for (size_t x = 0; x < WINO_X; x++)
			block_gemm(M + x * tb * K, K, V + x * tb * C, C, 1, j->U + x * C * K, K, nt,
			           C, K, 0);
		for (size_t i = 0; i < nt; i++) {
			size_t off[4];
			float *o[4];
			tile_outputs(off, g, t0 + i, j->th, j->tw);
			for (int q = 0; q < 4; q++)
				o[q] = off[q] == SIZE_MAX ? sink : j->out + off[q];
			output_tile(o, M + i * K, tb * K, K, bias, j->relu);
		}
	}
}

/* The positions [x0, x1) of part's share: dU_x = sum over every tile, in
 * order, of V_x^T (A dy A^T)_x; and the bias gradient of part's share of
 * the output channels. */
static void weight_grads_part(void *ctx, int part, int parts)
{
	const struct wino_job *j = ctx;
	const struct conv_geom *g = j->g;
	size_t C = (size_t)g->C, K = (size_t)g->OC, lo, hi, k0, k1;
	float *zero, *sink, *V = part_buffer(part, g, &zero, &sink);

	(void)sink;
	parallel_range(WINO_X, part, parts, 1, &lo, &hi);
	if (lo < hi) {
		size_t nx = hi - lo, tb = block_tiles(g, nx);
		float *dM = V + nx * tb * C;
		memset(j->dU + lo * C * K, 0, sizeof(float) * nx * C * K);
		for (size_t t0 = 0; t0 < j->tiles; t0 += tb) {
			size_t nt = j->tiles - t0 < tb ? j->tiles - t0 : tb;
			for (size_t i = 0; i < nt; i++) {
				const float *p[WINO_X], *y[4];
				size_t off[4];
				tile_inputs(p, j->in, g, t0 + i, j->th, j->tw, zero);
				input_tile(V + i * C, tb * C, p, C, (int)lo, (int)hi);
				tile_outputs(off, g, t0 + i, j->th, j->tw);
				for (int q = 0; q < 4; q++)
					y[q] = off[q] == SIZE_MAX ? zero : j->dout + off[q];
				grad_tile(dM + i * K, tb * K, y, K, (int)lo, (int)hi);
			}
			for (size_t x = lo; x < hi; x++)
				block_gemm(j->dU + x * C * K, K, V + (x - lo) * tb * C, 1, C,
				           dM + (x - lo) * tb * K, K, C, nt, K, 1);
		}
	}
	if (!j->db)
		return;
	parallel_range(K, part, parts, 8, &k0, &k1);
	dense_bias_grads(j->db + k0, j->dout + k0, (size_t)j->B * (size_t)g->OH * (size_t)g->OW, K,
	                 k1 - k0);
}

void winograd_forward(float *out, float *cols, const float *in, const float *wb, int B,
                      const struct conv_geom *g, int relu)
{
	struct wino_job j = {.out = out, .in = in, .U = cols, .relu = relu};

	if (B < 1)
		return;
	kernel_transform(cols, wb, g, 0);
	j.bias = g->bias ? wb + (size_t)9 * (size_t)g->C * (size_t)g->OC : NULL;
	job_tiles(&j, g, B);
	parallel_run(forward_part, &j);
}

void winograd_backward(float *dwb, float *din, float *cols, float *dcols, const float *dout,
                       const float *in, const float *wb, int B, const struct conv_geom *g)
{
	struct wino_job w = {.dU = cols, .in = in, .dout = dout};
	size_t KC = (size_t)9 * (size_t)g->C * (size_t)g->OC;

	if (B < 1)
		return;
	/* bias: where weight_grads_part writes the bias gradient */
	w.db = g->bias ? dwb + KC : NULL;
	job_tiles(&w, g, B);
	parallel_run(weight_grads_part, &w);
	kernel_grads(dwb, cols, g);
	if (!din)
		return;
	struct conv_geom tg = conv_dgrad_geom(g);
	struct wino_job d = {.out = din, .in = dout, .U = dcols};
	kernel_transform(dcols, wb, g, 1);
	job_tiles(&d, &tg, B);
	parallel_run(forward_part, &d);
}
