/* trainer.c - the training loop: data stream, step, metrics, model output. */
#include "trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm_ring.h"
#include "digest.h"
#include "err.h"
#include "log.h"
#include "loss.h"
#include "model_file.h"
#include "parallel.h"
#include "progress.h"
#include "reducer.h"

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

long trainer_eval_steps(const struct dataset *ds, long global_batch, long steps)
{
	long all = ((long)ds->n + global_batch - 1) / global_batch;

	return steps == VALIDATION_ALL || steps > all ? all : steps;
}

struct metrics trainer_evaluate(struct model *m, const struct dataset *ds, int batch, long steps,
                                int rank, int world, float *x, uint8_t *y)
{
	struct metrics sums = {0};
	long n = trainer_eval_steps(ds, (long)batch * world, steps);

	for (long i = 0; i < n; i++) {
		uint64_t first = ((uint64_t)i * (uint64_t)world + (uint64_t)rank) * (uint64_t)batch;
		if (first >= ds->n)
			break; /* the last global batch is short: nothing left for this rank */
		uint32_t count =
		    ds->n - first < (uint64_t)batch ? (uint32_t)(ds->n - first) : (uint32_t)batch;
		dataset_gather(x, y, ds, NULL, (uint32_t)first, count);
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
	struct comm comm;
	struct reducer *reducer;
	float *x;   /* (batch, rows, cols, 1) */
	uint8_t *y; /* (batch) */
};

static void run_release(struct run *r)
{
	reducer_free(r->reducer);
	comm_release(&r->comm);
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

/* Applies the optimizer to a slice whose gradients are final. */
static void update_slice(void *ctx, const struct grad_slice *s)
{
	struct run *r = ctx;

	optimizer_apply_slice(&r->opt, r->model->params, r->model->grads, s);
}

/* Joins the other workers, if any, and starts from the chief's weights, as
 * MultiWorkerMirroredStrategy does. */
static int run_connect(struct run *r, const struct train_config *cfg, char *err)
{
	const struct tf_config *tc = cfg->cluster;

	if (!tc || tc->world == 1) {
		comm_init_local(&r->comm);
	} else {
		struct hello me = {
		    RENDEZVOUS_PROTOCOL,       (uint32_t)tc->world,
		    (uint32_t)tc->rank,        rendezvous_job_hash(cfg->job_name, tc),
		    r->model->arch_hash,       cfg->seed,
		    (uint32_t)cfg->batch_size, (uint32_t)cfg->optimizer,
		    (uint32_t)cfg->epochs,     (uint64_t)cfg->steps_per_epoch,
		    cfg->learning_rate,        cfg->momentum};
		int rc = comm_init_ring(&r->comm, tc, &me, cfg->rendezvous_timeout * 1000,
		                        cfg->collective_timeout * 1000, err);
		if (rc < 0)
			return rc == RENDEZVOUS_REFUSED ? -1 : TRAIN_RETRYABLE;
		if (comm_broadcast(&r->comm, r->model->params, r->model->nparams * sizeof(float), 0,
		                   err) < 0)
			return TRAIN_RETRYABLE;
	}
	r->reducer = reducer_new(&r->comm, r->model, 0, update_slice, r);
	if (r->comm.world > 1)
		log_info("training as rank %d of %d over the %s communicator: gradients in %d "
		         "buckets, global batch %ld",
		         r->comm.rank, r->comm.world, comm_name(&r->comm),
		         reducer_buckets(r->reducer), (long)cfg->batch_size * r->comm.world);
	return 0;
}

/* One step: this worker's share of global batch global_step, forward,
 * loss, the backward pass with each bucket of gradients summed across
 * workers while the rest of the pass runs, and the update. Adds the global
 * batch's metrics to sums. */
static int train_step(struct run *r, int batch, uint64_t global_step, struct metrics *sums,
                      char *err)
{
	struct model *m = r->model;
	uint64_t world = (uint64_t)r->comm.world;
	uint64_t pos = (global_step * world + (uint64_t)r->comm.rank) * (uint64_t)batch;

	stream_gather(&r->stream, r->x, r->y, pos, (uint32_t)batch);
	model_forward(m, r->x, batch);
	/* The loss is the mean over the global batch: summing the workers'
	 * gradients of scale * their losses gives its gradient. */
	struct loss_sums l = loss_softmax_xent(m->dlogits, model_logits(m), r->y, batch, m->classes,
	                                       1.0f / (float)((uint64_t)batch * world));
	double step[3] = {l.loss, (double)l.correct, batch};
	/* Alone, each layer is updated inside the backward pass while it is in
	 * cache; with others, once the summed gradients are all in (reducer.h). */
	int alone = r->comm.world == 1;
	if (alone)
		optimizer_begin_step(&r->opt);
	reducer_begin(r->reducer, step, 3);
	model_backward(m, r->x, batch, reducer_grad_ready, r->reducer);
	if (reducer_finish(r->reducer, err) < 0)
		return TRAIN_RETRYABLE;
	if (!alone)
		optimizer_step(&r->opt, m->params, m->grads);
	/* Summed across workers, so every worker stops at the same step. */
	if (!isfinite(step[0]))
		return err_set(err, "loss is %f at step %llu; lower --learning-rate", step[0],
		               (unsigned long long)global_step + 1);
	sums->loss_sum += step[0];
	sums->correct += step[1];
	sums->count += step[2];
	return 0;
}

static int validate(struct run *r, const struct train_config *cfg, struct metrics *val, char *err)
{
	struct metrics v =
	    trainer_evaluate(r->model, &r->test, cfg->batch_size, cfg->validation_steps,
	                     r->comm.rank, r->comm.world, r->x, r->y);
	double sums[3] = {v.loss_sum, v.correct, v.count};

	if (comm_allreduce_f64(&r->comm, sums, 3, err) < 0)
		return TRAIN_RETRYABLE;
	*val = (struct metrics){sums[0], sums[1], sums[2]};
	return 0;
}

/* Logs the fingerprint of the final weights and checks that this worker's
 * match the chief's: they must, bit for bit. */
static int check_weights(struct run *r, char *err)
{
	char mine[DIGEST_HEX_LEN], chief[DIGEST_HEX_LEN];

	digest_sha256_hex(r->model->params, r->model->nparams * sizeof(float), mine);
	memcpy(chief, mine, sizeof(chief));
	if (comm_broadcast(&r->comm, chief, sizeof(chief), 0, err) < 0)
		return TRAIN_RETRYABLE;
	log_info("final weights sha256 %s", mine);
	if (memcmp(mine, chief, sizeof(chief)) != 0)
		return err_set(err, "final weights differ from the chief's: sha256 %s, chief %s",
		               mine, chief);
	return 0;
}

static int save_model(struct run *r, const struct train_config *cfg, long global_step, char *err)
{
	struct model_file_info info = {optimizer_name(cfg->optimizer),
	                               cfg->learning_rate,
	                               cfg->batch_size,
	                               r->comm.world,
	                               cfg->epochs,
	                               global_step,
	                               cfg->seed};

	if (model_file_save(cfg->model_dir, r->model, &info, err) < 0)
		return -1;
	log_info("model saved to '%s/%s'", cfg->model_dir, MODEL_FILE_NAME);
	return 0;
}

int trainer_fit(const struct train_config *cfg, FILE *out, struct train_result *result, char *err)
{
	struct run r = {0};
	struct progress p;
	uint64_t global_step = 0;
	int rc = -1, chief;

	if (parallel_init(cfg->threads, err) < 0)
		goto out;
	if (run_setup(&r, cfg, err) < 0)
		goto out;
	rc = run_connect(&r, cfg, err);
	if (rc < 0)
		goto out;
	chief = r.comm.rank == 0;
	if (chief && !cfg->model_dir[0])
		log_warn("no --model-dir (or MWJ_MODEL_DIR): the trained model will not be saved");
	long global_batch = (long)cfg->batch_size * r.comm.world;
	/* One pass by default: the global batches evaluation would take over the set. */
	long steps = cfg->steps_per_epoch
	                 ? cfg->steps_per_epoch
	                 : trainer_eval_steps(&r.train, global_batch, VALIDATION_ALL);
	progress_init(&p, out, cfg->json, cfg->log_every, global_batch);
	if (!chief)
		p.mode = PROGRESS_QUIET;
	for (int epoch = 1; epoch <= cfg->epochs; epoch++) {
		struct metrics sums = {0}, val = {0};
		progress_epoch_begin(&p, epoch, cfg->epochs, steps);
		double t0 = progress_now();
		for (long step = 1; step <= steps; step++) {
			rc = train_step(&r, cfg->batch_size, global_step, &sums, err);
			if (rc < 0)
				goto out;
			global_step++;
			progress_step(&p, step, (long)global_step, &sums);
		}
		double seconds = progress_now() - t0;
		if (cfg->validation_steps != 0) {
			rc = validate(&r, cfg, &val, err);
			if (rc < 0)
				goto out;
		}
		progress_epoch_end(&p, (long)global_step, &sums,
		                   cfg->validation_steps != 0 ? &val : NULL);
		if (result)
			*result = (struct train_result){sums, val, (long)global_step, seconds};
	}
	rc = check_weights(&r, err);
	if (rc < 0)
		goto out;
	rc = -1;
	if (chief && cfg->model_dir[0] && save_model(&r, cfg, (long)global_step, err) < 0)
		goto out;
	rc = 0;
out:
	run_release(&r);
	parallel_shutdown();
	return rc;
}
