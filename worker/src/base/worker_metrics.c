/* worker_metrics.c - the worker's counters and its training snapshot; see
 * worker_metrics.h.
 *
 * The samples-per-second window: ring holds, for each one-second slot
 * from the oldest kept to the newest with a step, the counts at the end of
 * that slot (a slot without a step repeats the one before). The count at
 * the window's start is read off the slot it falls in, so the rate is
 * exact to within one slot's steps, stalls included: steps that did not
 * come count as none, and after a minute without a step the rate is 0. */
#include "worker_metrics.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

long long worker_metrics_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void worker_metrics_init(struct worker_metrics *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	m->s.last_backup_step = WORKER_METRICS_NONE;
	m->s.seconds_left = WORKER_METRICS_NONE;
}

void worker_metrics_release(struct worker_metrics *m)
{
	if (m)
		pthread_mutex_destroy(&m->mu);
}

void worker_metrics_set_info(struct worker_metrics *m, const struct worker_metrics_info *info)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->s.info = *info;
	m->s.info.job[sizeof(m->s.info.job) - 1] = '\0';
	m->s.have_info = 1;
	pthread_mutex_unlock(&m->mu);
}

void worker_metrics_set_plan(struct worker_metrics *m, const struct worker_metrics_plan *p)
{
	int n = p->nmetrics < WORKER_METRICS_MAX ? p->nmetrics : WORKER_METRICS_MAX;

	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->s.epochs = p->epochs;
	m->s.steps_per_epoch = p->steps_per_epoch;
	m->s.total_steps = (uint64_t)p->epochs * (uint64_t)p->steps_per_epoch;
	m->s.learning_rate = p->learning_rate;
	m->s.nmetrics = n;
	for (int i = 0; i < n; i++)
		snprintf(m->s.names[i], sizeof(m->s.names[i]), "%s", p->names[i]);
	pthread_mutex_unlock(&m->mu);
}

void worker_metrics_position(struct worker_metrics *m, int epoch, long step, uint64_t global_step)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->s.epoch = epoch;
	m->s.step = step;
	m->s.global_step = global_step;
	pthread_mutex_unlock(&m->mu);
}

/* --- the window --- */

static long long slot_of(long long t_us)
{
	return t_us >= 0 ? t_us / WORKER_METRICS_SLOT_US : -1;
}

static struct worker_metrics_slot *ring_at(struct worker_metrics *m, int i)
{
	return &m->ring[(m->ring_head + i) % WORKER_METRICS_RING];
}

/* Appends slot's counts, dropping the oldest when full. */
static void ring_push(struct worker_metrics *m, long long slot,
                      const struct worker_metrics_sample *c)
{
	if (m->ring_len == WORKER_METRICS_RING) {
		m->ring_head = (m->ring_head + 1) % WORKER_METRICS_RING;
		m->ring_len--;
	}
	*ring_at(m, m->ring_len) = (struct worker_metrics_slot){slot, c->steps, c->global_examples};
	m->ring_len++;
}

/* The counts after the last step (m->last) go into its slot; the slots
 * since the newest, which had no step, repeat the counts before it. */
static void window_add(struct worker_metrics *m, const struct worker_metrics_sample *before)
{
	long long slot = slot_of(m->last.t_us), newest;

	if (m->ring_len == 0) {
		ring_push(m, slot, &m->last);
		return;
	}
	newest = ring_at(m, m->ring_len - 1)->slot;
	if (slot <= newest) {
		/* The same slot (or a clock that went back): its end moves on. */
		struct worker_metrics_slot *e = ring_at(m, m->ring_len - 1);
		e->steps = m->last.steps;
		e->global_examples = m->last.global_examples;
		return;
	}
	long long from = newest + 1;
	if (slot - from >= WORKER_METRICS_RING)
		from = slot - WORKER_METRICS_RING + 1;
	for (long long s = from; s < slot; s++)
		ring_push(m, s, before);
	ring_push(m, slot, &m->last);
}

/* The counts at the end of slot k, which the ring holds or which repeat
 * its newest. */
static const struct worker_metrics_slot *counts_at(struct worker_metrics *m, long long k)
{
	long long oldest = ring_at(m, 0)->slot;

	if (k < oldest)
		k = oldest;
	if (k - oldest >= m->ring_len)
		k = oldest + m->ring_len - 1;
	return ring_at(m, (int)(k - oldest));
}

/* Fills the rates of out as of now_us. */
static void window_rates(struct worker_metrics *m, struct worker_metrics_snapshot *out,
                         long long now_us)
{
	long long start = now_us - WORKER_METRICS_WINDOW_US, base_t;
	uint64_t base_steps, base_examples;

	out->samples_per_second = 0;
	out->seconds_left = WORKER_METRICS_NONE;
	if (m->ring_len == 0)
		return;
	if (start <= m->first.t_us) {
		/* Younger than the window: from the end of the first step
		 * (whose own time is unknown here). */
		base_t = m->first.t_us;
		base_steps = m->first.steps;
		base_examples = m->first.global_examples;
	} else {
		long long k = slot_of(start);
		const struct worker_metrics_slot *c = counts_at(m, k);
		base_t = (k + 1) * WORKER_METRICS_SLOT_US;
		base_steps = c->steps;
		base_examples = c->global_examples;
	}
	if (now_us <= base_t)
		return;
	double span = (double)(now_us - base_t) / 1e6;
	double steps_per_s = (double)(m->last.steps - base_steps) / span;
	out->samples_per_second = (double)(m->last.global_examples - base_examples) / span;
	if (out->total_steps > 0 && steps_per_s > 0) {
		uint64_t left =
		    out->total_steps > out->global_step ? out->total_steps - out->global_step : 0;
		out->seconds_left = (double)left / steps_per_s;
	}
}

/* --- updates --- */

void worker_metrics_step(struct worker_metrics *m, const struct worker_metrics_step *s,
                         long long now_us)
{
	if (!m)
		return;
	histogram_observe_us(&m->step_time, s->us);
	pthread_mutex_lock(&m->mu);
	struct worker_metrics_sample before = m->last;
	m->s.steps_done++;
	m->s.examples += (uint64_t)s->examples;
	m->s.global_examples += (uint64_t)s->global_examples;
	m->s.epoch = s->epoch;
	m->s.step = s->step;
	m->s.global_step = s->global_step;
	m->s.loss = s->loss;
	memcpy(m->s.metrics, s->metrics, sizeof(m->s.metrics));
	m->last = (struct worker_metrics_sample){now_us, m->s.steps_done, m->s.global_examples};
	if (m->s.steps_done == 1)
		m->first = m->last;
	window_add(m, &before);
	pthread_mutex_unlock(&m->mu);
}

void worker_metrics_validation(struct worker_metrics *m, double loss, const double *metrics)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->s.have_validation = 1;
	m->s.val_loss = loss;
	for (int i = 0; i < m->s.nmetrics; i++)
		m->s.val_metrics[i] = metrics[i];
	pthread_mutex_unlock(&m->mu);
}

void worker_metrics_rendezvous(struct worker_metrics *m, long long us)
{
	if (m)
		histogram_observe_us(&m->rendezvous_time, us);
}

void worker_metrics_resync(struct worker_metrics *m, long long us)
{
	if (!m)
		return;
	histogram_observe_us(&m->resync_time, us);
	ADD(&m->resyncs, 1);
}

void worker_metrics_allreduce(struct worker_metrics *m, unsigned long long bytes, long long us)
{
	if (!m)
		return;
	ADD(&m->allreduce_bytes, bytes);
	ADD(&m->allreduce_us, (unsigned long long)(us > 0 ? us : 0));
}

void worker_metrics_backup(struct worker_metrics *m, uint64_t step, unsigned long long bytes,
                           long long us, int ok)
{
	if (!m)
		return;
	if (!ok) {
		ADD(&m->backup_failures, 1);
		return;
	}
	histogram_observe_us(&m->backup_time, us);
	__atomic_store_n(&m->backup_bytes, bytes, __ATOMIC_RELAXED);
	worker_metrics_last_backup(m, step);
}

void worker_metrics_last_backup(struct worker_metrics *m, uint64_t step)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->s.last_backup_step = (long long)step;
	pthread_mutex_unlock(&m->mu);
}

void worker_metrics_snapshot(struct worker_metrics *m, struct worker_metrics_snapshot *out,
                             long long now_us)
{
	if (!m) {
		memset(out, 0, sizeof(*out));
		out->last_backup_step = WORKER_METRICS_NONE;
		out->seconds_left = WORKER_METRICS_NONE;
		return;
	}
	pthread_mutex_lock(&m->mu);
	*out = m->s;
	window_rates(m, out, now_us);
	pthread_mutex_unlock(&m->mu);
}
