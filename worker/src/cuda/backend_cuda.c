/* backend_cuda.c - the training step on the worker's GPUs (backend.h).
 *
 * One replica per GPU, as MirroredStrategy places them: each holds the
 * whole state in the model's layout (model_cuda.h) and takes its slice of
 * the worker's batch. A step is two parts on each replica's stream:
 *   grads   the batch's forward and backward passes, and the gradients
 *           summed across every replica of every worker, bucket by bucket,
 *           last layer first, on a second stream while the backward pass
 *           goes on; with them the step's loss, correct and count, and the
 *           preemption notices, summed as doubles; those four copied to
 *           the host;
 *   update  the optimizer, on every replica alike.
 * The host waits for the first part only: if a collective failed there
 * (a lost peer, or no progress for --collective-timeout), the update is
 * never enqueued, so the state on the GPUs is that of the step before,
 * which the trainer pulls before it forms the group again.
 *
 * Gradients are summed by the NCCL communicator (comm.h's device
 * collectives), or with --collective ring through pinned host buffers and
 * the TCP ring, or not at all for one worker on one GPU.
 *
 * The next step's batch is gathered on the host into the other of two
 * pinned buffers and copied on a stream of its own while the GPU runs this
 * step, as the file's bytes: a quarter of the floats' size to copy, and
 * the GPU scales them. With one GPU both parts are captured once as CUDA graphs (one for
 * each input buffer) after a first step run directly, and each step is
 * then two graph launches: a small model's step is mostly launch overhead.
 * Not with NCCL: a graph that holds NCCL's work holds its communicator,
 * which must be aborted at once when a peer is lost. MWJ_CUDA_GRAPHS=0
 * turns them off; a capture that fails is logged once and the steps run
 * directly.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "cuda_check.h"
#include "err.h"
#include "kernels.h"
#include "log.h"
#include "model_cuda.h"
#include "net.h"
#include "reducer.h"

#define MAX_REPLICAS 64
/* Event queries between looks at the communicator and the clock. */
#define POLL_SPINS 256

struct replica {
	int lo, n; /* its examples of the worker's batch: [lo, lo + n) */
	struct cuda_model m;
	float *state; /* the optimizer's (nslots, nparams) */
	float *alpha; /* Adam's step size this step, copied from the host's */
	cudaStream_t copy, comm;
	uint8_t *px[2]; /* (n, H, W, C): the two input buffers, the file's bytes */
	float *y[2];    /* (n): class labels */
	float *x;       /* (n, H, W, C): the step's input, scaled */
	cudaEvent_t copied[2], layer_done[MODEL_MAX_LAYERS], reduced, grads_done;
};

/* A bucket: the gradients of layers lo..hi, one contiguous slice. */
struct bucket {
	int lo;
	size_t off, len;
};

enum sum_path {
	SUM_NONE,   /* one worker, one GPU */
	SUM_DEVICE, /* the communicator's device collectives (NCCL) */
	SUM_HOST,   /* through the host and the ring */
};

enum graph_state { GRAPHS_OFF, GRAPHS_NOT_YET, GRAPHS_READY };

struct cuda_backend {
	int nrep;
	struct replica rep[MAX_REPLICAS];
	enum sum_path sum;
	int nbuckets;
	struct bucket buckets[MODEL_MAX_LAYERS];
	size_t in_len; /* floats of one example */
	int collective_ms;
	/* Pinned host memory. */
	uint8_t *hx[2]; /* (batch, in_len): the worker's batch, bytes */
	float *hy[2];   /* (batch) */
	uint64_t hpos[2];
	int hfull[2];  /* hx[k] holds the batch at hpos[k] */
	int last;      /* the buffer of the last step, -1 before the first */
	double *hsums; /* (4) replica 0's sums after a step; (4) after it: evaluation's */
	double *hnotice;
	float *halpha; /* Adam's step size, as optimizer_begin_step computed it */
	float *hgrads; /* (nparams): SUM_HOST only */
	/* Evaluation's input on replica 0. */
	float *ex;
	float *ey;
	enum graph_state graphs;
	float graph_scale; /* the loss scale the graphs were captured with */
	cudaGraphExec_t graph_grads[2], graph_update;
};

/* --- Enqueuing a step's two parts --- */

static void on_layer_done(void *ctx, int layer)
{
	struct replica *rep = ctx;

	CUDA_CHECK(cudaEventRecord(rep->layer_done[layer], rep->m.stream));
}

/* The gradients of every replica summed, bucket by bucket, on their comm
 * streams, each bucket once the backward pass has finished its lowest
 * layer; then the step's sums; then each compute stream waits. */
static int enqueue_device_sums(struct cuda_backend *cb, struct backend *b, char *err)
{
	void *bufs[MAX_REPLICAS], *streams[MAX_REPLICAS];

	for (int k = 0; k < cb->nbuckets; k++) {
		const struct bucket *bk = &cb->buckets[k];
		for (int r = 0; r < cb->nrep; r++) {
			struct replica *rep = &cb->rep[r];
			CUDA_CHECK(cudaSetDevice(r));
			CUDA_CHECK(cudaStreamWaitEvent(rep->comm, rep->layer_done[bk->lo], 0));
			bufs[r] = rep->m.grads + bk->off;
			streams[r] = rep->comm;
		}
		if (comm_allreduce_device(b->comm, bufs, bk->len, COMM_F32, streams, err) < 0)
			return -1;
	}
	for (int r = 0; r < cb->nrep; r++)
		bufs[r] = cb->rep[r].m.sums;
	if (comm_allreduce_device(b->comm, bufs, 4, COMM_F64, streams, err) < 0)
		return -1;
	for (int r = 0; r < cb->nrep; r++) {
		struct replica *rep = &cb->rep[r];
		CUDA_CHECK(cudaSetDevice(r));
		CUDA_CHECK(cudaEventRecord(rep->reduced, rep->comm));
		CUDA_CHECK(cudaStreamWaitEvent(rep->m.stream, rep->reduced, 0));
	}
	return 0;
}

/* The first part of a step on input buffer k. */
static int enqueue_grads(struct cuda_backend *cb, struct backend *b, int k, float scale, char *err)
{
	for (int r = 0; r < cb->nrep; r++) {
		struct replica *rep = &cb->rep[r];
		cudaStream_t st = rep->m.stream;
		CUDA_CHECK(cudaSetDevice(r));
		/* One notice per worker: replica 0 carries it. */
		if (r == 0)
			CUDA_CHECK(cudaMemcpyAsync(rep->m.sums + 3, cb->hnotice, sizeof(double),
			                           cudaMemcpyHostToDevice, st));
		else
			CUDA_CHECK(cudaMemsetAsync(rep->m.sums + 3, 0, sizeof(double), st));
		kernel_pixels(rep->x, rep->px[k], (long)rep->n * (long)cb->in_len, st);
		cuda_model_forward(&rep->m, rep->x, rep->n);
		cuda_model_loss(&rep->m, rep->y[k], rep->n, scale, 1);
		cuda_model_backward(&rep->m, rep->x, rep->n,
		                    cb->sum == SUM_DEVICE ? on_layer_done : NULL, rep);
	}
	if (cb->sum == SUM_DEVICE && enqueue_device_sums(cb, b, err) < 0)
		return -1;
	CUDA_CHECK(cudaSetDevice(0));
	CUDA_CHECK(cudaMemcpyAsync(cb->hsums, cb->rep[0].m.sums, 4 * sizeof(double),
	                           cudaMemcpyDeviceToHost, cb->rep[0].m.stream));
	return 0;
}

/* One replica's update: optimizer.h's rule for the kind, its slots in
 * optimizer.h's layout. */
static void enqueue_rule(struct cuda_backend *cb, struct replica *rep, const struct optimizer *o,
                         long n)
{
	float *w = rep->m.params, *g = rep->m.grads, *s0 = rep->state;
	cudaStream_t st = rep->m.stream;

	switch (o->kind) {
	case OPT_SGD:
		if (o->nslots)
			kernel_sgd_momentum(w, s0, g, n, o->lr, o->momentum, o->nesterov,
			                    o->weight_decay, st);
		else
			kernel_sgd(w, g, n, o->lr, o->weight_decay, st);
		break;
	case OPT_ADAM:
	case OPT_ADAMW:
		/* Read when the update runs: the host writes the next step's
		 * only after this step's gradients, which follow this update
		 * on the stream, are done. */
		CUDA_CHECK(cudaMemcpyAsync(rep->alpha, cb->halpha, sizeof(float),
		                           cudaMemcpyHostToDevice, st));
		kernel_adam(w, s0, s0 + n, g, n, rep->alpha, o->one_minus_beta1, o->one_minus_beta2,
		            o->eps, o->lr, o->weight_decay, st);
		break;
	case OPT_ADAGRAD:
		kernel_adagrad(w, s0, g, n, o->lr, o->eps, o->weight_decay, st);
		break;
	case OPT_RMSPROP: {
		int has_mom = o->momentum > 0.0f;
		float *mom = has_mom ? s0 + n : NULL;
		float *a = o->centered ? s0 + (1 + has_mom) * n : NULL;
		kernel_rmsprop(w, s0, mom, a, g, n, o->lr, o->rho, o->one_minus_rho, o->momentum,
		               o->eps, o->weight_decay, st);
		break;
	}
	}
}

/* The second part: the optimizer on every replica. */
static void enqueue_update(struct cuda_backend *cb, struct backend *b)
{
	long n = (long)b->model->nparams;

	for (int r = 0; r < cb->nrep; r++) {
		CUDA_CHECK(cudaSetDevice(r));
		enqueue_rule(cb, &cb->rep[r], b->opt, n);
	}
}

/* --- CUDA graphs --- */

struct capture_job {
	struct cuda_backend *cb;
	struct backend *b;
	int k; /* input buffer; -1: the update */
	float scale;
};

/* Captures one part on replica 0's stream. Returns 0, or -1 with the
 * reason, leaving nothing captured. */
static int capture(const struct capture_job *j, cudaGraphExec_t *out, char *err)
{
	cudaStream_t st = j->cb->rep[0].m.stream;
	cudaGraph_t g = NULL;
	cudaError_t e;
	int rc = 0;

	*out = NULL;
	CUDA_CHECK(cudaSetDevice(0));
	cuda_capture_begin();
	e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
	if (e == cudaSuccess) {
		if (j->k >= 0)
			rc = enqueue_grads(j->cb, j->b, j->k, j->scale, err);
		else
			enqueue_update(j->cb, j->b);
		e = cudaStreamEndCapture(st, &g);
	}
	if (cuda_capture_end(rc < 0 ? NULL : err) < 0)
		rc = -1;
	if (rc == 0 && e != cudaSuccess)
		rc = err_set(err, "stream capture: %s", cudaGetErrorString(e));
	if (rc == 0) {
		e = cudaGraphInstantiate(out, g, 0);
		if (e != cudaSuccess) {
			*out = NULL;
			rc = err_set(err, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
		}
	}
	if (g)
		cudaGraphDestroy(g);
	cudaGetLastError(); /* a failed capture leaves its error behind */
	return rc;
}

static void drop_graphs(struct cuda_backend *cb)
{
	for (int k = 0; k < 2; k++)
		if (cb->graph_grads[k])
			cudaGraphExecDestroy(cb->graph_grads[k]);
	if (cb->graph_update)
		cudaGraphExecDestroy(cb->graph_update);
	cb->graph_grads[0] = cb->graph_grads[1] = cb->graph_update = NULL;
}

/* Captures both parts, for the loss scale of this group; on failure says
 * why once and leaves graphs off. */
static void make_graphs(struct cuda_backend *cb, struct backend *b, float scale)
{
	char err[ERR_LEN] = "";
	struct capture_job j = {cb, b, 0, scale};
	int rc = capture(&j, &cb->graph_grads[0], err);

	j.k = 1;
	if (rc == 0)
		rc = capture(&j, &cb->graph_grads[1], err);
	j.k = -1;
	if (rc == 0)
		rc = capture(&j, &cb->graph_update, err);
	if (rc < 0) {
		drop_graphs(cb);
		cb->graphs = GRAPHS_OFF;
		log_warn("cuda: running the steps without CUDA graphs: capture failed: %s", err);
		return;
	}
	cb->graphs = GRAPHS_READY;
	cb->graph_scale = scale;
	log_debug("cuda: the step is captured as CUDA graphs");
}

/* --- The input batches --- */

/* Gathers the worker's batch at pos into host buffer k and starts its
 * copies to every replica's buffer k. */
static void stage(struct cuda_backend *cb, struct backend *b, int k, uint64_t pos)
{
	for (int r = 0; r < cb->nrep; r++)
		CUDA_CHECK(cudaEventSynchronize(cb->rep[r].copied[k])); /* hx[k] is free */
	dataset_stream_gather_bytes(b->stream, cb->hx[k], cb->hy[k], pos, (uint32_t)b->batch);
	for (int r = 0; r < cb->nrep; r++) {
		struct replica *rep = &cb->rep[r];
		CUDA_CHECK(cudaSetDevice(r));
		CUDA_CHECK(cudaMemcpyAsync(rep->px[k], cb->hx[k] + (size_t)rep->lo * cb->in_len,
		                           (size_t)rep->n * cb->in_len, cudaMemcpyHostToDevice,
		                           rep->copy));
		CUDA_CHECK(cudaMemcpyAsync(rep->y[k], cb->hy[k] + rep->lo,
		                           (size_t)rep->n * sizeof(float), cudaMemcpyHostToDevice,
		                           rep->copy));
		CUDA_CHECK(cudaEventRecord(rep->copied[k], rep->copy));
	}
	cb->hpos[k] = pos;
	cb->hfull[k] = 1;
}

/* The buffer holding the batch at pos, staged now if it was not gathered
 * ahead. */
static int batch_at(struct cuda_backend *cb, struct backend *b, uint64_t pos)
{
	for (int k = 0; k < 2; k++)
		if (cb->hfull[k] && cb->hpos[k] == pos)
			return k;
	int k = cb->last == 0 ? 1 : 0;
	stage(cb, b, k, pos);
	return k;
}

/* --- The step --- */

/* Waits until every replica's first part is done. With device
 * collectives, a failed one, or none finished within the collective
 * time-out, is a lost peer: -1 with a message. */
static int wait_grads(struct cuda_backend *cb, struct backend *b, char *err)
{
	long long deadline = net_now_ms() + cb->collective_ms;

	for (int r = 0; r < cb->nrep; r++) {
		cudaEvent_t ev = cb->rep[r].grads_done;
		if (cb->sum != SUM_DEVICE) {
			CUDA_CHECK(cudaEventSynchronize(ev));
			continue;
		}
		for (long spin = 1;; spin++) {
			cudaError_t e = cudaEventQuery(ev);
			if (e == cudaSuccess)
				break;
			if (e != cudaErrorNotReady)
				CUDA_CHECK(e);
			if (spin % POLL_SPINS)
				continue;
			if (comm_device_status(b->comm, err) < 0)
				return -1;
			if (net_now_ms() > deadline)
				return err_set(err,
				               "the step's collectives made no progress for %d s",
				               cb->collective_ms / 1000);
		}
	}
	return 0;
}

/* SUM_HOST: the gradients and sums through the host and the ring. */
static int sum_on_host(struct cuda_backend *cb, struct backend *b, char *err)
{
	size_t n = b->model->nparams;
	struct replica *rep = &cb->rep[0];
	struct grad_slice all = {0, 1, n, n};

	CUDA_CHECK(cudaSetDevice(0));
	CUDA_CHECK(cudaMemcpyAsync(cb->hgrads, rep->m.grads, n * sizeof(float),
	                           cudaMemcpyDeviceToHost, rep->m.stream));
	CUDA_CHECK(cudaStreamSynchronize(rep->m.stream));
	if (comm_allreduce(b->comm, cb->hgrads, &all, 1, err) < 0 ||
	    comm_allreduce_f64(b->comm, cb->hsums, 4, err) < 0)
		return -1;
	CUDA_CHECK(cudaMemcpyAsync(rep->m.grads, cb->hgrads, n * sizeof(float),
	                           cudaMemcpyHostToDevice, rep->m.stream));
	return 0;
}

static int cuda_step(struct backend *b, const struct backend_step *s, struct step_sums *out,
                     char *err)
{
	struct cuda_backend *cb = b->impl;
	int k = batch_at(cb, b, s->pos);

	*cb->hnotice = s->notice ? 1.0 : 0.0;
	for (int r = 0; r < cb->nrep; r++) {
		CUDA_CHECK(cudaSetDevice(r));
		CUDA_CHECK(cudaStreamWaitEvent(cb->rep[r].m.stream, cb->rep[r].copied[k], 0));
	}
	if (cb->graphs == GRAPHS_READY && cb->graph_scale != s->scale) {
		drop_graphs(cb);
		cb->graphs = GRAPHS_NOT_YET;
	}
	/* The first step runs directly: it loads every kernel and sets NCCL's
	 * connections up, which a capture must not have to do. */
	if (cb->graphs == GRAPHS_NOT_YET && cb->last >= 0)
		make_graphs(cb, b, s->scale);
	CUDA_CHECK(cudaSetDevice(0));
	if (cb->graphs == GRAPHS_READY)
		CUDA_CHECK(cudaGraphLaunch(cb->graph_grads[k], cb->rep[0].m.stream));
	else if (enqueue_grads(cb, b, k, s->scale, err) < 0)
		return -1;
	for (int r = 0; r < cb->nrep; r++) {
		CUDA_CHECK(cudaSetDevice(r));
		CUDA_CHECK(cudaEventRecord(cb->rep[r].grads_done, cb->rep[r].m.stream));
	}
	cb->hfull[k] = 0;
	cb->last = k;
	stage(cb, b, k ^ 1, s->next_pos); /* while the GPUs work */
	if (wait_grads(cb, b, err) < 0)
		return -1;
	if (cb->sum == SUM_HOST && sum_on_host(cb, b, err) < 0)
		return -1;
	/* The kernels' sums: loss, correct, count, notices; the one metric
	 * backend_cuda_supports allows is the accuracy. */
	*out = (struct step_sums){{.loss_sum = cb->hsums[0], .count = cb->hsums[2]}, cb->hsums[3]};
	if (b->loss->nmetrics)
		out->m.sums[0] = cb->hsums[1];
	optimizer_begin_step(b->opt); /* the iteration count, and Adam's step size */
	*cb->halpha = b->opt->alpha;
	CUDA_CHECK(cudaSetDevice(0));
	if (cb->graphs == GRAPHS_READY)
		CUDA_CHECK(cudaGraphLaunch(cb->graph_update, cb->rep[0].m.stream));
	else
		enqueue_update(cb, b);
	return 0;
}

/* Replica 0 runs the examples, its batch at a time. */
static void cuda_evaluate(struct backend *b, const float *x, const float *y, int n,
                          struct metrics *total)
{
	struct cuda_backend *cb = b->impl;
	struct replica *rep = &cb->rep[0];
	cudaStream_t st = rep->m.stream;
	double *sums = cb->hsums + 4;

	CUDA_CHECK(cudaSetDevice(0));
	for (int off = 0; off < n; off += rep->n) {
		int count = n - off < rep->n ? n - off : rep->n;
		CUDA_CHECK(cudaMemcpyAsync(cb->ex, x + (size_t)off * cb->in_len,
		                           (size_t)count * cb->in_len * sizeof(float),
		                           cudaMemcpyHostToDevice, st));
		CUDA_CHECK(cudaMemcpyAsync(cb->ey, y + off, (size_t)count * sizeof(float),
		                           cudaMemcpyHostToDevice, st));
		cuda_model_forward(&rep->m, cb->ex, count);
		cuda_model_loss(&rep->m, cb->ey, count, 0.0f, 0);
		CUDA_CHECK(cudaMemcpyAsync(sums, rep->m.sums, 3 * sizeof(double),
		                           cudaMemcpyDeviceToHost, st));
		CUDA_CHECK(cudaStreamSynchronize(st));
		total->loss_sum += sums[0];
		total->count += count;
		if (b->loss->nmetrics)
			total->sums[0] += sums[1];
	}
}

/* --- Moving the state --- */

static void cuda_pull(struct backend *b)
{
	struct cuda_backend *cb = b->impl;
	struct replica *rep = &cb->rep[0];
	size_t n = b->model->nparams;

	CUDA_CHECK(cudaSetDevice(0));
	CUDA_CHECK(cudaMemcpyAsync(b->model->params, rep->m.params, n * sizeof(float),
	                           cudaMemcpyDeviceToHost, rep->m.stream));
	if (b->opt && b->opt->nslots)
		CUDA_CHECK(cudaMemcpyAsync(b->opt->state, rep->state,
		                           (size_t)b->opt->nslots * n * sizeof(float),
		                           cudaMemcpyDeviceToHost, rep->m.stream));
	CUDA_CHECK(cudaStreamSynchronize(rep->m.stream));
}

static void cuda_push(struct backend *b)
{
	struct cuda_backend *cb = b->impl;
	size_t n = b->model->nparams;

	/* On the replica's own stream, and waited for: a copy from pageable
	 * memory may return before it has reached the GPU. */
	for (int r = 0; r < cb->nrep; r++) {
		struct replica *rep = &cb->rep[r];
		CUDA_CHECK(cudaSetDevice(r));
		CUDA_CHECK(cudaMemcpyAsync(rep->m.params, b->model->params, n * sizeof(float),
		                           cudaMemcpyHostToDevice, rep->m.stream));
		if (b->opt && b->opt->nslots)
			CUDA_CHECK(cudaMemcpyAsync(rep->state, b->opt->state,
			                           (size_t)b->opt->nslots * n * sizeof(float),
			                           cudaMemcpyHostToDevice, rep->m.stream));
		CUDA_CHECK(cudaStreamSynchronize(rep->m.stream));
	}
}

/* --- Making and freeing --- */

static void replica_release(struct replica *rep, int dev)
{
	if (!rep->m.host)
		return;
	cudaSetDevice(dev);
	cudaStreamSynchronize(rep->m.stream);
	cudaStreamSynchronize(rep->copy);
	cudaStreamSynchronize(rep->comm);
	for (int k = 0; k < 2; k++) {
		cudaFree(rep->px[k]);
		cudaFree(rep->y[k]);
		cudaEventDestroy(rep->copied[k]);
	}
	cudaFree(rep->x);
	for (int i = 0; i < MODEL_MAX_LAYERS; i++)
		cudaEventDestroy(rep->layer_done[i]);
	cudaEventDestroy(rep->reduced);
	cudaEventDestroy(rep->grads_done);
	cudaFree(rep->state);
	cudaFree(rep->alpha);
	cudaStreamDestroy(rep->copy);
	cudaStreamDestroy(rep->comm);
	cuda_model_release(&rep->m);
}

static void cuda_free(struct backend *b)
{
	struct cuda_backend *cb = b->impl;

	drop_graphs(cb);
	for (int r = 0; r < cb->nrep; r++)
		replica_release(&cb->rep[r], r);
	for (int k = 0; k < 2; k++) {
		cudaFreeHost(cb->hx[k]);
		cudaFreeHost(cb->hy[k]);
	}
	cudaFreeHost(cb->hsums);
	cudaFreeHost(cb->hnotice);
	cudaFreeHost(cb->halpha);
	cudaFreeHost(cb->hgrads);
	cudaSetDevice(0);
	cudaFree(cb->ex);
	cudaFree(cb->ey);
	free(cb);
	free(b);
}

static void replica_init(struct replica *rep, int dev, const struct backend *b, size_t in_len)
{
	size_t n = b->model->nparams;
	int nslots = b->opt ? b->opt->nslots : 0;
	unsigned flags = cudaEventDisableTiming;

	cuda_model_init(&rep->m, b->model, dev, rep->n);
	CUDA_CHECK(cudaStreamCreateWithFlags(&rep->copy, cudaStreamNonBlocking));
	CUDA_CHECK(cudaStreamCreateWithFlags(&rep->comm, cudaStreamNonBlocking));
	CUDA_CHECK(cudaMalloc((void **)&rep->x, (size_t)rep->n * in_len * sizeof(float)));
	for (int k = 0; k < 2; k++) {
		CUDA_CHECK(cudaMalloc((void **)&rep->px[k], (size_t)rep->n * in_len));
		CUDA_CHECK(cudaMalloc((void **)&rep->y[k], (size_t)rep->n * sizeof(float)));
		CUDA_CHECK(cudaEventCreateWithFlags(&rep->copied[k], flags));
	}
	for (int i = 0; i < MODEL_MAX_LAYERS; i++)
		CUDA_CHECK(cudaEventCreateWithFlags(&rep->layer_done[i], flags));
	CUDA_CHECK(cudaEventCreateWithFlags(&rep->reduced, flags));
	CUDA_CHECK(cudaEventCreateWithFlags(&rep->grads_done, flags));
	if (nslots)
		CUDA_CHECK(cudaMalloc((void **)&rep->state, (size_t)nslots * n * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&rep->alpha, sizeof(float)));
}

/* Buckets of whole layers, last layer first, each closed once it holds
 * REDUCER_BUCKET_BYTES, as the CPU's reducer cuts them (a GPU sums a
 * layer's gradient as one slice, so no layer is cut). */
static void close_bucket(struct cuda_backend *cb, const struct model *m, int lo, int hi)
{
	const struct layer *top = &m->layers[hi], *bottom = &m->layers[lo];

	cb->buckets[cb->nbuckets++] =
	    (struct bucket){lo, bottom->w_off, top->b_off + top->b_len - bottom->w_off};
}

static void plan_buckets(struct cuda_backend *cb, const struct model *m)
{
	size_t bytes = 0;
	int hi = -1, lo = 0;

	cb->nbuckets = 0;
	for (int i = m->nlayers - 1; i >= 0; i--) {
		const struct layer *l = &m->layers[i];
		if (l->w_len + l->b_len == 0)
			continue;
		if (hi < 0)
			hi = i;
		bytes += (l->w_len + l->b_len) * sizeof(float);
		lo = i;
		if (bytes >= REDUCER_BUCKET_BYTES) {
			close_bucket(cb, m, lo, hi);
			hi = -1;
			bytes = 0;
		}
	}
	if (hi >= 0)
		close_bucket(cb, m, lo, hi);
}

static int choose_sum(struct cuda_backend *cb, const struct comm *c, char *err)
{
	if (comm_has_device(c))
		cb->sum = SUM_DEVICE;
	else if (cb->nrep > 1)
		return err_set(err, "%d GPUs in one worker need the nccl collective", cb->nrep);
	else
		cb->sum = c->world > 1 ? SUM_HOST : SUM_NONE;
	return 0;
}

/* What this backend trains so far: the seed models' layers (Conv2D valid
 * with stride 1 and a bias, the 2x2 max pool, Dense on flat inputs with a
 * bias, ReLU or no activation), sparse categorical cross-entropy from
 * logits with at most the accuracy, on IDX data. */
int backend_cuda_supports(const struct model *m, const struct loss_spec *loss, int idx_data,
                          char *err)
{
	const char *what = NULL;

	for (int i = 0; i < m->nlayers && !what; i++) {
		const struct layer *l = &m->layers[i];
		int act = l->act.kind == KERAS_ACT_LINEAR || l->act.kind == KERAS_ACT_RELU;
		if (l->kind == LAYER_CONV2D && act && l->conv.SH == 1 && l->conv.SW == 1 &&
		    l->conv.PT == 0 && l->conv.PL == 0 && l->conv.OH == l->in_h - l->kh + 1 &&
		    l->conv.OW == l->in_w - l->kw + 1 && l->b_len)
			continue;
		if (l->kind == LAYER_DENSE && act && l->in_h * l->in_w == 1 && l->b_len)
			continue;
		if (l->kind == LAYER_MAXPOOL2)
			continue;
		what = "a layer";
		err_set(
		    err,
		    "layer %d of the model (%s) is not one the CUDA backend runs yet: it trains "
		    "Conv2D (valid, stride 1, with a bias), MaxPooling2D 2x2 and Dense layers "
		    "with ReLU or no activation; train this model with --device cpu",
		    i + 1, m->desc);
	}
	if (what)
		return -1;
	if (loss->kind != LOSS_SPARSE_CATEGORICAL_CROSSENTROPY || !loss->logits ||
	    m->output_logits || loss->nmetrics > 1 ||
	    (loss->nmetrics == 1 && loss->metrics[0] != METRIC_SPARSE_CATEGORICAL_ACCURACY))
		return err_set(err,
		               "the CUDA backend trains with sparse categorical cross-entropy "
		               "from logits and accuracy only, so far: train with --device cpu");
	if (!idx_data)
		return err_set(err,
		               "the CUDA backend reads IDX data only, so far: train NumPy data "
		               "with --device cpu");
	return 0;
}

static const struct backend_ops CUDA_OPS = {
    "cuda", cuda_step, cuda_evaluate, cuda_pull, cuda_push, cuda_free,
};

struct backend *backend_new_cuda(struct model *m, const struct loss_spec *loss, struct optimizer *o,
                                 struct comm *c, struct dataset_stream *s, int batch, int replicas,
                                 int collective_ms, char *err)
{
	struct backend *b;
	struct cuda_backend *cb;
	const char *graphs = getenv("MWJ_CUDA_GRAPHS");
	size_t in_len = m->in_len;

	if (replicas < 1 || replicas > MAX_REPLICAS || batch < replicas) {
		err_set(err, "cuda: %d GPUs cannot share a batch of %d", replicas, batch);
		return NULL;
	}
	cb = xcalloc(1, sizeof(*cb));
	cb->nrep = replicas;
	if (choose_sum(cb, c, err) < 0) {
		free(cb);
		return NULL;
	}
	b = xcalloc(1, sizeof(*b));
	*b = (struct backend){&CUDA_OPS, m, loss, o, c, s, batch, cb};
	cb->in_len = in_len;
	cb->collective_ms = collective_ms;
	cb->last = -1;
	/* Not with NCCL in the graphs: a graph holding NCCL's work keeps its
	 * communicator from being aborted after a lost peer. */
	cb->graphs = replicas == 1 && cb->sum != SUM_DEVICE && !(graphs && strcmp(graphs, "0") == 0)
	                 ? GRAPHS_NOT_YET
	                 : GRAPHS_OFF;
	for (int r = 0; r < replicas; r++) {
		cb->rep[r].lo = (int)((long)r * batch / replicas);
		cb->rep[r].n = (int)((long)(r + 1) * batch / replicas) - cb->rep[r].lo;
		replica_init(&cb->rep[r], r, b, in_len);
	}
	for (int k = 0; k < 2; k++) {
		CUDA_CHECK(cudaHostAlloc((void **)&cb->hx[k], (size_t)batch * in_len,
		                         cudaHostAllocPortable));
		CUDA_CHECK(cudaHostAlloc((void **)&cb->hy[k], (size_t)batch * sizeof(float),
		                         cudaHostAllocPortable));
	}
	CUDA_CHECK(cudaHostAlloc((void **)&cb->hsums, 8 * sizeof(double), cudaHostAllocPortable));
	CUDA_CHECK(cudaHostAlloc((void **)&cb->hnotice, sizeof(double), cudaHostAllocPortable));
	CUDA_CHECK(cudaHostAlloc((void **)&cb->halpha, sizeof(float), cudaHostAllocPortable));
	if (cb->sum == SUM_HOST)
		CUDA_CHECK(cudaHostAlloc((void **)&cb->hgrads, m->nparams * sizeof(float),
		                         cudaHostAllocPortable));
	CUDA_CHECK(cudaSetDevice(0));
	CUDA_CHECK(cudaMalloc((void **)&cb->ex, (size_t)cb->rep[0].n * in_len * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&cb->ey, (size_t)cb->rep[0].n * sizeof(float)));
	plan_buckets(cb, m);
	cuda_push(b);
	log_info("cuda: %d replica(s) sharing a batch of %d; gradients %s%s", replicas, batch,
	         cb->sum == SUM_DEVICE ? "summed by the nccl communicator"
	         : cb->sum == SUM_HOST ? "summed through the host over the ring"
	                               : "not summed (one worker, one GPU)",
	         cb->graphs == GRAPHS_OFF ? "; CUDA graphs off" : "");
	return b;
}
