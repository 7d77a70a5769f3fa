/* state_sync.c - handing the most advanced worker's state to all. */
#include "state_sync.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "err.h"

/* The position's fields as the words that are broadcast. */
#define POS_WORDS (7 + METRICS_WORDS)

int state_sync(struct comm *c, struct train_position *p, struct model *m, struct optimizer *o,
               int *from, char *err)
{
	int world = c->world, rank = c->rank, best = 0, rc = -1;
	size_t n = m->nparams, state_len = (size_t)o->nslots * n;
	double *have = xcalloc((size_t)world, sizeof(double));
	uint64_t w[POS_WORDS] = {(uint64_t)p->epoch, (uint64_t)p->step, p->global_step, p->examples,
	                         p->world,           p->batch_size,     o->iterations};
	double sums[METRICS_WORDS];
	float *state = NULL, *model_state = NULL;

	*from = 0;
	metrics_to_words(sums, &p->sums);
	for (int i = 0; i < METRICS_WORDS; i++)
		w[7 + i] = bytes_f64_bits(sums[i]);
	have[rank] = (double)p->global_step + 1.0;
	if (comm_allreduce_f64(c, have, (size_t)world, err) < 0)
		goto out;
	for (int i = 1; i < world; i++)
		if (have[i] > have[best])
			best = i;
	*from = best;
	/* The gradient buffer is free between steps: it receives the params. */
	float *params = rank == best ? m->params : m->grads;
	m->grads_zeroed = 0;
	if (state_len)
		state = rank == best ? o->state : xcalloc(state_len, sizeof(float));
	if (m->nstate)
		model_state = rank == best ? m->state : xcalloc(m->nstate, sizeof(float));
	if (comm_broadcast(c, w, sizeof(w), best, err) < 0 ||
	    comm_broadcast(c, params, n * sizeof(float), best, err) < 0 ||
	    (m->nstate &&
	     comm_broadcast(c, model_state, m->nstate * sizeof(float), best, err) < 0) ||
	    (state_len && comm_broadcast(c, state, state_len * sizeof(float), best, err) < 0))
		goto out;
	if (rank != best) {
		memcpy(m->params, params, n * sizeof(float));
		if (m->nstate)
			memcpy(m->state, model_state, m->nstate * sizeof(float));
		if (state_len)
			memcpy(o->state, state, state_len * sizeof(float));
		*p = (struct train_position){.epoch = (int)w[0],
		                             .step = (long)w[1],
		                             .global_step = w[2],
		                             .examples = w[3],
		                             .world = (uint32_t)w[4],
		                             .batch_size = (uint32_t)w[5]};
		for (int i = 0; i < METRICS_WORDS; i++)
			sums[i] = bytes_bits_f64(w[7 + i]);
		metrics_from_words(&p->sums, sums);
		o->iterations = w[6];
	}
	rc = 0;
out:
	if (state != o->state)
		free(state);
	if (model_state != m->state)
		free(model_state);
	free(have);
	return rc;
}
