/* test_gpu.c - the CUDA backend and the NCCL communicator against the CPU,
 * on a real GPU (CUDA build only: make CUDA=1 test).
 *
 * Every test that needs a GPU first asks for one and, where none is
 * visible, prints "skipped: no GPU (why)" and is counted as skipped, never
 * as passed. The last test runs everywhere: --device cuda without a GPU
 * exits 1 and says why.
 *
 * Tolerances. The GPU computes the same arithmetic as the CPU in another
 * order: cuBLAS's sgemm against OpenBLAS's, the direct first convolution
 * against im2col. A sum of n float products in two orders differs by about
 * sqrt(n) * 2^-24 of the sum of the magnitudes; for the widest layer (n =
 * 21632) that is 1e-5 of the tensor's scale. Layers are compared at
 * 1e-4 of the largest magnitude of each tensor: ten times that, and four
 * orders of magnitude below what a wrong index, a missing bias or a
 * transposed kernel gives. The optimizers are element-wise; the GPU may
 * fuse a multiply and an add that the CPU (built with -ffp-contract=off)
 * rounds twice, a relative 2^-23 a step: 1e-6 relative after 3 steps.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "comm_nccl.h"
#include "cuda/kernels.h"
#include "cuda/model_cuda.h"
#include "err.h"
#include "gpu.h"
#include "log.h"
#include "loss.h"
#include "model.h"
#include "optimizer.h"
#include "rng.h"
#include "testutil.h"
#include "trainer.h"

/* Skips the calling test, saying so, unless a GPU is visible. */
#define NEED_GPUS(n)                                                                               \
	do {                                                                                       \
		char why_[ERR_LEN] = "";                                                           \
		int have_ = gpu_count(why_, sizeof(why_));                                         \
		if (have_ < (n)) {                                                                 \
			if (have_ == 0)                                                            \
				printf("skipped: no GPU (%s)\n", why_);                            \
			else                                                                       \
				printf("skipped: needs %d GPUs, %d visible\n", (n), have_);        \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

/* max |a - b| over n, and max |b|. */
static void compare(const float *gpu, const float *cpu, size_t n, double *diff, double *scale)
{
	*diff = 0.0, *scale = 0.0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)gpu[i] - cpu[i]), s = fabs((double)cpu[i]);
		if (!(d <= *diff)) /* NaN too */
			*diff = d;
		if (s > *scale)
			*scale = s;
	}
}

static void expect_close(const char *what, const float *gpu, const float *cpu, size_t n, double rel)
{
	double diff, scale;

	compare(gpu, cpu, n, &diff, &scale);
	printf("  %-28s max |gpu - cpu| %.3g of max |cpu| %.3g\n", what, diff, scale);
	if (!(diff <= rel * scale + 1e-12))
		fail_msg("%s: the GPU differs from the CPU by %g, over %g x %g", what, diff, rel,
		         scale);
}

static float *from_gpu(const float *dev, size_t n)
{
	float *h = malloc(n * sizeof(float));

	assert_non_null(h);
	assert_int_equal(cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost),
	                 cudaSuccess);
	return h;
}

/* One forward and backward pass of model name at batch B on the CPU and
 * on GPU 0, from the same weights and inputs: every layer's output, the
 * loss, and every parameter's gradient agree. */
static void expect_layers_match(const char *name, int B)
{
	struct model *m = testutil_model(name, 28, 10, B, 7);
	struct cuda_model cm;
	struct rng r;
	size_t in_len = 28 * 28, n;
	float *x = malloc((size_t)B * in_len * sizeof(float)), *dx;
	uint8_t *y = malloc((size_t)B);
	float *fy = malloc((size_t)B * sizeof(float)), *dy;
	float scale = 1.0f / (float)B;
	struct loss_spec spec;
	struct loss_config lc = {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
	enum metric_kind acc = METRIC_ACCURACY;
	char err[ERR_LEN];

	assert_non_null(m);
	assert_int_equal(loss_resolve(&spec, &lc, 1, 10, 1, &acc, 1, err), 0);
	n = m->nparams;
	/* biases too, so that a missing bias shows */
	rng_init(&r, 11, 0);
	for (int i = 0; i < m->nlayers; i++)
		for (size_t j = 0; j < m->layers[i].b_len; j++)
			m->params[m->layers[i].b_off + j] = rng_uniform(&r, -0.1f, 0.1f);
	for (size_t i = 0; i < (size_t)B * in_len; i++)
		x[i] = rng_uniform(&r, 0.0f, 1.0f);
	for (int i = 0; i < B; i++) {
		y[i] = (uint8_t)(rng_next(&r) % 10);
		fy[i] = (float)y[i];
	}

	model_forward(m, x, B, NULL);
	struct loss_sums l = loss_softmax_xent(m->dlogits, model_logits(m), y, B, 10, scale);
	model_backward(m, x, B, NULL, NULL);

	cuda_model_init(&cm, m, 0, B);
	assert_int_equal(cudaMalloc((void **)&dx, (size_t)B * in_len * sizeof(float)), cudaSuccess);
	assert_int_equal(cudaMalloc((void **)&dy, (size_t)B * sizeof(float)), cudaSuccess);
	assert_int_equal(
	    cudaMemcpy(cm.params, m->params, n * sizeof(float), cudaMemcpyHostToDevice),
	    cudaSuccess);
	assert_int_equal(
	    cudaMemcpy(dx, x, (size_t)B * in_len * sizeof(float), cudaMemcpyHostToDevice),
	    cudaSuccess);
	assert_int_equal(cudaMemcpy(dy, fy, (size_t)B * sizeof(float), cudaMemcpyHostToDevice),
	                 cudaSuccess);
	/* A copy from pageable memory may return before it lands, and the
	 * model's stream does not wait for the default one. */
	assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
	cuda_model_forward(&cm, dx, B, 1);
	cuda_model_loss(&cm, &spec, dy, B, scale, 1);
	cuda_model_backward(&cm, dx, B, NULL, NULL);
	assert_int_equal(cudaStreamSynchronize(cm.stream), cudaSuccess);

	printf("%s at batch %d:\n", name, B);
	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *ly = &m->layers[i];
		char what[64];
		float *out = from_gpu(cm.layers[i].out, (size_t)B * ly->out_len);
		snprintf(what, sizeof(what), "layer %d output", i);
		expect_close(what, out, ly->out, (size_t)B * ly->out_len, 1e-4);
		free(out);
		if (!ly->w_len)
			continue;
		float *g = from_gpu(cm.grads + ly->w_off, ly->w_len + ly->b_len);
		snprintf(what, sizeof(what), "layer %d kernel gradient", i);
		expect_close(what, g, m->grads + ly->w_off, ly->w_len, 1e-4);
		snprintf(what, sizeof(what), "layer %d bias gradient", i);
		expect_close(what, g + ly->w_len, m->grads + ly->b_off, ly->b_len, 1e-4);
		free(g);
	}
	double sums[METRICS_WORDS];
	assert_int_equal(cudaMemcpy(sums, cm.sums, sizeof(sums), cudaMemcpyDeviceToHost),
	                 cudaSuccess);
	printf("  loss sum gpu %.9g cpu %.9g; correct gpu %g cpu %ld\n", sums[0], l.loss, sums[2],
	       l.correct);
	assert_true(fabs(sums[0] - l.loss) <= 1e-4 * fabs(l.loss));
	assert_true(sums[2] == (double)l.correct);
	assert_true(sums[1] == (double)B);

	cudaFree(dx);
	cudaFree(dy);
	cuda_model_release(&cm);
	model_free(m);
	free(x);
	free(y);
	free(fy);
}

static void test_cnn_layers_on_the_gpu_match_the_cpu(void **state)
{
	(void)state;
	NEED_GPUS(1);
	expect_layers_match("cnn", 64);
	expect_layers_match("cnn", 13);
}

static void test_cnn_pool_layers_on_the_gpu_match_the_cpu(void **state)
{
	(void)state;
	NEED_GPUS(1);
	expect_layers_match("cnn-pool", 64);
	expect_layers_match("cnn-pool", 7);
}

/* One update on the GPU as enqueue_update launches it, over the device
 * copy ds of the optimizer's slots. */
static void gpu_update(const struct optimizer *o, float *dw, float *ds, const float *dg,
                       const float *dalpha, long n)
{
	switch (o->kind) {
	case OPT_SGD:
		if (o->nslots)
			kernel_sgd_momentum(dw, ds, dg, n, o->lr, o->momentum, o->nesterov,
			                    o->weight_decay, 0);
		else
			kernel_sgd(dw, dg, n, o->lr, o->weight_decay, 0);
		break;
	case OPT_ADAM:
	case OPT_ADAMW:
		kernel_adam(dw, ds, ds + n, dg, n, dalpha, o->one_minus_beta1, o->one_minus_beta2,
		            o->eps, o->lr, o->weight_decay, 0);
		break;
	case OPT_ADAGRAD:
		kernel_adagrad(dw, ds, dg, n, o->lr, o->eps, o->weight_decay, 0);
		break;
	case OPT_RMSPROP: {
		int has_mom = o->momentum > 0.0f;
		float *mom = has_mom ? ds + n : NULL;
		float *a = o->centered ? ds + (1 + has_mom) * n : NULL;
		kernel_rmsprop(dw, ds, mom, a, dg, n, o->lr, o->rho, o->one_minus_rho, o->momentum,
		               o->eps, o->weight_decay, 0);
		break;
	}
	}
}

/* Three updates of each rule and option on the GPU and on the CPU from the
 * same weights, state and gradients, Adam's step size the host's as the
 * backend copies it. Built with -fmad=false, the kernels round every
 * operation as the CPU does, and IEEE division and square root are exact
 * on both, so the weights should be the same values; the test holds them
 * to 1e-6 of the largest weight and says whether they were. */
static void test_optimizers_on_the_gpu_match_the_cpu(void **state)
{
	static const struct {
		const char *name;
		enum optimizer_kind kind;
		double momentum, weight_decay;
		int nesterov, centered;
	} cases[] = {
	    {"sgd", OPT_SGD, 0.0, 0.0, 0, 0},
	    {"sgd momentum", OPT_SGD, 0.9, 0.0, 0, 0},
	    {"sgd nesterov", OPT_SGD, 0.9, 0.0, 1, 0},
	    {"sgd weight decay", OPT_SGD, 0.0, 0.1, 0, 0},
	    {"adam", OPT_ADAM, 0.0, 0.0, 0, 0},
	    {"adamw", OPT_ADAMW, 0.0, 0.004, 0, 0},
	    {"adagrad", OPT_ADAGRAD, 0.0, 0.0, 0, 0},
	    {"rmsprop", OPT_RMSPROP, 0.0, 0.0, 0, 0},
	    {"rmsprop momentum", OPT_RMSPROP, 0.5, 0.0, 0, 0},
	    {"rmsprop centered", OPT_RMSPROP, 0.0, 0.0, 0, 1},
	    {"rmsprop centered momentum", OPT_RMSPROP, 0.9, 0.0, 0, 1},
	};
	const size_t n = 4099;
	struct rng r;

	(void)state;
	NEED_GPUS(1);
	assert_int_equal(cudaSetDevice(0), cudaSuccess);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct optimizer_config c;
		struct optimizer o;
		float *w = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
		float *g0 = malloc(n * sizeof(float)), *dw, *dg, *ds = NULL, *dalpha;
		optimizer_config_defaults(&c, cases[k].kind);
		c.learning_rate = 0.01;
		c.momentum = cases[k].momentum;
		c.weight_decay = cases[k].weight_decay;
		c.nesterov = cases[k].nesterov;
		c.centered = cases[k].centered;
		optimizer_init_config(&o, &c, n);
		size_t slots = (size_t)o.nslots * n;
		rng_init(&r, 5, (uint64_t)k);
		for (size_t i = 0; i < n; i++)
			w[i] = rng_uniform(&r, -1, 1), g0[i] = rng_uniform(&r, -1, 1);
		assert_int_equal(cudaMalloc((void **)&dw, n * 4), cudaSuccess);
		assert_int_equal(cudaMalloc((void **)&dg, n * 4), cudaSuccess);
		if (slots)
			assert_int_equal(cudaMalloc((void **)&ds, slots * 4), cudaSuccess);
		assert_int_equal(cudaMalloc((void **)&dalpha, 4), cudaSuccess);
		assert_int_equal(cudaMemcpy(dw, w, n * 4, cudaMemcpyHostToDevice), cudaSuccess);
		assert_int_equal(cudaMemcpy(dg, g0, n * 4, cudaMemcpyHostToDevice), cudaSuccess);
		if (slots) /* as cuda_push copies it: Adagrad's starts non-zero */
			assert_int_equal(cudaMemcpy(ds, o.state, slots * 4, cudaMemcpyHostToDevice),
			                 cudaSuccess);
		assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
		for (int step = 0; step < 3; step++) {
			memcpy(g, g0, n * sizeof(float));
			optimizer_begin_step(&o);
			optimizer_apply(&o, w, g, 0, n);
			assert_int_equal(cudaMemcpy(dalpha, &o.alpha, 4, cudaMemcpyHostToDevice),
			                 cudaSuccess);
			gpu_update(&o, dw, ds, dg, dalpha, (long)n);
		}
		float *back = from_gpu(dw, n);
		double diff, scale;
		compare(back, w, n, &diff, &scale);
		printf("%s: 3 steps, max |gpu - cpu| %.3g of max |w| %.3g; the same values: %s\n",
		       cases[k].name, diff, scale, diff == 0.0 ? "yes" : "no");
		assert_true(diff <= 1e-6 * scale);
		free(back);
		if (slots) {
			back = from_gpu(ds, slots);
			compare(back, o.state, slots, &diff, &scale);
			printf("%s: state, max |gpu - cpu| %.3g of max %.3g\n", cases[k].name, diff,
			       scale);
			assert_true(diff <= 1e-6 * scale);
			free(back);
		}
		cudaFree(dw), cudaFree(dg), cudaFree(ds), cudaFree(dalpha);
		free(w), free(g), free(g0);
		optimizer_release(&o);
	}
}

/* The NCCL communicator of one worker over every visible GPU, each
 * replica's buffer of small integers: every replica ends with the exact
 * (bitwise) serial sum. With one GPU that is NCCL at world size 1. */
static void test_nccl_allreduce_matches_the_serial_sum(void **state)
{
	char why[ERR_LEN], err[ERR_LEN];
	int g = gpu_count(why, sizeof(why)), reps = g > 8 ? 8 : g;
	const size_t n = (1 << 20) + 3;
	struct comm inner, c;
	float *dev[8], *want = calloc(n, sizeof(float));
	void *bufs[8], *streams[8];

	(void)state;
	NEED_GPUS(1);
	printf("nccl: one process, %d GPU(s): world size %d\n", reps, reps);
	comm_init_local(&inner);
	assert_int_equal(comm_init_nccl(&c, &inner, reps, 60000, 60000, err), 0);
	for (int r = 0; r < reps; r++) {
		float *h = malloc(n * sizeof(float));
		for (size_t i = 0; i < n; i++) {
			h[i] = (float)((i * 7 + (size_t)r * 13) % 101) - 50.0f;
			want[i] += h[i];
		}
		assert_int_equal(cudaSetDevice(r), cudaSuccess);
		assert_int_equal(cudaMalloc((void **)&dev[r], n * 4), cudaSuccess);
		assert_int_equal(cudaMemcpy(dev[r], h, n * 4, cudaMemcpyHostToDevice), cudaSuccess);
		assert_int_equal(cudaStreamCreate((cudaStream_t *)&streams[r]), cudaSuccess);
		bufs[r] = dev[r];
		free(h);
	}
	assert_int_equal(comm_allreduce_device(&c, bufs, n, COMM_F32, streams, err), 0);
	for (int r = 0; r < reps; r++) {
		assert_int_equal(cudaSetDevice(r), cudaSuccess);
		assert_int_equal(cudaStreamSynchronize(streams[r]), cudaSuccess);
		assert_int_equal(comm_device_status(&c, err), 0);
		float *back = from_gpu(dev[r], n);
		assert_memory_equal(back, want, n * sizeof(float));
		free(back);
		cudaFree(dev[r]);
		cudaStreamDestroy(streams[r]);
	}
	comm_release(&c);
	free(want);
}

static void config(struct train_config *c, const char *device, const char *model, int epochs,
                   long steps)
{
	/* The built-in models' plans, read once, kept for the process. */
	static struct keras_model cnn, pool;
	struct keras_model *km = strcmp(model, "cnn") == 0 ? &cnn : &pool;
	char err[ERR_LEN];

	if (km->nlayers == 0 && keras_model_builtin(km, model, err) < 0)
		fail_msg("%s", err);
	memset(c, 0, sizeof(*c));
	snprintf(c->model, sizeof(c->model), "%s", model);
	c->km = km;
	c->loss = km->compile.loss;
	c->nmetrics = km->compile.nmetrics;
	memcpy(c->metrics, km->compile.metrics, sizeof(c->metrics));
	optimizer_config_defaults(&c->opt, OPT_ADAM);
	c->opt.learning_rate = 0.001;
	c->epochs = epochs;
	c->steps_per_epoch = steps;
	c->batch_size = 64;
	c->learning_rate = 0.001;
	c->optimizer = OPT_ADAM;
	c->seed = 42;
	c->threads = 8;
	c->rendezvous_timeout = 60;
	c->collective_timeout = 60;
	c->save_freq = SAVE_FREQ_EPOCH;
	c->device = strcmp(device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
	snprintf(c->data_dir, sizeof(c->data_dir), "%s", testutil_data_dir());
}

static struct train_result fit(const struct train_config *c)
{
	struct train_result res;
	char err[ERR_LEN] = "";
	FILE *out = fopen("/dev/null", "w");
	int rc = trainer_fit(c, out, &res, err);

	fclose(out);
	if (rc != 0)
		fail_msg("trainer_fit on %s: %s", c->device == DEVICE_CUDA ? "cuda" : "cpu", err);
	return res;
}

/* One epoch of cnn-pool with Adam from the same weights and data order:
 * the GPU's test accuracy is the CPU's within 1.5 points. The two runs
 * differ only by the rounding of their sums, which moves the trajectory
 * less than another seed does; on the CPU, seeds 1 to 5 and 42 gave
 * 1-epoch accuracies from 0.869 to 0.885, a spread of 1.5 points. (On an
 * H100 the two runs ended 0.05 points apart.) */
static void test_a_gpu_run_reaches_the_cpu_runs_accuracy(void **state)
{
	struct train_config c;

	(void)state;
	NEED_GPUS(1);
	config(&c, "cpu", "cnn-pool", 1, 0);
	c.validation_steps = VALIDATION_ALL;
	struct train_result cpu = fit(&c);
	c.device = DEVICE_CUDA;
	struct train_result gpu = fit(&c);
	double a_cpu = metrics_mean(&cpu.val, 0), a_gpu = metrics_mean(&gpu.val, 0);
	printf("1 epoch of cnn-pool, Adam: test accuracy cpu %.4f gpu %.4f; %.1f s and %.1f s\n",
	       a_cpu, a_gpu, cpu.seconds, gpu.seconds);
	assert_true(a_cpu > 0.80 && a_gpu > 0.80);
	assert_true(fabs(a_gpu - a_cpu) <= 0.015);
	assert_true(gpu.val.count == 10000);
}

struct tmp {
	char dir[TESTUTIL_TMPDIR_LEN];
};

static int setup_tmp(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct tmp), "gpu");
}

/* The model files that runs wrote to <tmp>/a and <tmp>/b are the same
 * bytes. */
static void expect_same_model_files(const struct tmp *t, const char *a, const char *b)
{
	char path[TESTUTIL_TMPDIR_LEN + 64];
	unsigned char *x, *y;
	size_t xlen, ylen;

	snprintf(path, sizeof(path), "%s/%s/model.mwj", t->dir, a);
	x = testutil_read_file(path, &xlen);
	snprintf(path, sizeof(path), "%s/%s/model.mwj", t->dir, b);
	y = testutil_read_file(path, &ylen);
	assert_int_equal(xlen, ylen);
	assert_memory_equal(x, y, xlen);
	free(x);
	free(y);
}

/* A backup written on the GPU resumes on the CPU, and the CPU's on the
 * GPU: 100 steps on each, the step count and the position carried on. */
static void test_a_gpu_backup_resumes_on_the_cpu_and_back(void **state)
{
	struct tmp *t = *state;
	struct train_config c;
	struct train_result res;
	const char *devices[] = {"cuda", "cpu", "cuda"};

	NEED_GPUS(1);
	for (int leg = 0; leg < 3; leg++) {
		config(&c, devices[leg], "cnn", leg + 1, 100);
		snprintf(c.backup_dir, sizeof(c.backup_dir), "%s/backups", t->dir);
		c.keep_backups = 1;
		res = fit(&c);
		printf("leg %d on %s: global step %ld, loss %.4f\n", leg + 1, devices[leg],
		       res.global_step, metrics_loss(&res.train));
		/* Each leg trains only the epoch the backup lacks. */
		assert_int_equal(res.global_step, 100 * (leg + 1));
		assert_true(isfinite(metrics_loss(&res.train)) && metrics_loss(&res.train) < 2.0);
	}
}

/* Two epochs at once, and one epoch then a resume from its backup, on the
 * GPU: the same model file, bit for bit, as on the CPU. */
static void test_a_resumed_gpu_run_ends_with_the_uninterrupted_runs_weights(void **state)
{
	struct tmp *t = *state;
	struct train_config c;

	NEED_GPUS(1);
	config(&c, "cuda", "cnn-pool", 2, 150);
	snprintf(c.model_dir, sizeof(c.model_dir), "%s/straight", t->dir);
	fit(&c);
	config(&c, "cuda", "cnn-pool", 1, 150);
	snprintf(c.backup_dir, sizeof(c.backup_dir), "%s/backups", t->dir);
	c.keep_backups = 1;
	fit(&c);
	config(&c, "cuda", "cnn-pool", 2, 150);
	snprintf(c.backup_dir, sizeof(c.backup_dir), "%s/backups", t->dir);
	snprintf(c.model_dir, sizeof(c.model_dir), "%s/resumed", t->dir);
	fit(&c);
	expect_same_model_files(t, "straight", "resumed");
}

/* The NCCL communicator forced on one GPU (world size 1, the step run
 * without CUDA graphs, the gradients and sums through NCCL's all-reduce)
 * trains the same bits as no collective at all (graphs on): NCCL's set-up,
 * its events and streams, and the eager step are all exercised. */
static void test_the_nccl_path_on_one_gpu_trains_the_same_bits(void **state)
{
	struct tmp *t = *state;
	struct train_config c;

	NEED_GPUS(1);
	config(&c, "cuda", "cnn-pool", 1, 120);
	c.gpus = 1;
	snprintf(c.model_dir, sizeof(c.model_dir), "%s/auto", t->dir);
	fit(&c);
	c.collective = COLLECTIVE_NCCL;
	snprintf(c.model_dir, sizeof(c.model_dir), "%s/nccl", t->dir);
	fit(&c);
	expect_same_model_files(t, "auto", "nccl");
}

/* Everywhere: asked for a GPU it cannot have, the worker exits 1 and
 * says why. With GPUs present, CUDA_VISIBLE_DEVICES hides them. */
static void test_device_cuda_without_a_gpu_exits_1_saying_why(void **state)
{
	struct tmp *t = *state;
	const char *bin = getenv("MWJ_CUDA_WORKER_BIN");
	const char *args[] = {"train", "--device", "cuda", "--epochs", "1", NULL};
	const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
	char out[TESTUTIL_TMPDIR_LEN + 16], errp[TESTUTIL_TMPDIR_LEN + 16];

	if (!bin || !bin[0]) {
		printf("skipped: MWJ_CUDA_WORKER_BIN is not set\n");
		skip();
	}
	snprintf(out, sizeof(out), "%s/out", t->dir);
	snprintf(errp, sizeof(errp), "%s/err", t->dir);
	pid_t pid = testutil_spawn(bin, args, env, out, errp);
	int rc = testutil_wait(pid, testutil_now() + 60);
	char *text = testutil_read_file(errp, NULL);
	printf("%s", text);
	assert_int_equal(rc, 1);
	testutil_assert_contains(text, "--device cuda: no GPU visible");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cnn_layers_on_the_gpu_match_the_cpu),
	    cmocka_unit_test(test_cnn_pool_layers_on_the_gpu_match_the_cpu),
	    cmocka_unit_test(test_optimizers_on_the_gpu_match_the_cpu),
	    cmocka_unit_test(test_nccl_allreduce_matches_the_serial_sum),
	    cmocka_unit_test(test_a_gpu_run_reaches_the_cpu_runs_accuracy),
	    cmocka_unit_test_setup_teardown(test_a_gpu_backup_resumes_on_the_cpu_and_back,
	                                    setup_tmp, testutil_fixture_teardown),
	    cmocka_unit_test_setup_teardown(
	        test_a_resumed_gpu_run_ends_with_the_uninterrupted_runs_weights, setup_tmp,
	        testutil_fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_the_nccl_path_on_one_gpu_trains_the_same_bits,
	                                    setup_tmp, testutil_fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_device_cuda_without_a_gpu_exits_1_saying_why,
	                                    setup_tmp, testutil_fixture_teardown),
	};

	log_set_level(LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
