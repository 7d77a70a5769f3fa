/* backend_cpu.c - the training step on the CPU: the model's own buffers,
 * OpenBLAS on the compute threads, the gradients summed in buckets while
 * the backward pass runs (reducer.h). */
#include <stdlib.h>

#include "backend.h"
#include "err.h"
#include "reducer.h"

struct cpu_backend {
	struct reducer *reducer; /* NULL for a backend that only evaluates */
	float *x;                /* (batch, in_len) */
	float *y;                /* (batch, T) */
	/* How synchronized batch normalisation meets the other workers, and
	 * whether that failed in this step. */
	struct model_sync sync;
	int sync_failed;
	char sync_err[ERR_LEN];
};

static int sync_sum(void *ctx, double *v, size_t n)
{
	struct cpu_backend *cb = ctx;

	if (!cb->sync_failed && reducer_sum_now(cb->reducer, v, n, cb->sync_err) < 0)
		cb->sync_failed = 1;
	return cb->sync_failed ? -1 : 0;
}

/* Applies the optimizer to a slice whose gradients are final. The batch
 * statistics beyond the parameters are no gradients: model_update_state
 * takes them after the step. */
static void update_slice(void *ctx, const struct grad_slice *s)
{
	struct backend *b = ctx;

	if (s->off >= b->model->nparams)
		return;
	optimizer_apply_slice(b->opt, b->model->params, b->model->grads, s);
}

/* The step's sums and the notice, as the doubles the reducer sums first. */
enum { SMALL_NOTICE = METRICS_WORDS, SMALL_WORDS };

static int cpu_step(struct backend *b, const struct backend_step *s, struct step_sums *out,
                    char *err)
{
	struct cpu_backend *cb = b->impl;
	struct model *m = b->model;
	double small[SMALL_WORDS] = {0};
	struct metrics sums = {0};

	dataset_stream_gather(b->stream, cb->x, cb->y, s->pos, (uint32_t)b->batch);
	/* Alone, a synchronized layer's batch is the global batch. */
	cb->sync_failed = 0;
	const struct model_sync *sync = b->comm->world > 1 && m->sync_sums ? &cb->sync : NULL;
	model_forward(m, cb->x, b->batch, &(struct model_pass){1, s->pos, sync});
	if (cb->sync_failed)
		return err_set(err, "%s", cb->sync_err);
	double l[1 + LOSS_MAX_METRICS] = {0};
	loss_batch(m->dlogits, l, model_logits(m), model_outputs(m), cb->y, b->batch, b->loss,
	           s->scale);
	sums.loss_sum = l[0];
	sums.count = b->batch;
	for (int i = 0; i < b->loss->nmetrics; i++)
		sums.sums[i] = l[1 + i];
	/* The metrics and the notice travel first, while the backward pass
	 * runs, so every worker sees the same sums after the same step. */
	metrics_to_words(small, &sums);
	small[SMALL_NOTICE] = s->notice ? 1.0 : 0.0;
	/* Alone, each layer is updated inside the backward pass while it is in
	 * cache; with others, once the summed gradients are all in (reducer.h). */
	int alone = b->comm->world == 1;
	if (alone)
		optimizer_begin_step(b->opt);
	reducer_begin(cb->reducer, small, SMALL_WORDS);
	model_backward(m, cb->x, b->batch, reducer_grad_ready, cb->reducer);
	if (reducer_finish(cb->reducer, err) < 0)
		return -1;
	if (cb->sync_failed)
		return err_set(err, "%s", cb->sync_err);
	if (!alone)
		optimizer_step(b->opt, m->params, m->grads);
	model_update_state(m, b->comm->world);
	m->grads_zeroed = 1; /* every slice went through the optimizer */
	metrics_from_words(&out->m, small);
	out->notices = small[SMALL_NOTICE];
	return 0;
}

static void cpu_evaluate(struct backend *b, const float *x, const float *y, int n,
                         struct metrics *sums)
{
	struct model *m = b->model;
	double l[1 + LOSS_MAX_METRICS] = {0};

	model_forward(m, x, n, NULL);
	loss_batch(NULL, l, model_logits(m), model_outputs(m), y, n, b->loss, 0.0f);
	sums->loss_sum += l[0];
	sums->count += n;
	for (int i = 0; i < b->loss->nmetrics; i++)
		sums->sums[i] += l[1 + i];
}

/* The state is the host copy itself: nothing to move. */
static void cpu_pull(struct backend *b)
{
	(void)b;
}

static void cpu_push(struct backend *b)
{
	(void)b;
}

static void cpu_free(struct backend *b)
{
	struct cpu_backend *cb = b->impl;

	reducer_free(cb->reducer);
	free(cb->x);
	free(cb->y);
	free(cb);
	free(b);
}

static const struct backend_ops CPU_OPS = {
    "cpu", cpu_step, cpu_evaluate, cpu_pull, cpu_push, cpu_free,
};

struct backend *backend_new_cpu(struct model *m, const struct loss_spec *loss, struct optimizer *o,
                                struct comm *c, struct dataset_stream *s, int batch)
{
	struct backend *b = xcalloc(1, sizeof(*b));
	struct cpu_backend *cb = xcalloc(1, sizeof(*cb));

	*b = (struct backend){&CPU_OPS, m, loss, o, c, s, batch, cb};
	if (c && o && s) {
		cb->reducer = reducer_new(c, m, 0, update_slice, b);
		cb->sync = (struct model_sync){sync_sum, cb};
		cb->x = xcalloc((size_t)batch * m->in_len, sizeof(float));
		cb->y = xcalloc((size_t)batch * (size_t)loss->T, sizeof(float));
	}
	return b;
}
