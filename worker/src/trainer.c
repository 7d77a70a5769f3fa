/* trainer.c - the training loop: data stream, step, metrics, model output. */
#include "trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "loss.h"
#include "model_file.h"
#include "parallel.h"
#include "progress.h"

/* The training stream (see dataset.h): the permutation of the current pass
 * and which pass it is. */
struct stream {
	const struct dataset *ds;
	uint64_t seed;
	uint32_t *order; /* (ds->n) */
	uint64_t pass;
	int have_pass;
};

/* Gathers count examples starting at stream position pos (examples since the
 * start of training), crossing into the next pass where needed. */
static void stream_gather(struct stream *s, float *x, uint8_t *y, uint64_t pos, uint32_t count)
{
	uint32_t n = s->ds->n, pixels = s->ds->rows * s->ds->cols;

	while (count > 0) {
		uint64_t pass = pos / n;
		uint32_t off = (uint32_t)(pos % n);
		uint32_t take = n - off < count ? n - off : count;
		if (!s->have_pass || s->pass != pass) {
			dataset_shuffle(s->order, n, s->seed, pass);
			s->pass = pass;
			s->have_pass = 1;
		}
		dataset_gather(x, y, s->ds, s->order, off, take);
		x += (size_t)take * pixels;
		y += take;
		pos += take;
		count -= take;
	}
}

long trainer_eval_steps(const struct dataset *ds, int batch, long steps)
{
	long all = ((long)ds->n + batch - 1) / batch;

	return steps == VALIDATION_ALL || steps > all ? all : steps;
}

struct metrics trainer_evaluate(struct model *m, const struct dataset *ds, int batch, long steps,
                                float *x, uint8_t *y)
{
	struct metrics sums = {0};
	long n = trainer_eval_steps(ds, batch, steps);

	for (long i = 0; i < n; i++) {
		uint32_t first = (uint32_t)(i * batch);
		uint32_t count = ds->n - first < (uint32_t)batch ? ds->n - first : (uint32_t)batch;
		dataset_gather(x, y, ds, NULL, first, count);
		model_forward(m, x, (int)count);
		struct loss_sums l =
		    loss_softmax_xent(NULL, model_logits(m), y, (int)count, m->classes, 0.0f);
		sums.loss_sum += l.loss;
		sums.correct += (double)l.correct;
		sums.count += count;
	}
	return sums;
}

/* Everything one run holds, released in one place. */
struct run {
	struct dataset train, test;
	struct model *model;
	struct optimizer opt;
	struct stream stream;
	float *x;   /* (batch, rows, cols, 1) */
	uint8_t *y; /* (batch) */
};

static void run_release(struct run *r)
{
	dataset_release(&r->train);
	dataset_release(&r->test);
	model_free(r->model);
	optimizer_release(&r->opt);
	free(r->stream.order);
	free(r->x);
	free(r->y);
}

static int run_setup(struct run *r, const struct train_config *cfg, char *err)
{
	if (dataset_load(&r->train, cfg->data_dir, "train", err) < 0)
		return -1;
	if (cfg->validation_steps != 0 && dataset_load(&r->test, cfg->data_dir, "t10k", err) < 0)
		return -1;
	if (r->test.n && (r->test.rows != r->train.rows || r->test.cols != r->train.cols))
		return err_set(err, "'%s' holds %ux%u images but '%s' holds %ux%u",
		               r->test.images_path, r->test.rows, r->test.cols,
		               r->train.images_path, r->train.rows, r->train.cols);
	log_info("loaded %u training examples of %ux%u from '%s'", r->train.n, r->train.rows,
	         r->train.cols, cfg->data_dir);
	r->model = model_new(cfg->model, (int)r->train.rows, (int)r->train.cols, 1, DATASET_CLASSES,
	                     cfg->batch_size, err);
	if (!r->model)
		return -1;
	model_init_params(r->model, cfg->seed);
	optimizer_init(&r->opt, cfg->optimizer, (float)cfg->learning_rate, (float)cfg->momentum,
	               r->model->nparams);
	r->stream.ds = &r->train;
	r->stream.seed = cfg->seed;
	r->stream.order = xcalloc(r->train.n, sizeof(uint32_t));
	r->x = xcalloc((size_t)cfg->batch_size * r->train.rows * r->train.cols, sizeof(float));
	r->y = xcalloc((size_t)cfg->batch_size, 1);
	log_info("model %s: %s; %zu parameters", r->model->name, r->model->desc, r->model->nparams);
	return 0;
}

/* Called by the backward pass as each layer's gradients are final. */
static void update_layer(void *ctx, const struct grad_slice *s)
{
	struct run *r = ctx;

	optimizer_apply_slice(&r->opt, r->model->params, r->model->grads, s);
}

/* One step: forward, loss, backward with each layer updated as soon as its
 * gradients are final. Adds the batch to sums. */
static int train_step(struct run *r, int batch, uint64_t global_step, struct metrics *sums,
                      char *err)
{
	struct model *m = r->model;

	stream_gather(&r->stream, r->x, r->y, global_step * (uint64_t)batch, (uint32_t)batch);
	model_forward(m, r->x, batch);
	struct loss_sums l =
	    loss_softmax_xent(m->dlogits, model_logits(m), r->y, batch, m->classes, 1.0f / batch);
	if (!isfinite(l.loss))
		return err_set(err, "loss is %f at step %llu; lower --learning-rate", l.loss,
		               (unsigned long long)global_step + 1);
	optimizer_begin_step(&r->opt);
	model_backward(m, r->x, batch, update_layer, r);
	sums->loss_sum += l.loss;
	sums->correct += (double)l.correct;
	sums->count += batch;
	return 0;
}

int trainer_fit(const struct train_config *cfg, FILE *out, struct train_result *result, char *err)
{
	struct run r = {0};
	struct progress p;
	uint64_t global_step = 0;
	int rc = -1;

	if (parallel_init(cfg->threads, err) < 0)
		goto out;
	if (run_setup(&r, cfg, err) < 0)
		goto out;
	if (!cfg->model_dir[0])
		log_warn("no --model-dir (or MWJ_MODEL_DIR): the trained model will not be saved");
	/* One pass by default: the batches evaluation would take over the set. */
	long steps = cfg->steps_per_epoch
	                 ? cfg->steps_per_epoch
	                 : trainer_eval_steps(&r.train, cfg->batch_size, VALIDATION_ALL);
	progress_init(&p, out, cfg->json, cfg->log_every, cfg->batch_size);
	for (int epoch = 1; epoch <= cfg->epochs; epoch++) {
		struct metrics sums = {0}, val = {0};
		progress_epoch_begin(&p, epoch, cfg->epochs, steps);
		double t0 = progress_now();
		for (long step = 1; step <= steps; step++) {
			if (train_step(&r, cfg->batch_size, global_step, &sums, err) < 0)
				goto out;
			global_step++;
			progress_step(&p, step, (long)global_step, &sums);
		}
		double seconds = progress_now() - t0;
		if (cfg->validation_steps != 0)
			val = trainer_evaluate(r.model, &r.test, cfg->batch_size,
			                       cfg->validation_steps, r.x, r.y);
		progress_epoch_end(&p, (long)global_step, &sums,
		                   cfg->validation_steps != 0 ? &val : NULL);
		if (result)
			*result = (struct train_result){sums, val, (long)global_step, seconds};
	}
	if (cfg->model_dir[0]) {
		struct model_file_info info = {optimizer_name(cfg->optimizer),
		                               cfg->learning_rate,
		                               cfg->batch_size,
		                               1,
		                               cfg->epochs,
		                               (long)global_step,
		                               cfg->seed};
		if (model_file_save(cfg->model_dir, r.model, &info, err) < 0)
			goto out;
		log_info("model saved to '%s/%s'", cfg->model_dir, MODEL_FILE_NAME);
	}
	rc = 0;
out:
	run_release(&r);
	parallel_shutdown();
	return rc;
}
