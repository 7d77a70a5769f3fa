/* test_gpu.c - the CUDA backend and the NCCL communicator against the CPU,
 * on a real GPU (CUDA build only: make CUDA=1 test).
 *
 * Every test that needs a GPU first asks for one and, where none is
 * visible, prints "skipped: no GPU (why)" and is counted as skipped, never
 * as passed. Two run everywhere: what backend_cuda_supports refuses, and
 * --device cuda without a GPU, which exits 1 and says why.
 *
 * Layers. The seed models, and Keras files written here with every layer
 * kind, activation and loss mwj builds (conv geometries, rank-3 dense
 * layers, pools, dropout, batch normalisation, activation layers, the
 * cross-entropies from logits and from probabilities, mse, mae), each
 * forward and backward pass, loss, metric, batch statistics and moving
 * statistics against the CPU; and a model of most of them trained end to
 * end on NumPy data, one SGD step and three epochs.
 *
 * Tolerances. The GPU computes the same arithmetic as the CPU in another
 * order: cuBLAS's sgemm against OpenBLAS's, the direct first convolution
 * against im2col. A sum of n float products in two orders differs by about
 * sqrt(n) * 2^-24 of the sum of the magnitudes; for the widest layer (n =
 * 21632) that is 1e-5 of the tensor's scale. Layers are compared at
 * 1e-4 of the largest magnitude of each tensor: ten times that, and four
 * orders of magnitude below what a wrong index, a missing bias or a
 * transposed kernel gives (or a dropout mask, a batch statistic, a window
 * of a pool). CUDA's expf, erff, tanhf, exp and log are within a few ulps
 * of glibc's, far below that too. The optimizers are element-wise; the
 * GPU may fuse a multiply and an add that the CPU (built with
 * -ffp-contract=off) rounds twice, a relative 2^-23 a step: 1e-6 relative
 * after 3 steps.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "comm_nccl.h"
#include "cuda/kernels.h"
#include "cuda/model_cuda.h"
#include "err.h"
#include "gpu.h"
#include "keras_model.h"
#include "log.h"
#include "loss.h"
#include "model.h"
#include "model_file.h"
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

/* --- Every layer kind, activation and loss: Keras files of each --- */

/* Fails the running test with msg. cmocka's failure jumps out of the test,
 * which the static analyzer cannot know without the noreturn. */
static _Noreturn void fail_with(const char *msg)
{
	fail_msg("%s", msg);
	abort(); /* not reached */
}

/* A layer of a Keras 3 file: its class, and its config's text with ' for
 * ". */
struct k3 {
	const char *cls, *config;
};

#define K3_MAX_LAYERS 12

/* A model for the layer tests: its input shape's text, its layers, the
 * loss it is compiled with and one metric, and the layer whose gelu takes
 * the tanh form and the one whose leaky_relu slope is negative (-1:
 * none), which a file cannot say (keras_model.h). */
struct layer_case {
	const char *name, *input;
	struct k3 layers[K3_MAX_LAYERS];
	struct loss_config loss;
	enum metric_kind metric;
	int gelu_tanh, negative_slope;
};

/* Parses the case into km, as Keras 3's to_json writes it. */
static void k3_parse(struct keras_model *km, const char *name, const char *input,
                     const struct k3 *layers)
{
	char json[8192], err[ERR_LEN];
	size_t n = 0;

	n += (size_t)snprintf(json + n, sizeof(json) - n,
	                      "{'module':'keras','class_name':'Sequential','config':{'name':'%s',"
	                      "'layers':[{'module':'keras.layers','class_name':'InputLayer',"
	                      "'config':{'name':'input_layer','batch_shape':[null,%s]}}",
	                      name, input);
	for (int i = 0; i < K3_MAX_LAYERS && layers[i].cls; i++)
		n += (size_t)snprintf(json + n, sizeof(json) - n,
		                      ",{'module':'keras.layers','class_name':'%s','config':{"
		                      "'name':'layer_%d'%s%s}}",
		                      layers[i].cls, i, layers[i].config[0] ? "," : "",
		                      layers[i].config);
	n += (size_t)snprintf(json + n, sizeof(json) - n, "]}}");
	assert_true(n < sizeof(json));
	for (char *p = json; *p; p++)
		if (*p == '\'')
			*p = '"';
	if (keras_model_parse(km, json, n, name, err) < 0)
		fail_msg("%s", err);
}

/* The case's model for batches of B, its parameters drawn (biases,
 * gamma, beta and the moving statistics too, so that a missing one
 * shows), and its loss resolved against T targets. */
static struct model *build_case(const struct layer_case *c, struct keras_model *km, int B,
                                struct loss_spec *spec)
{
	int spec_logits, output_logits;
	char err[ERR_LEN];
	struct rng r;

	k3_parse(km, c->name, c->input, c->layers);
	if (c->gelu_tanh >= 0)
		km->layers[c->gelu_tanh].act.approximate = 1;
	if (c->negative_slope >= 0)
		km->layers[c->negative_slope].act.negative_slope = -0.5f;
	model_loss_reads(km, &c->loss, &spec_logits, &output_logits);
	struct model *m = model_new(km, B, output_logits, err);
	if (!m)
		fail_with(err);
	model_init_params(m, km, 5);
	rng_init(&r, 17, 0);
	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		for (size_t j = 0; j < l->b_len; j++)
			m->params[l->b_off + j] = rng_uniform(&r, -0.2f, 0.2f);
		if (l->kind != LAYER_BATCHNORM)
			continue;
		for (size_t j = 0; j < l->w_len; j++)
			m->params[l->w_off + j] = rng_uniform(&r, 0.5f, 1.5f);
		for (int j = 0; j < l->in_c; j++) {
			m->state[l->s_off + j] = rng_uniform(&r, -0.5f, 0.5f);
			m->state[l->s_off + l->in_c + j] = rng_uniform(&r, 0.5f, 1.5f);
		}
	}
	int K = (int)m->out_len, T = c->loss.kind == LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ? 1 : K;
	if (loss_resolve(spec, &c->loss, spec_logits, K, T, &c->metric, 1, err) < 0)
		fail_msg("%s: %s", c->name, err);
	return m;
}

/* Targets that fit the loss: class labels, soft labels summing to 1,
 * binary targets in [0, 1], or any values. */
static void draw_targets(float *y, const struct loss_spec *s, int B, struct rng *r)
{
	for (int i = 0; i < B; i++) {
		float *t = y + (size_t)i * s->T, sum = 0.0f;
		if (s->kind == LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
			t[0] = (float)(rng_next(r) % (uint64_t)s->K);
			continue;
		}
		for (int k = 0; k < s->T; k++) {
			t[k] = s->kind >= LOSS_MEAN_SQUARED_ERROR ? rng_uniform(r, -1.0f, 1.0f)
			                                          : rng_uniform(r, 0.0f, 1.0f);
			sum += t[k];
		}
		for (int k = 0; k < s->T && s->kind == LOSS_CATEGORICAL_CROSSENTROPY; k++)
			t[k] /= sum;
	}
}

static float *to_gpu(const float *h, size_t n)
{
	float *d;

	assert_int_equal(cudaMalloc((void **)&d, (n ? n : 1) * sizeof(float)), cudaSuccess);
	assert_int_equal(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
	return d;
}

static void expect_close_gpu(const char *what, const float *dev, const float *cpu, size_t n)
{
	float *h = from_gpu(dev, n);

	expect_close(what, h, cpu, n, 1e-4);
	free(h);
}

/* The step's sums on the GPU (metrics_to_words' layout) against the
 * CPU's loss_batch sums. */
static void expect_sums_close(const struct cuda_model *cm, const double *cpu, int B,
                              const struct loss_spec *spec)
{
	double g[METRICS_WORDS];

	assert_int_equal(cudaMemcpy(g, cm->sums, sizeof(g), cudaMemcpyDeviceToHost), cudaSuccess);
	printf("  loss sum gpu %.9g cpu %.9g; %s gpu %.9g cpu %.9g\n", g[0], cpu[0],
	       metric_name(spec->metrics[0]), g[2], cpu[1]);
	assert_true(fabs(g[0] - cpu[0]) <= 1e-4 * fabs(cpu[0]) + 1e-9);
	assert_true(g[1] == (double)B);
	assert_true(fabs(g[2] - cpu[1]) <= 1e-4 * fabs(cpu[1]) + 1e-9);
}

/* Every layer's output (and its activation's input where kept), the
 * loss, its metric and the logits' gradient, every parameter's gradient,
 * the batch statistics beyond them and the moving statistics after the
 * update, on the CPU and on GPU 0 from the same parameters, state,
 * inputs, targets and stream position; then the outputs and sums of an
 * inference pass. */
static void expect_case_matches(const struct layer_case *c, int B)
{
	struct keras_model km;
	struct loss_spec spec;
	struct cuda_model cm;
	struct rng r;
	const uint64_t pos = 1000;
	const float scale = 1.0f / (float)B;
	struct model *m = build_case(c, &km, B, &spec);
	size_t nx = (size_t)B * m->in_len, ny = (size_t)B * (size_t)spec.T;
	size_t nout = (size_t)B * m->out_len, ng = m->nparams + m->nstats;
	float *x = malloc(nx * sizeof(float)), *y = malloc(ny * sizeof(float));
	double cpu[1 + LOSS_MAX_METRICS] = {0};
	char what[96];

	assert_true(x && y);
	rng_init(&r, 23, 0);
	for (size_t i = 0; i < nx; i++)
		x[i] = rng_uniform(&r, -1.0f, 1.0f);
	draw_targets(y, &spec, B, &r);
	printf("%s at batch %d: %s\n", c->name, B, m->desc);

	cuda_model_init(&cm, m, 0, B);
	float *dx = to_gpu(x, nx), *dy = to_gpu(y, ny);
	assert_int_equal(
	    cudaMemcpy(cm.params, m->params, m->nparams * sizeof(float), cudaMemcpyHostToDevice),
	    cudaSuccess);
	assert_int_equal(
	    cudaMemcpy(cm.state, m->state, m->nstate * sizeof(float), cudaMemcpyHostToDevice),
	    cudaSuccess);
	assert_int_equal(cudaMemcpy(cm.pos, &pos, sizeof(pos), cudaMemcpyHostToDevice),
	                 cudaSuccess);
	assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);

	model_forward(m, x, B, &(struct model_pass){1, pos, NULL});
	loss_batch(m->dlogits, cpu, model_logits(m), model_outputs(m), y, B, &spec, scale);
	model_backward(m, x, B, NULL, NULL);
	cuda_model_forward(&cm, dx, B, 1);
	cuda_model_loss(&cm, &spec, dy, B, scale, 1);
	cuda_model_backward(&cm, dx, B, NULL, NULL);
	assert_int_equal(cudaStreamSynchronize(cm.stream), cudaSuccess);

	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		size_t n = (size_t)B * l->out_len;
		snprintf(what, sizeof(what), "layer %d output", i);
		expect_close_gpu(what, cm.layers[i].out, l->out, n);
		if (l->pre) {
			snprintf(what, sizeof(what), "layer %d activation input", i);
			expect_close_gpu(what, cm.layers[i].pre, l->pre, n);
		}
	}
	expect_sums_close(&cm, cpu, B, &spec);
	expect_close_gpu("the logits' gradient", cm.dlogits, m->dlogits, nout);
	float *g = from_gpu(cm.grads, ng);
	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		snprintf(what, sizeof(what), "layer %d kernel gradient", i);
		if (l->w_len)
			expect_close(what, g + l->w_off, m->grads + l->w_off, l->w_len, 1e-4);
		snprintf(what, sizeof(what), "layer %d bias gradient", i);
		if (l->b_len)
			expect_close(what, g + l->b_off, m->grads + l->b_off, l->b_len, 1e-4);
		snprintf(what, sizeof(what), "layer %d batch statistics", i);
		if (l->kind == LAYER_BATCHNORM)
			expect_close(what, g + m->nparams + l->st_off,
			             m->grads + m->nparams + l->st_off, 2 * (size_t)l->in_c, 1e-4);
	}
	free(g);

	model_update_state(m, 1);
	cuda_model_update_state(&cm, 1);
	assert_int_equal(cudaStreamSynchronize(cm.stream), cudaSuccess);
	if (m->nstate)
		expect_close_gpu("the moving statistics", cm.state, m->state, m->nstate);

	memset(cpu, 0, sizeof(cpu));
	model_forward(m, x, B, NULL);
	loss_batch(NULL, cpu, model_logits(m), model_outputs(m), y, B, &spec, 0.0f);
	cuda_model_forward(&cm, dx, B, 0);
	cuda_model_loss(&cm, &spec, dy, B, 0.0f, 0);
	assert_int_equal(cudaStreamSynchronize(cm.stream), cudaSuccess);
	expect_close_gpu("inference outputs", cuda_model_outputs(&cm), model_outputs(m), nout);
	expect_sums_close(&cm, cpu, B, &spec);

	cudaFree(dx);
	cudaFree(dy);
	cuda_model_release(&cm);
	model_free(m);
	keras_model_release(&km);
	free(x);
	free(y);
}

#define LINEAR_ACT "'activation':'linear'"

/* Same padding and strides, no bias, batch normalisation, an Activation
 * layer, strided max and average pools of other sizes, dropout, a tanh
 * convolution and a softmax read as logits by the sparse cross-entropy. */
static const struct layer_case CONV_CASE = {
    "conv_same_strided",
    "16,16,3",
    {{"Conv2D", "'filters':8,'kernel_size':[3,3],'strides':[2,2],'padding':'same',"
                "'use_bias':false," LINEAR_ACT},
     {"BatchNormalization", "'momentum':0.9,'epsilon':0.001"},
     {"Activation", "'activation':'relu'"},
     {"MaxPooling2D", "'pool_size':[3,3],'strides':[2,2],'padding':'same'"},
     {"Dropout", "'rate':0.3"},
     {"Conv2D", "'filters':6,'kernel_size':[2,2],'strides':[1,2],'padding':'valid',"
                "'activation':'tanh'"},
     {"AveragePooling2D", "'pool_size':[2,2],'strides':[1,1],'padding':'valid'"},
     {"Flatten", ""},
     {"Dense", "'units':10,'activation':'softmax'"}},
    {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0},
    METRIC_ACCURACY,
    -1,
    -1,
};

/* Dense layers on rank-3 inputs (a row per pixel), with gelu in its tanh
 * form, leaky_relu with a negative slope and no bias, a global average
 * pool and a sigmoid read as logits by the binary cross-entropy. */
static const struct layer_case DENSE_CASE = {
    "dense_rank3",
    "6,5,4",
    {{"Dense", "'units':7,'activation':'gelu'"},
     {"Dense", "'units':5,'activation':'leaky_relu','use_bias':false"},
     {"GlobalAveragePooling2D", "'keepdims':false"},
     {"Dense", "'units':3,'activation':'sigmoid'"}},
    {LOSS_BINARY_CROSSENTROPY, 0},
    METRIC_ACCURACY,
    0,
    1,
};

/* Every activation as a layer of its own, after linear dense layers,
 * and a last softmax layer whose input the categorical cross-entropy
 * reads. */
static const struct layer_case ACTIVATIONS_CASE = {
    "activation_layers",
    "20",
    {{"Dense", "'units':16," LINEAR_ACT},
     {"Activation", "'activation':'gelu'"},
     {"Activation", "'activation':'sigmoid'"},
     {"Dense", "'units':8,'activation':'tanh'"},
     {"Activation", "'activation':'leaky_relu'"},
     {"Dense", "'units':12,'activation':'relu'"},
     {"Dense", "'units':4," LINEAR_ACT},
     {"Activation", "'activation':'softmax'"}},
    {LOSS_CATEGORICAL_CROSSENTROPY, 0},
    METRIC_CATEGORICAL_ACCURACY,
    -1,
    4,
};

/* Batch normalisation without beta on dense rows, dropout, and the mean
 * squared error on linear outputs. */
static const struct layer_case MSE_CASE = {
    "regression_mse",
    "10",
    {{"Dense", "'units':12,'activation':'relu'"},
     {"BatchNormalization", "'center':false"},
     {"Dropout", "'rate':0.5"},
     {"Dense", "'units':3," LINEAR_ACT}},
    {LOSS_MEAN_SQUARED_ERROR, 0},
    METRIC_MEAN_ABSOLUTE_ERROR,
    -1,
    -1,
};

/* The seed models' 2x2 pool over an odd edge, masking the ReLU before it,
 * and the mean absolute error on an unbiased dense layer. */
static const struct layer_case MAE_CASE = {
    "regression_mae",
    "6,6,2",
    {{"Conv2D", "'filters':3,'kernel_size':[2,2],'activation':'relu'"},
     {"MaxPooling2D", "'pool_size':[2,2]"},
     {"Flatten", ""},
     {"Dense", "'units':2,'use_bias':false," LINEAR_ACT}},
    {LOSS_MEAN_ABSOLUTE_ERROR, 0},
    METRIC_MEAN_SQUARED_ERROR,
    -1,
    -1,
};

/* The cross-entropies from probabilities: a Flatten after the softmax or
 * sigmoid hides its logits (model.h), and from logits the file says. */
static const struct layer_case SPARSE_PROBS_CASE = {
    "sparse_from_probabilities",
    "8",
    {{"Dense", "'units':5,'activation':'softmax'"}, {"Flatten", ""}},
    {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0},
    METRIC_ACCURACY,
    -1,
    -1,
};

static const struct layer_case CATEGORICAL_PROBS_CASE = {
    "categorical_from_probabilities",
    "8",
    {{"Dense", "'units':5,'activation':'softmax'"}, {"Flatten", ""}},
    {LOSS_CATEGORICAL_CROSSENTROPY, 0},
    METRIC_ACCURACY,
    -1,
    -1,
};

static const struct layer_case BINARY_PROBS_CASE = {
    "binary_from_probabilities",
    "8",
    {{"Dense", "'units':1,'activation':'sigmoid'"}, {"Flatten", ""}},
    {LOSS_BINARY_CROSSENTROPY, 0},
    METRIC_ACCURACY,
    -1,
    -1,
};

static const struct layer_case CATEGORICAL_LOGITS_CASE = {
    "categorical_from_logits",
    "8",
    {{"Dense", "'units':6," LINEAR_ACT}},
    {LOSS_CATEGORICAL_CROSSENTROPY, 1},
    METRIC_ACCURACY,
    -1,
    -1,
};

static void test_strided_same_convolutions_pools_batch_norm_and_dropout_match_the_cpu(void **state)
{
	(void)state;
	NEED_GPUS(1);
	expect_case_matches(&CONV_CASE, 16);
	expect_case_matches(&CONV_CASE, 5);
}

static void test_dense_layers_on_pixels_and_global_pooling_match_the_cpu(void **state)
{
	(void)state;
	NEED_GPUS(1);
	expect_case_matches(&DENSE_CASE, 16);
}

static void test_every_activation_as_a_layer_matches_the_cpu(void **state)
{
	(void)state;
	NEED_GPUS(1);
	expect_case_matches(&ACTIVATIONS_CASE, 16);
}

static void test_every_loss_and_metric_matches_the_cpu(void **state)
{
	const struct layer_case *cases[] = {&MSE_CASE,          &MAE_CASE,
	                                    &SPARSE_PROBS_CASE, &CATEGORICAL_PROBS_CASE,
	                                    &BINARY_PROBS_CASE, &CATEGORICAL_LOGITS_CASE};

	(void)state;
	NEED_GPUS(1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_case_matches(cases[i], 16);
}

/* Everywhere: synchronized batch normalisation over more than one replica
 * is refused, naming the layer and the CPU; over one it is a layer like
 * any other, and every other layer kind is taken. */
static void test_the_cuda_backend_refuses_only_synchronized_batch_norm_across_replicas(void **state)
{
	static const struct k3 synced[K3_MAX_LAYERS] = {
	    {"Dense", "'units':4," LINEAR_ACT},
	    {"BatchNormalization", "'synchronized':true"},
	    {"Dense", "'units':3," LINEAR_ACT}};
	const struct layer_case *cases[] = {&CONV_CASE,
	                                    &DENSE_CASE,
	                                    &ACTIVATIONS_CASE,
	                                    &MSE_CASE,
	                                    &MAE_CASE,
	                                    &SPARSE_PROBS_CASE,
	                                    &CATEGORICAL_PROBS_CASE,
	                                    &BINARY_PROBS_CASE,
	                                    &CATEGORICAL_LOGITS_CASE};
	struct keras_model km;
	struct loss_spec spec;
	char err[ERR_LEN];
	struct model *m;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		m = build_case(cases[i], &km, 4, &spec);
		printf("%s: %s\n", cases[i]->name, m->desc);
		assert_int_equal(backend_cuda_supports(m, &km, &spec, 1, 1, err), 0);
		assert_int_equal(backend_cuda_supports(m, &km, &spec, 4, 3, err), 0);
		model_free(m);
		keras_model_release(&km);
	}

	k3_parse(&km, "synced", "6", synced);
	m = model_new(&km, 4, 0, err);
	assert_non_null(m);
	assert_int_equal(backend_cuda_supports(m, &km, &spec, 1, 1, err), 0);
	assert_int_equal(backend_cuda_supports(m, &km, &spec, 2, 1, err), -1);
	printf("%s\n", err);
	testutil_assert_contains(err, "layer 'layer_1' (BatchNormalization)");
	testutil_assert_contains(err, "synchronized: true");
	testutil_assert_contains(err, "--device cpu");
	assert_int_equal(backend_cuda_supports(m, &km, &spec, 1, 2, err), -1);
	model_free(m);
	keras_model_release(&km);
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

/* --- A Keras file of every kind of layer, trained end to end --- */

/* A version 1.0 .npy of float32 of shape (the tuple's text) at path, as
 * np.save writes it. */
static void write_npy_f32(const char *path, const char *shape, const float *v, size_t n)
{
	char dict[160];
	int len = snprintf(dict, sizeof(dict),
	                   "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape);
	size_t hlen = (size_t)len + 1, total;

	assert_true(len > 0 && (size_t)len < sizeof(dict));
	hlen += (64 - (10 + hlen) % 64) % 64;
	total = 10 + hlen + n * sizeof(float);
	unsigned char *b = malloc(total);
	assert_non_null(b);
	memcpy(b, "\x93NUMPY", 6);
	b[6] = 1, b[7] = 0; /* version 1.0 */
	b[8] = (unsigned char)(hlen & 0xff);
	b[9] = (unsigned char)(hlen >> 8);
	memset(b + 10, ' ', hlen);
	memcpy(b + 10, dict, (size_t)len);
	b[10 + hlen - 1] = '\n';
	memcpy(b + 10 + hlen, v, n * sizeof(float));
	testutil_write_file(path, b, total);
	free(b);
}

#define QUAD_SIDE    12
#define QUAD_CLASSES 4

/* n images of QUAD_SIDE^2 pixels, noise with a bright 4x4 square in the
 * quadrant of the class, and one-hot targets: x_<split>.npy and
 * y_<split>.npy in dir. */
static void write_quadrants(const char *dir, const char *split, int n, uint64_t seed)
{
	const int S = QUAD_SIDE, K = QUAD_CLASSES;
	float *x = malloc(sizeof(float) * (size_t)n * S * S), *y = calloc((size_t)n * K, 4);
	char path[TESTUTIL_TMPDIR_LEN + 32], shape[64];
	struct rng r;

	assert_true(x && y);
	rng_init(&r, seed, 0);
	for (int i = 0; i < n; i++) {
		int k = (int)(rng_next(&r) % K), top = (k / 2) * 6 + 1, left = (k % 2) * 6 + 1;
		for (int p = 0; p < S * S; p++) {
			int row = p / S, col = p % S;
			int in = row >= top && row < top + 4 && col >= left && col < left + 4;
			x[(size_t)i * S * S + p] =
			    rng_uniform(&r, -0.5f, 0.5f) + (in ? 1.5f : 0.0f);
		}
		y[(size_t)i * K + k] = 1.0f;
	}
	snprintf(path, sizeof(path), "%s/x_%s.npy", dir, split);
	snprintf(shape, sizeof(shape), "(%d, %d, %d, 1)", n, S, S);
	write_npy_f32(path, shape, x, (size_t)n * S * S);
	snprintf(path, sizeof(path), "%s/y_%s.npy", dir, split);
	snprintf(shape, sizeof(shape), "(%d, %d)", n, K);
	write_npy_f32(path, shape, y, (size_t)n * K);
	free(x);
	free(y);
}

/* Same padding with and without strides, no bias, batch normalisation,
 * an Activation layer, max pooling, dropout, a global average pool and a
 * softmax, for the quadrants. */
static const struct k3 QUAD_LAYERS[K3_MAX_LAYERS] = {
    {"Conv2D", "'filters':8,'kernel_size':[3,3],'padding':'same','use_bias':false," LINEAR_ACT},
    {"BatchNormalization", "'momentum':0.9"},
    {"Activation", "'activation':'relu'"},
    {"MaxPooling2D", "'pool_size':[2,2]"},
    {"Dropout", "'rate':0.25"},
    {"Conv2D", "'filters':8,'kernel_size':[3,3],'strides':[2,2],'padding':'same',"
               "'activation':'relu'"},
    {"GlobalAveragePooling2D", ""},
    {"Dense", "'units':4,'activation':'softmax'"},
};

/* A run of the quadrants model on device: categorical cross-entropy on
 * the softmax's probabilities (from_logits false, so read as logits),
 * accuracy, and opt, the model saved to <tmp>/<dir>. */
static struct train_result fit_quadrants(const struct tmp *t, const char *device,
                                         const struct keras_model *km, enum optimizer_kind opt,
                                         double lr, int epochs, long steps, const char *dir)
{
	struct train_config c;

	config(&c, device, "cnn", epochs, steps);
	c.km = km;
	snprintf(c.model, sizeof(c.model), "quadrants");
	c.loss = (struct loss_config){LOSS_CATEGORICAL_CROSSENTROPY, 0};
	c.nmetrics = 1;
	c.metrics[0] = METRIC_ACCURACY;
	optimizer_config_defaults(&c.opt, opt);
	c.opt.learning_rate = lr;
	c.learning_rate = lr;
	c.optimizer = opt;
	c.validation_steps = VALIDATION_ALL;
	c.data_dir[0] = '\0';
	snprintf(c.data, sizeof(c.data), "%s/data", t->dir);
	snprintf(c.model_dir, sizeof(c.model_dir), "%s/%s", t->dir, dir);
	return fit(&c);
}

/* The largest differences between the parameters, and between the moving
 * statistics, of the models saved in <tmp>/a and <tmp>/b, each of the
 * largest magnitude in a. */
static void saved_differences(const struct tmp *t, const char *a, const char *b, double d[2],
                              double scale[2])
{
	char pa[TESTUTIL_TMPDIR_LEN + 32], pb[TESTUTIL_TMPDIR_LEN + 32], err[ERR_LEN];
	struct model_file fa, fb;

	snprintf(pa, sizeof(pa), "%s/%s", t->dir, a);
	snprintf(pb, sizeof(pb), "%s/%s", t->dir, b);
	if (model_file_load(pa, 1, &fa, err) < 0 || model_file_load(pb, 1, &fb, err) < 0)
		fail_with(err);
	assert_int_equal(fa.model->nparams, fb.model->nparams);
	assert_int_equal(fa.model->nstate, fb.model->nstate);
	compare(fb.model->params, fa.model->params, fa.model->nparams, &d[0], &scale[0]);
	compare(fb.model->state, fa.model->state, fa.model->nstate, &d[1], &scale[1]);
	model_file_release(&fa);
	model_file_release(&fb);
}

/* The quadrants on NumPy data, on the GPU and on the CPU from the same
 * seed: after one SGD step the same parameters and moving statistics to
 * float rounding (the step's forward pass, dropout's masks, the batch
 * statistics, the loss's gradient and the update all agree), and after
 * three epochs of Adam the same accuracy within 3 points; the GPU's
 * validation reads the moving statistics it trained. */
static void
test_a_batch_norm_dropout_model_on_numpy_data_trains_on_the_gpu_as_on_the_cpu(void **state)
{
	struct tmp *t = *state;
	char dir[TESTUTIL_TMPDIR_LEN + 16];
	struct keras_model km;
	double d[2], scale[2];

	NEED_GPUS(1);
	snprintf(dir, sizeof(dir), "%s/data", t->dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	write_quadrants(dir, "train", 1536, 1);
	write_quadrants(dir, "test", 512, 2);
	k3_parse(&km, "quadrants", "12,12,1", QUAD_LAYERS);

	struct train_result cpu = fit_quadrants(t, "cpu", &km, OPT_SGD, 0.1, 1, 1, "cpu1");
	struct train_result gpu = fit_quadrants(t, "cuda", &km, OPT_SGD, 0.1, 1, 1, "gpu1");
	saved_differences(t, "cpu1", "gpu1", d, scale);
	printf("one SGD step: loss cpu %.7f gpu %.7f; parameters differ by %.3g of %.3g, moving "
	       "statistics by %.3g of %.3g\n",
	       metrics_loss(&cpu.train), metrics_loss(&gpu.train), d[0], scale[0], d[1], scale[1]);
	assert_true(fabs(metrics_loss(&gpu.train) - metrics_loss(&cpu.train)) <=
	            1e-5 * metrics_loss(&cpu.train));
	assert_true(d[0] <= 1e-4 * scale[0]);
	assert_true(d[1] <= 1e-4 * scale[1]);
	assert_true(fabs(metrics_loss(&gpu.val) - metrics_loss(&cpu.val)) <=
	            1e-4 * metrics_loss(&cpu.val));

	cpu = fit_quadrants(t, "cpu", &km, OPT_ADAM, 0.01, 3, 0, "cpu3");
	gpu = fit_quadrants(t, "cuda", &km, OPT_ADAM, 0.01, 3, 0, "gpu3");
	saved_differences(t, "cpu3", "gpu3", d, scale);
	printf("3 epochs of Adam: loss cpu %.4f gpu %.4f; validation accuracy cpu %.4f gpu %.4f; "
	       "parameters differ by %.3g of %.3g\n",
	       metrics_loss(&cpu.train), metrics_loss(&gpu.train), metrics_mean(&cpu.val, 0),
	       metrics_mean(&gpu.val, 0), d[0], scale[0]);
	assert_true(gpu.global_step == 3 * 1536 / 64 && gpu.val.count == 512);
	assert_true(metrics_mean(&cpu.val, 0) > 0.9 && metrics_mean(&gpu.val, 0) > 0.9);
	assert_true(fabs(metrics_mean(&gpu.val, 0) - metrics_mean(&cpu.val, 0)) <= 0.03);
	keras_model_release(&km);
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
	    cmocka_unit_test(
	        test_strided_same_convolutions_pools_batch_norm_and_dropout_match_the_cpu),
	    cmocka_unit_test(test_dense_layers_on_pixels_and_global_pooling_match_the_cpu),
	    cmocka_unit_test(test_every_activation_as_a_layer_matches_the_cpu),
	    cmocka_unit_test(test_every_loss_and_metric_matches_the_cpu),
	    cmocka_unit_test(
	        test_the_cuda_backend_refuses_only_synchronized_batch_norm_across_replicas),
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
	    cmocka_unit_test_setup_teardown(
	        test_a_batch_norm_dropout_model_on_numpy_data_trains_on_the_gpu_as_on_the_cpu,
	        setup_tmp, testutil_fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_device_cuda_without_a_gpu_exits_1_saying_why,
	                                    setup_tmp, testutil_fixture_teardown),
	};

	log_set_level(LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
