/* trainer.c - the training loop: step, metrics, backups,
 * resynchronizing after a lost peer, model output. */
#include "trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomic_file.h"
#include "backend.h"
#include "backup.h"
#include "comm_nccl.h"
#include "comm_ring.h"
#include "digest.h"
#include "err.h"
#include "gpu.h"
#include "log.h"
#include "loss.h"
#include "model_file.h"
#include "net.h"
#include "parallel.h"
#include "preempt.h"
#include "progress.h"
#include "state_sync.h"
#include "status_report.h"
#include "worker_metrics.h"

_Static_assert(WORKER_METRICS_MAX >= METRICS_MAX, "worker_metrics keeps every compiled metric");

long trainer_eval_steps(const struct dataset *ds, long global_batch, long steps)
{
	long all = ((long)ds->n + global_batch - 1) / global_batch;

	return steps == VALIDATION_ALL || steps > all ? all : steps;
}

struct metrics trainer_evaluate(struct backend *b, const struct dataset *ds, int batch, long steps,
                                int rank, int world, float *x, float *y)
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
		backend_evaluate(b, x, y, (int)count, &sums);
	}
	return sums;
}

/* Returned inside this file when a collective failed: the ring is broken,
 * and the survivors form it again (resync). */
#define TRAIN_LOST (-4)

/* Everything one run holds, released in one place. */
struct run {
	struct dataset train, test;
	struct model *model;
	struct loss_spec loss;
	struct optimizer opt;
	struct dataset_stream stream;
	struct comm comm;
	struct backend *backend; /* for the group as formed now: NULL between */
	enum device_kind device;
	enum collective_kind collective;
	int replicas;                /* GPUs used, 0 on the CPU */
	struct backup *backup;       /* the chief's, with a backup directory */
	struct train_position pos;   /* where training stands */
	struct train_position saved; /* of the last backup started */
	int have_saved;
	/* A position was taken up (adopt_position). Before, the state is the
	 * one read from a backup or the initial one: nothing to back up, and
	 * pos does not yet say which world and batch it is for. */
	int adopted;
	const struct train_config *cfg;
	int max_batch;  /* examples per step the host model is built for */
	long steps;     /* per epoch */
	double lost_at; /* when the last resync began, until a step is done after it */
	/* The recovery under way since the last step done: it has
	 * --rendezvous-timeout in all, however often the ring forms and breaks
	 * again before a step (deadline 0: none under way), and meets again
	 * after a back-off that grows across it. */
	long long recovery_deadline;
	long long backoff;
	int meetings; /* rings formed and synced in it */
	float *x;     /* (batch, in_len) */
	float *y;     /* (batch, T) */
};

static void run_release(struct run *r)
{
	backup_free(r->backup);
	backend_free(r->backend);
	comm_release(&r->comm);
	dataset_release(&r->train);
	dataset_release(&r->test);
	model_free(r->model);
	optimizer_release(&r->opt);
	dataset_stream_release(&r->stream);
	free(r->x);
	free(r->y);
}

/* An IDX split's images fit the model before they are read: their header
 * says whether. ctx is the run. */
static int model_fits(const void *ctx, uint32_t rows, uint32_t cols, char *err)
{
	const struct run *r = ctx;
	struct dataset shape = {.x_rank = 2, .x_shape = {rows, cols}, .images_path = "the images"};

	return dataset_check_shape(&shape, r->cfg->km->in_rank, r->cfg->km->in_shape, err);
}

/* The training split and, when validation runs, the test split: NumPy
 * arrays (--data) or IDX files (--data-dir). */
static int load_data(struct run *r, const struct train_config *cfg, char *err)
{
	const struct dataset_want train = {0, 0, model_fits, r};
	int has_test = 0;

	if (cfg->data[0]) {
		if (dataset_load_numpy(&r->train, &r->test, &has_test, cfg->data, err) < 0)
			return -1;
		if (cfg->validation_steps != 0 && !has_test)
			return err_set(err, "--validation-steps: '%s' holds no x_test and y_test",
			               cfg->data);
	} else {
		if (dataset_load(&r->train, cfg->data_dir, "train", &train, err) < 0)
			return -1;
		/* Validation runs the model built for the training images. */
		const struct dataset_want test = {r->train.rows, r->train.cols, NULL, NULL};
		if (cfg->validation_steps != 0 &&
		    dataset_load(&r->test, cfg->data_dir, "t10k", &test, err) < 0)
			return -1;
	}
	dataset_set_rescale(&r->train, cfg->rescale);
	dataset_set_rescale(&r->test, cfg->rescale);
	if (dataset_check_shape(&r->train, cfg->km->in_rank, cfg->km->in_shape, err) < 0 ||
	    (cfg->validation_steps != 0 &&
	     dataset_check_shape(&r->test, cfg->km->in_rank, cfg->km->in_shape, err) < 0))
		return -1;
	log_info("loaded %u training examples from %s", r->train.n,
	         cfg->data[0] ? cfg->data : cfg->data_dir);
	return 0;
}

/* The loss for the model's outputs and the data's targets, every target
 * checked before the first step. */
static int resolve_loss(struct run *r, const struct train_config *cfg, char *err)
{
	int spec_logits, output_logits;

	model_loss_reads(cfg->km, &cfg->loss, &spec_logits, &output_logits);
	if (loss_resolve(&r->loss, &cfg->loss, spec_logits, (int)r->model->out_len,
	                 (int)r->train.y_len, cfg->metrics, cfg->nmetrics, err) < 0)
		return err_prefix(err, "%s", r->train.labels_path);
	if (dataset_check_values(&r->train, &r->loss, err) < 0 ||
	    (cfg->validation_steps != 0 && dataset_check_values(&r->test, &r->loss, err) < 0))
		return -1;
	return 0;
}

static int run_setup(struct run *r, const struct train_config *cfg, char *err)
{
	struct loss_config lc = cfg->loss;
	int spec_logits, output_logits;

	/* On a GPU the host copy holds the state only, and no activations. */
	r->cfg = cfg;
	r->max_batch = r->device == DEVICE_CUDA ? 1 : cfg->batch_size;
	if (load_data(r, cfg, err) < 0)
		return -1;
	model_loss_reads(cfg->km, &lc, &spec_logits, &output_logits);
	r->model = model_new(cfg->km, r->max_batch, output_logits, err);
	if (!r->model || resolve_loss(r, cfg, err) < 0)
		return -1;
	if (r->device == DEVICE_CUDA &&
	    backend_cuda_supports(r->model, cfg->km, &r->loss, r->replicas,
	                          cfg->cluster ? cfg->cluster->world : 1, err) < 0) {
		if (cfg->device != DEVICE_AUTO)
			return err_prefix(err, "--device cuda");
		/* --device auto: the CPU trains what the GPU does not yet. */
		log_info("device: cpu (%s)", err);
		r->device = DEVICE_CPU;
		r->collective = COLLECTIVE_RING;
		r->replicas = 0;
		r->max_batch = cfg->batch_size;
		model_free(r->model);
		r->model = model_new(cfg->km, r->max_batch, output_logits, err);
		if (!r->model)
			return -1;
	}
	model_init_params(r->model, cfg->km, cfg->seed);
	optimizer_init_config(&r->opt, &cfg->opt, r->model->nparams);
	dataset_stream_init(&r->stream, &r->train, cfg->seed);
	r->x = xcalloc((size_t)cfg->batch_size * r->model->in_len, sizeof(float));
	r->y = xcalloc((size_t)cfg->batch_size * r->train.y_len, sizeof(float));
	log_info("model %s: %s; %zu parameters", r->model->name, r->model->desc, r->model->nparams);
	return 0;
}

/* The run's state as a backup: the model's and optimizer's own buffers. */
static struct checkpoint run_checkpoint(struct run *r, const struct train_config *cfg)
{
	struct checkpoint c = {.pos = r->pos,
	                       .seed = cfg->seed,
	                       .arch_hash = r->model->arch_hash,
	                       .nparams = r->model->nparams,
	                       .nstate = r->model->nstate,
	                       .model_state = r->model->state,
	                       .optimizer = cfg->optimizer,
	                       .nslots = r->opt.nslots,
	                       .iterations = r->opt.iterations,
	                       .learning_rate = cfg->learning_rate,
	                       .momentum = cfg->momentum,
	                       .params = r->model->params,
	                       .opt_state = r->opt.state};

	snprintf(c.model, sizeof(c.model), "%s", r->model->name);
	return c;
}

/* Every worker reads the newest sound backup, if there is one: the chief
 * may be the one that was restarted, and a survivor with newer state wins
 * in sync_state anyway. */
static int restore(struct run *r, const struct train_config *cfg, char *err)
{
	struct checkpoint c;
	int rc;

	if (!cfg->backup_dir[0])
		return 0;
	c = run_checkpoint(r, cfg);
	rc = backup_restore(cfg->backup_dir, &c,
	                    &(struct checkpoint_run){cfg->epochs, cfg->steps_per_epoch, r->train.n},
	                    err);
	if (rc <= 0) {
		if (rc == 0)
			log_info("no backup in '%s': training from the start", cfg->backup_dir);
		return rc;
	}
	r->pos = c.pos;
	r->opt.iterations = c.iterations;
	log_info("restored the backup of step %llu (epoch %d, step %ld) from '%s'",
	         (unsigned long long)c.pos.global_step, c.pos.epoch + 1, c.pos.step,
	         cfg->backup_dir);
	worker_metrics_last_backup(cfg->worker_metrics, c.pos.global_step);
	if (c.seed != cfg->seed)
		log_warn("the backup was written with --seed %llu; going on with --seed %llu "
		         "changes the data order",
		         (unsigned long long)c.seed, (unsigned long long)cfg->seed);
	if (c.learning_rate != cfg->learning_rate || c.momentum != cfg->momentum)
		log_warn("the backup was written with --learning-rate %g --momentum %g; going on "
		         "with %g and %g",
		         c.learning_rate, c.momentum, cfg->learning_rate, cfg->momentum);
	return 0;
}

/* Resolves --device, --collective and --gpus against the GPUs visible. */
static int resolve_device(struct run *r, const struct train_config *cfg, char *err)
{
	char why[ERR_LEN] = "";
	int workers = cfg->cluster ? cfg->cluster->world : 1;
	int gpus = cfg->device == DEVICE_CPU ? 0 : gpu_count(why, sizeof(why));

	if (device_resolve(cfg->device, cfg->collective, cfg->gpus, workers, gpus, why, &r->device,
	                   &r->collective, &r->replicas, err) < 0)
		return -1;
	if (r->device == DEVICE_CPU) {
		if (cfg->device == DEVICE_AUTO && gpu_built())
			log_info("device: cpu (%s)", why);
		return 0;
	}
	if (r->replicas > cfg->batch_size)
		return err_set(err, "--batch-size %d is smaller than the %d GPUs that share it",
		               cfg->batch_size, r->replicas);
	for (int i = 0; i < r->replicas; i++) {
		char line[256];
		gpu_describe(i, line, sizeof(line));
		log_info("device: cuda, replica %d on %s", i, line);
	}
	return 0;
}

/* Who this worker is, for the metrics, once the device is settled (the
 * communicator as run_connect will make it). */
static void count_info(const struct run *r, const struct train_config *cfg)
{
	const struct tf_config *tc = cfg->cluster;
	struct worker_metrics_info info = {0};

	info.world = tc && tc->world > 1 ? tc->world : 1;
	info.rank = info.world > 1 ? tc->rank : 0;
	snprintf(info.job, sizeof(info.job), "%s", cfg->job_name);
	info.backend = device_name(r->device);
	info.communicator = r->collective == COLLECTIVE_NCCL ? "nccl"
	                    : info.world > 1                 ? "ring"
	                                                     : "local";
	info.gpus = r->device == DEVICE_CUDA ? r->replicas : 0;
	info.writes_backups = info.rank == 0 && cfg->backup_dir[0] != '\0';
	worker_metrics_set_info(cfg->worker_metrics, &info);
}

/* What the run will do, for the metrics, once its steps are known. */
static void count_plan(const struct run *r, const struct train_config *cfg)
{
	struct worker_metrics_plan plan = {
	    cfg->epochs, r->steps, cfg->learning_rate, r->loss.nmetrics, {NULL}};

	for (int i = 0; i < r->loss.nmetrics; i++)
		plan.names[i] = r->loss.names[i];
	worker_metrics_set_plan(cfg->worker_metrics, &plan);
}

/* Training stands at r->pos, for the metrics. */
static void count_position(const struct run *r, const struct train_config *cfg)
{
	int epoch = r->pos.epoch < cfg->epochs ? r->pos.epoch + 1 : cfg->epochs;

	worker_metrics_position(cfg->worker_metrics, epoch, r->pos.step, r->pos.global_step);
}

/* The step begun at t0 (worker_metrics_now_us) is done, for the metrics. */
static void count_step(const struct run *r, const struct train_config *cfg, long long t0)
{
	struct worker_metrics_step s = {0};
	long long now;

	if (!cfg->worker_metrics)
		return;
	now = worker_metrics_now_us();
	s = (struct worker_metrics_step){
	    .us = now - t0,
	    .examples = cfg->batch_size,
	    .global_examples = (long)cfg->batch_size * r->comm.world,
	    .epoch = r->pos.epoch + 1,
	    .step = r->pos.step,
	    .global_step = r->pos.global_step,
	    .loss = metrics_loss(&r->pos.sums),
	};
	for (int i = 0; i < r->loss.nmetrics; i++)
		s.metrics[i] = metrics_mean(&r->pos.sums, i);
	worker_metrics_step(cfg->worker_metrics, &s, now);
}

/* The backend for the group as formed now, holding the current state. */
static int make_backend(struct run *r, const struct train_config *cfg, char *err)
{
	if (r->device == DEVICE_CPU) {
		r->backend = backend_new_cpu(r->model, &r->loss, &r->opt, &r->comm, &r->stream,
		                             cfg->batch_size);
		return 0;
	}
	r->backend =
	    backend_new_cuda(r->model, &r->loss, &r->opt, &r->comm, &r->stream, cfg->batch_size,
	                     r->replicas, cfg->collective_timeout * 1000, err);
	return r->backend ? 0 : -1;
}

/* Maps the rendezvous' failures to trainer_fit's. */
static int join_failed(int rc)
{
	if (rc == RENDEZVOUS_STOPPED)
		return TRAIN_PREEMPTED;
	return rc == RENDEZVOUS_REFUSED || rc == COMM_SETUP_PERMANENT ? -1 : TRAIN_RETRYABLE;
}

/* Sets NCCL up over the joined ring (or the local communicator). */
static int connect_nccl(struct run *r, const struct train_config *cfg, char *err)
{
	struct comm inner = r->comm;
	int rc = comm_init_nccl(&r->comm, &inner, r->replicas, cfg->rendezvous_timeout * 1000,
	                        cfg->collective_timeout * 1000, err);

	if (rc < 0) {
		r->comm = inner;
		return rc == COMM_SETUP_PERMANENT ? -1 : TRAIN_RETRYABLE;
	}
	return 0;
}

/* How this worker sums gradients, for the handshake (handshake.h). */
static uint32_t hello_collective(const struct run *r)
{
	if (r->collective == COLLECTIVE_NCCL)
		return HELLO_COLLECTIVE_NCCL;
	return r->device == DEVICE_CUDA ? HELLO_COLLECTIVE_HOST_GPU : HELLO_COLLECTIVE_HOST;
}

/* Joins the other workers, if any. */
static int join_group(struct run *r, const struct train_config *cfg, char *err)
{
	const struct tf_config *tc = cfg->cluster;

	if (!tc || tc->world == 1) {
		comm_init_local(&r->comm);
		return r->collective == COLLECTIVE_NCCL ? connect_nccl(r, cfg, err) : 0;
	}
	struct hello me = {HANDSHAKE_PROTOCOL,        (uint32_t)tc->world,
	                   (uint32_t)tc->rank,        rendezvous_job_hash(cfg->job_name, tc),
	                   r->model->arch_hash,       cfg->seed,
	                   (uint32_t)cfg->batch_size, (uint32_t)cfg->optimizer,
	                   (uint32_t)cfg->epochs,     (uint64_t)cfg->steps_per_epoch,
	                   cfg->learning_rate,        cfg->momentum,
	                   hello_collective(r)};
	int rc = comm_init_ring(&r->comm, tc, &me, cfg->job_key, cfg->rendezvous_timeout * 1000,
	                        cfg->collective_timeout * 1000, err);
	if (rc < 0)
		return join_failed(rc);
	return r->collective == COLLECTIVE_NCCL ? connect_nccl(r, cfg, err) : 0;
}

/* join_group, counting the rendezvous' time and, from then on, the
 * communicator's all-reduces. */
static int run_connect(struct run *r, const struct train_config *cfg, char *err)
{
	long long t0 = worker_metrics_now_us();
	int rc = join_group(r, cfg, err);

	if (rc < 0)
		return rc;
	r->comm.metrics = cfg->worker_metrics;
	worker_metrics_rendezvous(cfg->worker_metrics, worker_metrics_now_us() - t0);
	return 0;
}

/* Every worker takes the state of the most advanced one (state_sync.h). */
static int sync_state(struct run *r, int *from, char *err)
{
	return state_sync(&r->comm, &r->pos, r->model, &r->opt, from, err) < 0 ? TRAIN_LOST : 0;
}

/* Takes the position reached for the steps to come: what the backup or the
 * peer it came from did under another world size or batch is logged, since
 * the run then no longer replays the uninterrupted one. */
static void adopt_position(struct run *r, const struct train_config *cfg)
{
	struct train_position *p = &r->pos;
	uint32_t world = (uint32_t)r->comm.world, batch = (uint32_t)cfg->batch_size;

	if (p->global_step > 0 && (p->world != world || p->batch_size != batch))
		log_warn("the state at step %llu comes from %u worker(s) at batch %u; this run "
		         "has %u at batch %u: the data are re-sharded from example %llu on, and "
		         "this run will not replay an uninterrupted one exactly",
		         (unsigned long long)p->global_step, p->world, p->batch_size, world, batch,
		         (unsigned long long)p->examples);
	p->world = world;
	p->batch_size = batch;
	if (p->step > r->steps)
		p->step = r->steps;
	r->adopted = 1;
	count_position(r, cfg);
}

/* One step: this worker's share of the next global batch, forward, loss,
 * the backward pass with each bucket of gradients summed across workers
 * while the rest of the pass runs, and the update. Advances the position.
 * *notices is how many workers have a preemption notice. */
static int train_step(struct run *r, int batch, int *notices, char *err)
{
	uint64_t world = (uint64_t)r->comm.world, global = world * (uint64_t)batch;
	uint64_t pos = r->pos.examples + (uint64_t)r->comm.rank * (uint64_t)batch;
	/* The loss is the mean over the global batch: summing the workers'
	 * gradients of scale * their losses gives its gradient. The notice
	 * travels with the metrics, so every worker sees it after the same
	 * step. */
	struct backend_step s = {pos, pos + global, 1.0f / (float)global, preempt_signal() != 0};
	struct step_sums sums;

	if (backend_step(r->backend, &s, &sums, err) < 0)
		return TRAIN_LOST;
	/* Summed across workers, so every worker stops at the same step. */
	if (!isfinite(sums.m.loss_sum))
		return err_set(err, "loss is %f at step %llu; lower --learning-rate",
		               sums.m.loss_sum, (unsigned long long)r->pos.global_step + 1);
	metrics_add(&r->pos.sums, &sums.m);
	r->pos.step++;
	r->pos.global_step++;
	r->pos.examples += global;
	*notices = (int)sums.notices;
	return 0;
}

/* The chief starts a backup of where training stands, unless it has
 * already started one of this very position, or has taken up none yet (a
 * peer lost during the first state sync): a backup written then would say
 * world 0, and no replacement could resume from it. */
static void take_backup(struct run *r, const struct train_config *cfg)
{
	if (!r->backup || !r->adopted ||
	    (r->have_saved && r->saved.global_step == r->pos.global_step &&
	     r->saved.epoch == r->pos.epoch))
		return;
	if (r->backend)
		backend_pull(r->backend);
	struct checkpoint c = run_checkpoint(r, cfg);
	backup_start(r->backup, &c);
	r->saved = r->pos;
	r->have_saved = 1;
}

/* Every worker has learned of notices preemption notices after the same
 * step: the chief writes a backup there and says whether it is on disk, the
 * workers that were signalled stop, and the others resynchronize with their
 * replacements. */
static int on_preemption(struct run *r, const struct train_config *cfg, int notices, char *err)
{
	unsigned long long step = (unsigned long long)r->pos.global_step;
	double written = 0;
	int sig = preempt_signal();

	log_warn("preemption notice from %d of %d worker(s): stopping at step %llu", notices,
	         r->comm.world, step);
	if (r->backup) {
		take_backup(r, cfg);
		written = backup_wait(r->backup) == 0;
	}
	if (comm_broadcast(&r->comm, &written, sizeof(written), 0, err) < 0 && !sig)
		return TRAIN_LOST;
	if (written)
		log_warn("backup at step %llu written by the chief", step);
	else
		log_warn("no backup at step %llu (%s)", step,
		         cfg->backup_dir[0] ? "the chief could not write it" : "no --backup-dir");
	if (sig) {
		err_set(err, "stopped by signal %d after step %llu", sig, step);
		return TRAIN_PREEMPTED;
	}
	err_set(err, "%d worker(s) preempted after step %llu", notices, step);
	return TRAIN_LOST;
}

static int validate(struct run *r, const struct train_config *cfg, struct metrics *val, char *err)
{
	struct metrics v =
	    trainer_evaluate(r->backend, &r->test, cfg->batch_size, cfg->validation_steps,
	                     r->comm.rank, r->comm.world, r->x, r->y);
	double sums[METRICS_WORDS];

	metrics_to_words(sums, &v);
	if (comm_allreduce_f64(&r->comm, sums, METRICS_WORDS, err) < 0)
		return TRAIN_LOST;
	metrics_from_words(val, sums);
	return 0;
}

/* Logs the fingerprint of the final weights and checks that this worker's
 * match the chief's: they must, bit for bit. */
static int check_weights(struct run *r, char *err)
{
	char mine[DIGEST_HEX_LEN], chief[DIGEST_HEX_LEN];

	backend_pull(r->backend);
	digest_sha256_hex(r->model->params, r->model->nparams * sizeof(float), mine);
	memcpy(chief, mine, sizeof(chief));
	if (comm_broadcast(&r->comm, chief, sizeof(chief), 0, err) < 0)
		return TRAIN_LOST;
	log_info("final weights sha256 %s", mine);
	if (memcmp(mine, chief, sizeof(chief)) != 0)
		return err_set(err, "final weights differ from the chief's: sha256 %s, chief %s",
		               mine, chief);
	return 0;
}

/* The rest of one epoch from r->pos: its steps, validation, the epoch's
 * line and, at its end, the position of the next. */
static int run_epoch(struct run *r, const struct train_config *cfg, struct progress *p,
                     struct train_result *result, char *err)
{
	struct metrics val = {0};
	int rc, notices = 0;

	progress_epoch_begin(p, r->pos.epoch + 1, cfg->epochs, r->steps, r->pos.step);
	double t0 = progress_now();
	while (r->pos.step < r->steps) {
		long long begun = cfg->worker_metrics ? worker_metrics_now_us() : 0;
		rc = train_step(r, cfg->batch_size, &notices, err);
		if (rc < 0)
			return rc;
		count_step(r, cfg, begun);
		progress_step(p, r->pos.step, (long)r->pos.global_step, &r->pos.sums);
		r->recovery_deadline = 0;
		if (r->lost_at > 0) {
			log_info("first step after resynchronizing done, %.2f s after the loss",
			         progress_now() - r->lost_at);
			r->lost_at = 0;
		}
		if (notices)
			return on_preemption(r, cfg, notices, err);
		if (cfg->save_freq > 0 && r->pos.global_step % (uint64_t)cfg->save_freq == 0)
			take_backup(r, cfg);
	}
	double seconds = progress_now() - t0;
	if (cfg->validation_steps != 0) {
		double means[METRICS_MAX];
		rc = validate(r, cfg, &val, err);
		if (rc < 0)
			return rc;
		for (int i = 0; i < r->loss.nmetrics; i++)
			means[i] = metrics_mean(&val, i);
		worker_metrics_validation(cfg->worker_metrics, metrics_loss(&val), means);
	}
	progress_epoch_end(p, (long)r->pos.global_step, &r->pos.sums,
	                   cfg->validation_steps != 0 ? &val : NULL);
	status_report_kick(cfg->status_report);
	if (result)
		*result =
		    (struct train_result){r->pos.sums, val, (long)r->pos.global_step, seconds};
	r->pos.epoch++;
	r->pos.step = 0;
	r->pos.sums = (struct metrics){0};
	if (r->pos.epoch < cfg->epochs)
		count_position(r, cfg);
	if (cfg->save_freq == SAVE_FREQ_EPOCH)
		take_backup(r, cfg);
	return 0;
}

/* Trains from r->pos to the end and checks the weights. */
static int run_rest(struct run *r, const struct train_config *cfg, struct progress *p,
                    struct train_result *result, char *err)
{
	while (r->pos.epoch < cfg->epochs) {
		int rc = run_epoch(r, cfg, p, result, err);
		if (rc < 0)
			return rc;
	}
	return check_weights(r, err);
}

/* After a failed state sync, the survivors wait before they meet again,
 * longer each time: a peer that joins and drops at once, over and over,
 * would otherwise have them meet as fast as the sockets allow. */
#define RESYNC_BACKOFF_FIRST_MS 50
#define RESYNC_BACKOFF_MAX_MS   2000
/* The longest the wait goes without looking at the preemption flag, whose
 * handler may run on another thread and leave this one asleep; the
 * rendezvous' own waits look as often (rendezvous.c). */
#define RESYNC_SLICE_MS 100

static long long ms_left(long long deadline_ms)
{
	long long left = deadline_ms - net_now_ms();

	return left > 0 ? left : 0;
}

/* Sleeps ms, or less once a preemption notice has come. Returns the
 * signal, or 0. */
static int pause_unless_preempted(long long ms)
{
	long long until = net_now_ms() + ms;

	for (;;) {
		long long left = ms_left(until);
		if (preempt_signal() || left == 0)
			return preempt_signal();
		if (left > RESYNC_SLICE_MS)
			left = RESYNC_SLICE_MS;
		nanosleep(&(struct timespec){0, (long)left * 1000000L}, NULL);
	}
}

/* The recovery's time is up: err, what failed last, says so. */
static int recovery_spent(const struct run *r, const struct train_config *cfg, char *err)
{
	if (r->meetings == 0)
		err_prefix(err, "the ring did not form again within %d s", cfg->rendezvous_timeout);
	else
		err_prefix(err,
		           "no step done within %d s (--rendezvous-timeout) of losing a peer: the "
		           "ring formed again %d time(s) and broke before a step each time; the "
		           "last failure",
		           cfg->rendezvous_timeout, r->meetings);
	return TRAIN_RETRYABLE;
}

/* Waits the recovery's back-off before the next meeting, no longer than
 * its deadline, and doubles it. Returns 0; TRAIN_PREEMPTED at a
 * preemption notice; TRAIN_RETRYABLE, with err saying what failed last,
 * once the deadline has passed. */
static int wait_to_meet(struct run *r, const struct train_config *cfg, char *err)
{
	long long left = ms_left(r->recovery_deadline);
	long long wait = r->backoff < left ? r->backoff : left;
	int sig;

	if (wait > 0)
		log_warn("%s; meeting again in %lld ms", err, wait);
	sig = pause_unless_preempted(wait);
	if (sig) {
		err_set(err, "stopped by signal %d while waiting to meet again", sig);
		return TRAIN_PREEMPTED;
	}
	r->backoff =
	    r->backoff * 2 < RESYNC_BACKOFF_MAX_MS ? r->backoff * 2 : RESYNC_BACKOFF_MAX_MS;
	return ms_left(r->recovery_deadline) > 0 ? 0 : recovery_spent(r, cfg, err);
}

/* Forms the ring again and takes up the most advanced state in it, meeting
 * again after the back-off when the sync fails (a peer lost during it),
 * until the recovery's deadline. Returns 0; TRAIN_RETRYABLE when the
 * deadline passes, with err saying what failed last; or join_failed's
 * code. */
static int meet_again(struct run *r, const struct train_config *cfg, int *from, char *err)
{
	for (;;) {
		long long t0 = worker_metrics_now_us();
		int rc = comm_rejoin(&r->comm, (int)ms_left(r->recovery_deadline), err);
		if (rc == 0)
			worker_metrics_rendezvous(cfg->worker_metrics,
			                          worker_metrics_now_us() - t0);
		/* -1 is a time-out, or a system error before one. */
		if (rc == -1 && ms_left(r->recovery_deadline) == 0)
			return recovery_spent(r, cfg, err);
		/* A set-up over the formed ring that failed is met again, as a
		 * failed state sync is. */
		if (rc < 0 && rc != COMM_SETUP_RETRY)
			return join_failed(rc);
		if (rc == 0 && sync_state(r, from, err) == 0) {
			r->meetings++;
			return 0;
		}
		comm_leave(&r->comm);
		rc = wait_to_meet(r, cfg, err);
		if (rc < 0)
			return rc;
	}
}

/* After a lost peer: leave the broken ring at once (so that every peer
 * notices), keep the chief's newest state on disk, wait for the ring to be
 * whole again and take up the most advanced state in it. The whole
 * recovery, from the first loss after a step done to the next step done,
 * has --rendezvous-timeout: a peer that passes the state sync and drops in
 * the first step, again and again, is met again after a growing back-off,
 * and only until then. */
static int resync(struct run *r, const struct train_config *cfg, char *err)
{
	double t0 = progress_now();
	int rc, from;

	comm_leave(&r->comm);
	int again = r->recovery_deadline != 0;
	if (!again) {
		r->recovery_deadline = net_now_ms() + (long long)cfg->rendezvous_timeout * 1000;
		r->backoff = RESYNC_BACKOFF_FIRST_MS;
		r->meetings = 0;
		log_warn("%s; waiting up to %d s for the ring to form again", err,
		         cfg->rendezvous_timeout);
	}
	/* The failed step's update was not applied: the backend's state is
	 * that of r->pos, which the backup and the state sync take up. */
	backend_pull(r->backend);
	backend_free(r->backend);
	r->backend = NULL;
	if (r->backup) {
		take_backup(r, cfg);
		backup_wait(r->backup);
	}
	/* The ring formed again and broke before a step was done: the state
	 * it handed over is on disk now; meet again after the back-off. */
	rc = again ? wait_to_meet(r, cfg, err) : 0;
	if (rc == 0)
		rc = meet_again(r, cfg, &from, err);
	if (rc < 0)
		return rc;
	adopt_position(r, cfg);
	if (make_backend(r, cfg, err) < 0)
		return -1;
	r->lost_at = t0;
	worker_metrics_resync(cfg->worker_metrics, (long long)((progress_now() - t0) * 1e6));
	log_warn("resynchronized in %.2f s: going on from step %llu (epoch %d, step %ld), the "
	         "state of rank %d",
	         progress_now() - t0, (unsigned long long)r->pos.global_step, r->pos.epoch + 1,
	         r->pos.step, from);
	return 0;
}

static int save_model(struct run *r, const struct train_config *cfg, char *err)
{
	struct model_file_info info = {optimizer_name(cfg->optimizer),
	                               cfg->learning_rate,
	                               cfg->batch_size,
	                               r->comm.world,
	                               cfg->epochs,
	                               (long)r->pos.global_step,
	                               cfg->seed,
	                               &cfg->loss,
	                               cfg->nmetrics,
	                               cfg->metrics,
	                               cfg->rescale};

	if (model_file_save(cfg->model_dir, r->model, cfg->km, &info, err) < 0)
		return -1;
	log_info("model saved to '%s/%s'", cfg->model_dir, MODEL_FILE_NAME);
	return 0;
}

/* The chief's last duties once every worker holds the final weights. */
static int finish(struct run *r, const struct train_config *cfg, char *err)
{
	if (r->comm.rank != 0)
		return 0;
	if (cfg->model_dir[0] && save_model(r, cfg, err) < 0)
		return -1;
	if (!r->backup)
		return 0;
	if (cfg->keep_backups) {
		take_backup(r, cfg);
		backup_wait(r->backup);
		return 0;
	}
	backup_wait(r->backup);
	if (checkpoint_remove_all(cfg->backup_dir, err) < 0)
		log_warn("removing the backups: %s", err);
	else
		log_info("training done: backups in '%s' removed", cfg->backup_dir);
	return 0;
}

/* The chief writes the model and the backups: a folder it cannot write is
 * found now, before the training that would be lost with it (exit 1). */
static int check_outputs(const struct train_config *cfg, char *err)
{
	const char *const flags[] = {"--model-dir", "--backup-dir"};
	const char *const dirs[] = {cfg->model_dir, cfg->backup_dir};

	if (cfg->cluster && cfg->cluster->rank != 0)
		return 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (dirs[i][0] && dir_check_writable(dirs[i], err) < 0)
			return err_prefix(err, "%s '%s' cannot be written", flags[i], dirs[i]);
	return 0;
}

int trainer_fit(const struct train_config *cfg, FILE *out, struct train_result *result, char *err)
{
	struct run r = {0};
	struct progress p;
	int rc = -1, from = 0;

	if (parallel_init(cfg->threads, err) < 0)
		goto out;
	if (check_outputs(cfg, err) < 0 || resolve_device(&r, cfg, err) < 0 ||
	    run_setup(&r, cfg, err) < 0)
		goto out;
	count_info(&r, cfg);
	if (restore(&r, cfg, err) < 0)
		goto out;
	count_position(&r, cfg);
	rc = run_connect(&r, cfg, err);
	if (rc < 0)
		goto out;
	int chief = r.comm.rank == 0;
	if (chief && !cfg->model_dir[0])
		log_warn("no --model-dir (or MWJ_MODEL_DIR): the trained model will not be saved");
	if (chief && cfg->backup_dir[0]) {
		r.backup =
		    backup_new(cfg->backup_dir, r.model->nparams, r.model->nstate, r.opt.nslots);
		backup_set_metrics(r.backup, cfg->worker_metrics);
	}
	long global_batch = (long)cfg->batch_size * r.comm.world;
	/* One pass by default: the global batches evaluation would take over the set. */
	r.steps = cfg->steps_per_epoch ? cfg->steps_per_epoch
	                               : trainer_eval_steps(&r.train, global_batch, VALIDATION_ALL);
	count_plan(&r, cfg);
	progress_init(&p, out, cfg->json, cfg->log_every, global_batch, &r.loss);
	if (!chief)
		p.mode = PROGRESS_QUIET;
	rc = r.comm.world > 1 ? sync_state(&r, &from, err) : 0;
	if (rc == 0) {
		adopt_position(&r, cfg);
		status_report_kick(cfg->status_report); /* where it resumes, at once */
		if (make_backend(&r, cfg, err) < 0) {
			rc = -1;
			goto out;
		}
		if (r.comm.world > 1 || r.replicas > 1)
			log_info("training as rank %d of %d on %s over the %s communicator, global "
			         "batch %ld",
			         r.comm.rank, r.comm.world, backend_name(r.backend),
			         comm_name(&r.comm), global_batch);
		if (r.pos.global_step > 0)
			log_info(
			    "going on from step %llu (epoch %d, step %ld), the state of rank %d",
			    (unsigned long long)r.pos.global_step, r.pos.epoch + 1, r.pos.step,
			    from);
		rc = run_rest(&r, cfg, &p, result, err);
	}
	while (rc == TRAIN_LOST) {
		rc = resync(&r, cfg, err);
		if (rc == 0)
			rc = run_rest(&r, cfg, &p, result, err);
	}
	if (rc == 0)
		rc = finish(&r, cfg, err);
out:
	run_release(&r);
	parallel_shutdown();
	return rc;
}
