/* reducer.c - bucketed gradient all-reduce behind the backward pass. */
#include "reducer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

#define BUCKET_MAX_PIECES 4

struct bucket {
	struct grad_slice pieces[BUCKET_MAX_PIECES]; /* in the order they travel */
	int npieces;
	size_t total;  /* elements */
	size_t lo, hi; /* span of the buffer the pieces lie in */
	int sealed;    /* takes no more pieces */
	atomic_size_t ready;
};

struct reducer {
	struct comm *comm;
	struct model *model;
	reducer_apply_fn apply;
	void *ctx;
	struct bucket *buckets;
	int nbuckets, cap;
	size_t bucket_elems;
	double *small;
	size_t nsmall;
	/* The communication thread serves step begun when served < begun. */
	pthread_t thread;
	int have_thread, stop;
	unsigned long begun, served;
	int rc;
	char err[ERR_LEN];
	/* A sum asked for inside the backward pass (reducer_sum_now), served
	 * before bucket req_at. */
	double *req;
	size_t nreq;
	int req_at, req_pending, req_rc;
	char req_err[ERR_LEN];
	pthread_mutex_t mu;
	pthread_cond_t start, progress, done;
};

static struct bucket *bucket_open(struct reducer *r)
{
	if (r->nbuckets == r->cap) {
		int cap = r->cap ? 2 * r->cap : 16;
		struct bucket *b = xcalloc((size_t)cap, sizeof(*b));
		for (int i = 0; i < r->nbuckets; i++)
			b[i] = r->buckets[i]; /* planning: no thread reads them yet */
		free(r->buckets);
		r->buckets = b;
		r->cap = cap;
	}
	return &r->buckets[r->nbuckets++];
}

static size_t slice_hi(const struct grad_slice *s)
{
	return s->off + (s->rows - 1) * s->stride + s->cols;
}

/* Appends a piece to the bucket being filled, opening a new bucket when
 * the current one is full. */
static void plan_add(struct reducer *r, struct grad_slice p)
{
	struct bucket *b = r->nbuckets ? &r->buckets[r->nbuckets - 1] : NULL;
	size_t n = p.rows * p.cols;

	if (!b || b->sealed || b->npieces == BUCKET_MAX_PIECES ||
	    (b->total && b->total + n > r->bucket_elems))
		b = bucket_open(r);
	if (b->npieces && p.rows == 1 && b->pieces[b->npieces - 1].rows == 1 &&
	    slice_hi(&b->pieces[b->npieces - 1]) == p.off) {
		b->pieces[b->npieces - 1].cols += p.cols;
		b->pieces[b->npieces - 1].stride += p.cols;
	} else {
		b->pieces[b->npieces++] = p;
	}
	b->lo = b->total ? (p.off < b->lo ? p.off : b->lo) : p.off;
	b->hi = slice_hi(&p) > b->hi ? slice_hi(&p) : b->hi;
	b->total += n;
}

/* Buckets in the order the backward pass finishes them: layers last to
 * first; a kernel too big for one bucket by blocks of input features
 * (columns), each a bucket of its own, then its bias; a batch
 * normalisation's parameters, then its batch statistics (model.h). */
static void plan(struct reducer *r)
{
	for (int i = r->model->nlayers - 1; i >= 0; i--) {
		const struct layer *l = &r->model->layers[i];
		size_t both = l->w_len + l->b_len;
		if (both > 0 && (l->kind != LAYER_DENSE || l->w_len <= r->bucket_elems))
			plan_add(r, (struct grad_slice){l->w_off, 1, both, both});
		if (l->kind == LAYER_BATCHNORM) {
			size_t n = 2 * (size_t)l->in_c;
			plan_add(r, (struct grad_slice){r->model->nparams + l->st_off, 1, n, n});
		}
		if (both == 0 || l->kind != LAYER_DENSE || l->w_len <= r->bucket_elems)
			continue;
		size_t out = (size_t)l->out_c, in = (size_t)l->units_in;
		size_t cols = r->bucket_elems / out < 16 ? 16 : r->bucket_elems / out;
		for (size_t c0 = 0; c0 < in; c0 += cols) {
			struct bucket *b = bucket_open(r);
			size_t nc = in - c0 < cols ? in - c0 : cols;
			b->pieces[0] = (struct grad_slice){l->w_off + c0, out, nc, in};
			b->npieces = 1;
			b->total = out * nc;
			b->lo = l->w_off + c0;
			b->hi = slice_hi(&b->pieces[0]);
			b->sealed = 1;
		}
		if (l->b_len)
			plan_add(r, (struct grad_slice){l->b_off, 1, l->b_len, l->b_len});
	}
}

static size_t overlap(size_t a0, size_t a1, size_t b0, size_t b1)
{
	size_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/* Elements of the contiguous range [a, b) that piece p holds. */
static size_t range_in_piece(size_t a, size_t b, const struct grad_slice *p)
{
	size_t n = 0;

	if (p->rows == 1)
		return overlap(a, b, p->off, p->off + p->cols);
	for (size_t row = a > p->off ? (a - p->off) / p->stride : 0; row < p->rows; row++) {
		size_t start = p->off + row * p->stride;
		if (start >= b)
			break;
		n += overlap(a, b, start, start + p->cols);
	}
	return n;
}

/* Elements of slice s that piece p holds. Column blocks of the same matrix
 * (the common case) are counted without walking their rows. */
static size_t slice_in_piece(const struct grad_slice *s, const struct grad_slice *p)
{
	size_t n = 0;

	if (overlap(s->off, slice_hi(s), p->off, slice_hi(p)) == 0)
		return 0;
	if (s->rows == p->rows && s->stride == p->stride && s->rows > 1 &&
	    (s->off > p->off ? s->off - p->off : p->off - s->off) < s->stride)
		return s->rows * overlap(s->off, s->off + s->cols, p->off, p->off + p->cols);
	for (size_t row = 0; row < s->rows; row++) {
		size_t start = s->off + row * s->stride;
		n += range_in_piece(start, start + s->cols, p);
	}
	return n;
}

void reducer_grad_ready(void *ctx, const struct grad_slice *s)
{
	struct reducer *r = ctx;

	if (!r->have_thread) {
		r->apply(r->ctx, s);
		return;
	}
	for (int i = 0; i < r->nbuckets; i++) {
		struct bucket *b = &r->buckets[i];
		size_t n = 0;
		if (overlap(s->off, slice_hi(s), b->lo, b->hi) == 0)
			continue;
		for (int k = 0; k < b->npieces; k++)
			n += slice_in_piece(s, &b->pieces[k]);
		if (n && atomic_fetch_add(&b->ready, n) + n == b->total) {
			pthread_mutex_lock(&r->mu);
			pthread_cond_signal(&r->progress);
			pthread_mutex_unlock(&r->mu);
		}
	}
}

/* A sum asked for before bucket i, if one is waiting: -1 if it failed. The
 * caller holds mu, which is released while it travels. */
static int serve_request(struct reducer *r, int i, char *err)
{
	int rc = 0;

	if (r->req_pending && r->req_at <= i) {
		pthread_mutex_unlock(&r->mu);
		rc = comm_allreduce_f64(r->comm, r->req, r->nreq, err);
		pthread_mutex_lock(&r->mu);
		r->req_rc = rc;
		if (rc < 0)
			memcpy(r->req_err, err, ERR_LEN);
		r->req_pending = 0;
		pthread_cond_broadcast(&r->done);
	}
	return rc;
}

/* One step's work on the communication thread. */
static int serve_step(struct reducer *r, char *err)
{
	if (comm_allreduce_f64(r->comm, r->small, r->nsmall, err) < 0)
		return -1;
	for (int i = 0; i < r->nbuckets; i++) {
		struct bucket *b = &r->buckets[i];
		pthread_mutex_lock(&r->mu);
		while (atomic_load(&b->ready) < b->total) {
			if (r->req_pending && r->req_at <= i) {
				if (serve_request(r, i, err) < 0) {
					pthread_mutex_unlock(&r->mu);
					return -1;
				}
				continue;
			}
			pthread_cond_wait(&r->progress, &r->mu);
		}
		pthread_mutex_unlock(&r->mu);
		if (comm_allreduce(r->comm, r->model->grads, b->pieces, b->npieces, err) < 0)
			return -1;
	}
	return 0;
}

static void *comm_thread(void *arg)
{
	struct reducer *r = arg;
	char err[ERR_LEN];

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (r->served == r->begun && !r->stop)
			pthread_cond_wait(&r->start, &r->mu);
		if (r->stop)
			break;
		pthread_mutex_unlock(&r->mu);
		err[0] = '\0';
		int rc = r->rc < 0 ? -1 : serve_step(r, err);
		pthread_mutex_lock(&r->mu);
		if (rc < 0 && r->rc == 0) {
			r->rc = -1;
			memcpy(r->err, err, sizeof(err));
		}
		r->served++;
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

struct reducer *reducer_new(struct comm *c, struct model *m, size_t bucket_bytes,
                            reducer_apply_fn apply, void *ctx)
{
	struct reducer *r = xcalloc(1, sizeof(*r));

	r->comm = c;
	r->model = m;
	r->apply = apply;
	r->ctx = ctx;
	r->bucket_elems = (bucket_bytes ? bucket_bytes : REDUCER_BUCKET_BYTES) / sizeof(float);
	if (r->bucket_elems == 0)
		r->bucket_elems = 1;
	plan(r);
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->start, NULL);
	pthread_cond_init(&r->progress, NULL);
	pthread_cond_init(&r->done, NULL);
	if (c->world > 1) {
		if (pthread_create(&r->thread, NULL, comm_thread, r) != 0)
			die("reducer: cannot start the communication thread");
		r->have_thread = 1;
	}
	return r;
}

void reducer_free(struct reducer *r)
{
	if (!r)
		return;
	if (r->have_thread) {
		pthread_mutex_lock(&r->mu);
		r->stop = 1;
		pthread_cond_signal(&r->start);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->thread, NULL);
	}
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->start);
	pthread_cond_destroy(&r->progress);
	pthread_cond_destroy(&r->done);
	free(r->buckets);
	free(r);
}

void reducer_begin(struct reducer *r, double *small, size_t nsmall)
{
	if (!r->have_thread)
		return;
	for (int i = 0; i < r->nbuckets; i++)
		atomic_store(&r->buckets[i].ready, 0);
	pthread_mutex_lock(&r->mu);
	r->small = small;
	r->nsmall = nsmall < REDUCER_MAX_SMALL ? nsmall : REDUCER_MAX_SMALL;
	r->begun++;
	pthread_cond_signal(&r->start);
	pthread_mutex_unlock(&r->mu);
}

/* Waits, holding mu, until the step begun is served; its result, with the
 * communicator's message in err on failure. */
static int wait_served(struct reducer *r, char *err)
{
	while (r->served < r->begun)
		pthread_cond_wait(&r->done, &r->mu);
	if (r->rc < 0)
		memcpy(err, r->err, ERR_LEN);
	return r->rc;
}

int reducer_finish(struct reducer *r, char *err)
{
	int rc;

	if (!r->have_thread)
		return 0;
	pthread_mutex_lock(&r->mu);
	rc = wait_served(r, err);
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* The buckets complete from the first on: the same on every worker at the
 * same point of the backward pass, since which slices have been reported
 * there depends on the model alone. */
static int complete_prefix(struct reducer *r)
{
	int i = 0;

	while (i < r->nbuckets && atomic_load(&r->buckets[i].ready) == r->buckets[i].total)
		i++;
	return i;
}

int reducer_sum_now(struct reducer *r, double *v, size_t n, char *err)
{
	int rc;

	if (!r->have_thread)
		return 0;
	pthread_mutex_lock(&r->mu);
	int at = complete_prefix(r);
	if (r->rc < 0) {
		memcpy(err, r->err, ERR_LEN);
		pthread_mutex_unlock(&r->mu);
		return -1;
	}
	if (r->served < r->begun && at < r->nbuckets) {
		/* The communication thread sends the buckets before at, then
		 * this sum, then waits for bucket at, which cannot fill while
		 * this thread waits here. */
		r->req = v;
		r->nreq = n;
		r->req_at = at;
		r->req_pending = 1;
		pthread_cond_signal(&r->progress);
		while (r->req_pending && r->served < r->begun)
			pthread_cond_wait(&r->done, &r->mu);
		if (r->req_pending) { /* its step failed before it was served */
			r->req_pending = 0;
			rc = -1;
			memcpy(err, r->err, ERR_LEN);
		} else {
			rc = r->req_rc;
			if (rc < 0)
				memcpy(err, r->req_err, ERR_LEN);
		}
		pthread_mutex_unlock(&r->mu);
		return rc;
	}
	/* No step in progress, or every bucket of it complete: once it is
	 * served, the communicator is this thread's. */
	rc = wait_served(r, err);
	pthread_mutex_unlock(&r->mu);
	return rc < 0 ? -1 : comm_allreduce_f64(r->comm, v, n, err);
}

int reducer_buckets(const struct reducer *r)
{
	return r->nbuckets;
}
