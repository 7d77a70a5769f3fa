/* backend_cpu.c - the training step on the CPU: the model's own buffers,
 * OpenBLAS on the compute threads, the gradients summed in buckets while
 * the backward pass runs (reducer.h). */
#include <stdlib.h>

#include "backend.h"
#include "err.h"
#include "reducer.h"

struct cpu_backend {
	struct reducer *reducer; /* NULL for a backend that only evaluates */
	float *x;                /* (batch, H, W, C) */
	uint8_t *y;              /* (batch) */
};

/* Applies the optimizer to a slice whose gradients are final. */
static void update_slice(void *ctx, const struct grad_slice *s)
{
	struct backend *b = ctx;

	optimizer_apply_slice(b->opt, b->model->params, b->model->grads, s);
}

static int cpu_step(struct backend *b, const struct backend_step *s, struct step_sums *out,
                    char *err)
{
	struct cpu_backend *cb = b->impl;
	struct model *m = b->model;

	dataset_stream_gather(b->stream, cb->x, cb->y, s->pos, (uint32_t)b->batch);
	model_forward(m, cb->x, b->batch);
	struct loss_sums l =
	    loss_softmax_xent(m->dlogits, model_logits(m), cb->y, b->batch, m->classes, s->scale);
	/* The metrics and the notice travel first, while the backward pass
	 * runs, so every worker sees the same sums after the same step. */
	double small[4] = {l.loss, (double)l.correct, b->batch, s->notice ? 1.0 : 0.0};
	/* Alone, each layer is updated inside the backward pass while it is in
	 * cache; with others, once the summed gradients are all in (reducer.h). */
	int alone = b->comm->world == 1;
	if (alone)
		optimizer_begin_step(b->opt);
	reducer_begin(cb->reducer, small, 4);
	model_backward(m, cb->x, b->batch, reducer_grad_ready, cb->reducer);
	if (reducer_finish(cb->reducer, err) < 0)
		return -1;
	if (!alone)
		optimizer_step(b->opt, m->params, m->grads);
	m->grads_zeroed = 1; /* every slice went through the optimizer */
	*out = (struct step_sums){small[0], small[1], small[2], small[3]};
	return 0;
}

static struct loss_sums cpu_evaluate(struct backend *b, const float *x, const uint8_t *y, int n)
{
	struct model *m = b->model;

	model_forward(m, x, n);
	return loss_softmax_xent(NULL, model_logits(m), y, n, m->classes, 0.0f);
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

struct backend *backend_new_cpu(struct model *m, struct optimizer *o, struct comm *c,
                                struct dataset_stream *s, int batch)
{
	struct backend *b = xcalloc(1, sizeof(*b));
	struct cpu_backend *cb = xcalloc(1, sizeof(*cb));

	*b = (struct backend){&CPU_OPS, m, o, c, s, batch, cb};
	if (c && o && s) {
		cb->reducer = reducer_new(c, m, 0, update_slice, b);
		cb->x = xcalloc((size_t)batch * (size_t)m->in_h * m->in_w * m->in_c, sizeof(float));
		cb->y = xcalloc((size_t)batch, 1);
	}
	return b;
}
