/* backend_cuda.c - the training step on the worker's GPUs (backend.h).
 *
 * One replica per GPU, as MirroredStrategy places them: each holds the
 * whole state in the model's layout (model_cuda.h) and takes its slice of
 * the worker's batch. A step is two parts on each replica's stream:
 *   grads   the batch's forward and backward passes, and the gradients
 *           summed across every replica of every worker, bucket by bucket,
 *           last layer first, on a second stream while the backward pass
 *           goes on (the batch normalisation layers' batch statistics,
 *           which model.h lays out after the gradients, in a bucket of
 *           their own, first: the forward pass has finished them); with
 *           them the step's loss, count and metrics, the preemption
 *           notices and the replicas, summed as doubles and copied to the
 *           host;
 *   update  the optimizer, then the moving statistics toward the batch
 *           statistics' mean over every replica (model_update_state's
 *           rule), on every replica alike.
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
 * step: an IDX split as the file's bytes (a quarter of the floats' size to
 * copy, and the GPU scales them), NumPy data as the floats the CPU's
 * gather makes. What changes from step to step inside a captured part is
 * read from pinned host memory by copies in the part itself: the stream
 * position dropout's masks take, the notice, Adam's step size. With one
 * GPU both parts are captured once as CUDA graphs (one for each input
 * buffer) after a first step run directly, and each step is then two
 * graph launches: a small model's step is mostly launch overhead.
 * Not with NCCL: a graph that holds NCCL's work holds its communicator,
 * which must be aborted at once when a peer is lost. MWJ_CUDA_GRAPHS=0
 * turns them off; a capture that fails is logged once and the steps run
 * directly.
 */
#include <stdio.h>
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
	void *in[2]; /* (n, in_len): the two input buffers, bytes (IDX) or floats */
	float *y[2]; /* (n, T): targets */
	float *x;    /* (n, in_len): an IDX step's input, scaled */
	cudaEvent_t copied[2], layer_done[MODEL_MAX_LAYERS], reduced, grads_done;
};

/* What a replica's step reads from the host, copied in by the step
 * itself: its notice and its count, the two last words of its sums, and
 * the stream position of its first example. */
struct step_in {
	double notice, replicas;
	uint64_t pos;
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
	struct bucket buckets[MODEL_MAX_LAYERS + 1]; /* the statistics' too */
	size_t in_len;                               /* values of one example */
	size_t T;                                    /* targets of one example */
	int bytes;       /* the input is an IDX split's bytes, scaled on the GPU */
	float scale;     /* the split's (dataset.h), for bytes */
	size_t in_size;  /* bytes of one example's input as copied */
	size_t ngrads;   /* the gradients and the batch statistics */
	int stats_world; /* the replicas the last step's statistics were summed over */
	int collective_ms;
	/* Pinned host memory. */
	void *hx[2];  /* (batch, in_len): the worker's batch, bytes or floats */
	float *hy[2]; /* (batch, T) */
	uint64_t hpos[2];
	int hfull[2];        /* hx[k] holds the batch at hpos[k] */
	int last;            /* the buffer of the last step, -1 before the first */
	double *hsums;       /* (CUDA_SUMS) replica 0's after a step, then evaluation's */
	struct step_in *hin; /* (nrep) */
	float *halpha;       /* Adam's step size, as optimizer_begin_step computed it */
	float *hgrads;       /* (ngrads): SUM_HOST only */
	/* Evaluation's input on replica 0. */
	float *ex;
	float *ey;
	enum graph_state graphs;
	float graph_scale; /* the loss scale the graphs were captured with */
	int graph_world;   /* and the stats_world */
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
	if (comm_allreduce_device(b->comm, bufs, CUDA_SUMS, COMM_F64, streams, err) < 0)
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
		const float *x = rep->in[k];
		CUDA_CHECK(cudaSetDevice(r));
		CUDA_CHECK(cudaMemcpyAsync(rep->m.sums + CUDA_SUM_NOTICE, &cb->hin[r].notice,
		                           2 * sizeof(double), cudaMemcpyHostToDevice, st));
		CUDA_CHECK(cudaMemcpyAsync(rep->m.pos, &cb->hin[r].pos, sizeof(uint64_t),
		                           cudaMemcpyHostToDevice, st));
		if (cb->bytes) {
			kernel_pixels(rep->x, rep->in[k], (long)rep->n * (long)cb->in_len,
			              cb->scale, st);
			x = rep->x;
		}
		cuda_model_forward(&rep->m, x, rep->n, 1);
		cuda_model_loss(&rep->m, b->loss, rep->y[k], rep->n, scale, 1);
		cuda_model_backward(&rep->m, x, rep->n,
		                    cb->sum == SUM_DEVICE ? on_layer_done : NULL, rep);
	}
	if (cb->sum == SUM_DEVICE && enqueue_device_sums(cb, b, err) < 0)
		return -1;
	CUDA_CHECK(cudaSetDevice(0));
	CUDA_CHECK(cudaMemcpyAsync(cb->hsums, cb->rep[0].m.sums, CUDA_SUMS * sizeof(double),
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

/* The second part: the optimizer and the moving statistics on every
 * replica. */
static void enqueue_update(struct cuda_backend *cb, struct backend *b)
{
	long n = (long)b->model->nparams;

	for (int r = 0; r < cb->nrep; r++) {
		CUDA_CHECK(cudaSetDevice(r));
		if (n)
			enqueue_rule(cb, &cb->rep[r], b->opt, n);
		cuda_model_update_state(&cb->rep[r].m, cb->stats_world);
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
	cb->graph_world = cb->stats_world;
	log_debug("cuda: the step is captured as CUDA graphs");
}

/* --- The input batches --- */

/* Gathers the worker's batch at pos into host buffer k and starts its
 * copies to every replica's buffer k. */
static void stage(struct cuda_backend *cb, struct backend *b, int k, uint64_t pos)
{
	for (int r = 0; r < cb->nrep; r++)
		CUDA_CHECK(cudaEventSynchronize(cb->rep[r].copied[k])); /* hx[k] is free */
	if (cb->bytes)
		dataset_stream_gather_bytes(b->stream, cb->hx[k], cb->hy[k], pos,
		                            (uint32_t)b->batch);
	else
		dataset_stream_gather(b->stream, cb->hx[k], cb->hy[k], pos, (uint32_t)b->batch);
	for (int r = 0; r < cb->nrep; r++) {
		struct replica *rep = &cb->rep[r];
		CUDA_CHECK(cudaSetDevice(r));
		CUDA_CHECK(cudaMemcpyAsync(
		    rep->in[k], (const char *)cb->hx[k] + (size_t)rep->lo * cb->in_size,
		    (size_t)rep->n * cb->in_size, cudaMemcpyHostToDevice, rep->copy));
		CUDA_CHECK(cudaMemcpyAsync(rep->y[k], cb->hy[k] + (size_t)rep->lo * cb->T,
		                           (size_t)rep->n * cb->T * sizeof(float),
		                           cudaMemcpyHostToDevice, rep->copy));
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
	size_t n = cb->ngrads;
	struct replica *rep = &cb->rep[0];
	struct grad_slice all = {0, 1, n, n};

	CUDA_CHECK(cudaSetDevice(0));
	CUDA_CHECK(cudaMemcpyAsync(cb->hgrads, rep->m.grads, n * sizeof(float),
	                           cudaMemcpyDeviceToHost, rep->m.stream));
	CUDA_CHECK(cudaStreamSynchronize(rep->m.stream));
	if (comm_allreduce(b->comm, cb->hgrads, &all, 1, err) < 0 ||
	    comm_allreduce_f64(b->comm, cb->hsums, CUDA_SUMS, err) < 0)
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

	/* One notice per worker: replica 0 carries it. */
	for (int r = 0; r < cb->nrep; r++)
		cb->hin[r] = (struct step_in){r == 0 && s->notice ? 1.0 : 0.0, 1.0,
		                              s->pos + (uint64_t)cb->rep[r].lo};
	for (int r = 0; r < cb->nrep; r++) {
		CUDA_CHECK(cudaSetDevice(r));
		CUDA_CHECK(cudaStreamWaitEvent(cb->rep[r].m.stream, cb->rep[r].copied[k], 0));
	}
	if (cb->graphs == GRAPHS_READY &&
	    (cb->graph_scale != s->scale || cb->graph_world != cb->stats_world)) {
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
	/* The kernels' sums: the metrics' words, the notices, the replicas. */
	metrics_from_words(&out->m, cb->hsums);
	out->notices = cb->hsums[CUDA_SUM_NOTICE];
	cb->stats_world = (int)cb->hsums[CUDA_SUM_REPLICAS];
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
	double *sums = cb->hsums + CUDA_SUMS;

	CUDA_CHECK(cudaSetDevice(0));
	for (int off = 0; off < n; off += rep->n) {
		int count = n - off < rep->n ? n - off : rep->n;
		struct metrics part;
		CUDA_CHECK(cudaMemcpyAsync(cb->ex, x + (size_t)off * cb->in_len,
		                           (size_t)count * cb->in_len * sizeof(float),
		                           cudaMemcpyHostToDevice, st));
		CUDA_CHECK(cudaMemcpyAsync(cb->ey, y + (size_t)off * cb->T,
		                           (size_t)count * cb->T * sizeof(float),
		                           cudaMemcpyHostToDevice, st));
		cuda_model_forward(&rep->m, cb->ex, count, 0);
		cuda_model_loss(&rep->m, b->loss, cb->ey, count, 0.0f, 0);
		CUDA_CHECK(cudaMemcpyAsync(sums, rep->m.sums, METRICS_WORDS * sizeof(double),
		                           cudaMemcpyDeviceToHost, st));
		CUDA_CHECK(cudaStreamSynchronize(st));
		metrics_from_words(&part, sums);
		metrics_add(total, &part);
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
	CUDA_CHECK(cudaMemcpyAsync(b->model->state, rep->m.state, b->model->nstate * sizeof(float),
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
		CUDA_CHECK(cudaMemcpyAsync(rep->m.state, b->model->state,
		                           b->model->nstate * sizeof(float), cudaMemcpyHostToDevice,
		                           rep->m.stream));
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
		cudaFree(rep->in[k]);
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
	cudaFreeHost(cb->hin);
	cudaFreeHost(cb->halpha);
	cudaFreeHost(cb->hgrads);
	cudaSetDevice(0);
	cudaFree(cb->ex);
	cudaFree(cb->ey);
	free(cb);
	free(b);
}

static void replica_init(struct replica *rep, int dev, const struct backend *b,
                         const struct cuda_backend *cb)
{
	size_t n = b->model->nparams;
	int nslots = b->opt ? b->opt->nslots : 0;
	unsigned flags = cudaEventDisableTiming;

	cuda_model_init(&rep->m, b->model, dev, rep->n);
	CUDA_CHECK(cudaStreamCreateWithFlags(&rep->copy, cudaStreamNonBlocking));
	CUDA_CHECK(cudaStreamCreateWithFlags(&rep->comm, cudaStreamNonBlocking));
	if (cb->bytes)
		CUDA_CHECK(
		    cudaMalloc((void **)&rep->x, (size_t)rep->n * cb->in_len * sizeof(float)));
	for (int k = 0; k < 2; k++) {
		CUDA_CHECK(cudaMalloc(&rep->in[k], (size_t)rep->n * cb->in_size));
		CUDA_CHECK(cudaMalloc((void **)&rep->y[k], (size_t)rep->n * cb->T * sizeof(float)));
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

/* The batch statistics first, once the backward pass has begun (the
 * forward pass wrote them), then the parameters'. */
static void plan_buckets(struct cuda_backend *cb, const struct model *m)
{
	size_t bytes = 0;
	int hi = -1, lo = 0;

	cb->nbuckets = 0;
	if (m->nstats)
		cb->buckets[cb->nbuckets++] =
		    (struct bucket){m->nlayers - 1, m->nparams, m->nstats};
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

/* The synchronized batch normalisation layer that the GPU would have to
 * sum across replicas inside its passes, or NULL: with one replica in
 * all, the layer's batch is the global batch, as on the CPU. */
static const struct layer *synchronized_across(const struct model *m, int replicas, int workers)
{
	for (int i = 0; i < m->nlayers && (replicas > 1 || workers > 1); i++)
		if (m->layers[i].kind == LAYER_BATCHNORM && m->layers[i].synchronized)
			return &m->layers[i];
	return NULL;
}

/* Every layer, activation, loss and metric the CPU trains, on IDX or
 * NumPy data, but one thing: batch normalisation synchronized across
 * replicas (Keras' synchronized=True with more than one GPU or worker),
 * whose statistics must be summed inside the forward and backward passes;
 * the CPU does that. */
int backend_cuda_supports(const struct model *m, const struct keras_model *km,
                          const struct loss_spec *loss, int replicas, int workers, char *err)
{
	const struct layer *l = synchronized_across(m, replicas, workers);
	char name[2 * KERAS_NAME_LEN + 16];

	(void)loss; /* every loss of loss.h runs in the loss kernel */
	if (!l)
		return 0;
	if (km && l->source >= 0 && l->source < km->nlayers)
		snprintf(name, sizeof(name), "'%s' (%s)", km->layers[l->source].name,
		         km->layers[l->source].class_name);
	else
		snprintf(name, sizeof(name), "%d (BatchNormalization)", l->source + 1);
	return err_set(err,
	               "layer %s has synchronized: true, and the CUDA backend does not yet "
	               "synchronize batch statistics across replicas (%d GPU(s) here, %d "
	               "worker(s)); the CPU does: train this model with --device cpu",
	               name, replicas, workers);
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
	if (synchronized_across(m, replicas, c->world)) {
		backend_cuda_supports(m, NULL, loss, replicas, c->world, err);
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
	cb->T = (size_t)loss->T;
	cb->bytes = s && s->ds->kind == DATASET_IDX;
	cb->scale = s ? s->ds->scale : DATASET_RESCALE_NONE;
	cb->in_size = cb->bytes ? in_len : in_len * sizeof(float);
	cb->ngrads = m->nparams + m->nstats;
	cb->stats_world = 1;
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
		replica_init(&cb->rep[r], r, b, cb);
	}
	for (int k = 0; k < 2; k++) {
		CUDA_CHECK(
		    cudaHostAlloc(&cb->hx[k], (size_t)batch * cb->in_size, cudaHostAllocPortable));
		CUDA_CHECK(cudaHostAlloc((void **)&cb->hy[k], (size_t)batch * cb->T * sizeof(float),
		                         cudaHostAllocPortable));
	}
	CUDA_CHECK(cudaHostAlloc((void **)&cb->hsums, 2 * sizeof(double) * CUDA_SUMS,
	                         cudaHostAllocPortable));
	CUDA_CHECK(cudaHostAlloc((void **)&cb->hin, (size_t)replicas * sizeof(struct step_in),
	                         cudaHostAllocPortable));
	CUDA_CHECK(cudaHostAlloc((void **)&cb->halpha, sizeof(float), cudaHostAllocPortable));
	if (cb->sum == SUM_HOST)
		CUDA_CHECK(cudaHostAlloc((void **)&cb->hgrads, cb->ngrads * sizeof(float),
		                         cudaHostAllocPortable));
	CUDA_CHECK(cudaSetDevice(0));
	CUDA_CHECK(cudaMalloc((void **)&cb->ex, (size_t)cb->rep[0].n * in_len * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&cb->ey, (size_t)cb->rep[0].n * cb->T * sizeof(float)));
	plan_buckets(cb, m);
	cuda_push(b);
	log_info("cuda: %d replica(s) sharing a batch of %d; gradients %s%s", replicas, batch,
	         cb->sum == SUM_DEVICE ? "summed by the nccl communicator"
	         : cb->sum == SUM_HOST ? "summed through the host over the ring"
	                               : "not summed (one worker, one GPU)",
	         cb->graphs == GRAPHS_OFF ? "; CUDA graphs off" : "");
	return b;
}
