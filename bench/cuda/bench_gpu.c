/* bench_gpu.c - mwj-worker on the GPU (CUDA build): training throughput of
 * both models at batch 64 and 1024 per GPU, the step split into compute
 * and all-reduce, and the NCCL all-reduce's bandwidth from 4 KB to 64 MB.
 * One JSON line per figure, like the other benchmarks.
 *
 * Throughput is the real training loop (trainer_fit on Fashion-MNIST, the
 * input pipeline included): the seconds of a second epoch of --steps
 * steps, after a first epoch that warms up (and captures the CUDA graphs).
 * Each configuration runs three times, with the collective the worker
 * would use (none, for one worker on one GPU), with the NCCL communicator
 * forced (on one GPU, NCCL at world size 1), and without CUDA graphs.
 * The all-reduce alone is timed at the gradient's size on the same
 * communicator, so compute = step - all-reduce.
 *
 * Bus bandwidth is NCCL's definition for all-reduce, algbw * 2(n-1)/n for
 * n ranks: 0 at one rank, where nothing crosses a bus; the algorithm
 * bandwidth (bytes / time) is printed beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench_stats.h"
#include "comm_nccl.h"
#include "compile_config.h"
#include "err.h"
#include "gpu.h"
#include "log.h"
#include "model.h"
#include "progress.h"
#include "trainer.h"

static int fit_seconds(const char *model, int batch, long steps, enum collective_kind coll,
                       struct train_result *r)
{
	struct train_config c;
	char err[ERR_LEN];
	const char *data = getenv("MWJ_TEST_DATA");
	FILE *devnull = fopen("/dev/null", "w");
	int rc;

	static struct keras_model km;

	memset(&c, 0, sizeof(c));
	snprintf(c.model, sizeof(c.model), "%s", model);
	keras_model_release(&km);
	if (keras_model_builtin(&km, model, err) < 0 ||
	    compile_apply(&c, &km, &(struct compile_flags){0}, err) < 0) {
		fprintf(stderr, "bench_gpu: %s\n", err);
		return -1;
	}
	c.epochs = 2;
	c.steps_per_epoch = steps;
	c.batch_size = batch;
	c.seed = 42;
	c.threads = 1;
	c.rendezvous_timeout = 60;
	c.collective_timeout = 60;
	c.device = DEVICE_CUDA;
	c.collective = coll;
	c.gpus = 1;
	snprintf(c.data_dir, sizeof(c.data_dir), "%s",
	         data && data[0] ? data : "/usr/share/datasets/fashion-mnist");
	rc = trainer_fit(&c, devnull, r, err);
	fclose(devnull);
	if (rc < 0)
		fprintf(stderr, "bench_gpu: %s\n", err);
	return rc;
}

/* Seconds per all-reduce of n floats on c's GPUs, median of reps timed
 * runs of iters each. */
static double allreduce_seconds(struct comm *c, int gpus, void **bufs, void **streams, size_t n,
                                int iters)
{
	char err[ERR_LEN];
	double t[5];

	for (int rep = -1; rep < 5; rep++) {
		double t0 = progress_now();
		for (int i = 0; i < iters; i++)
			if (comm_allreduce_device(c, bufs, n, COMM_F32, streams, err) < 0)
				die("bench_gpu: %s", err);
		for (int g = 0; g < gpus; g++) {
			cudaSetDevice(g);
			cudaStreamSynchronize(streams[g]);
		}
		if (rep >= 0)
			t[rep] = (progress_now() - t0) / iters;
	}
	return bench_median(t, 5);
}

struct nccl_bench {
	struct comm comm;
	int gpus;
	void *bufs[8], *streams[8];
};

static void nccl_open(struct nccl_bench *nb, int gpus, size_t max_floats)
{
	char err[ERR_LEN];
	struct comm inner;

	nb->gpus = gpus;
	comm_init_local(&inner);
	if (comm_init_nccl(&nb->comm, &inner, gpus, 60000, 60000, err) < 0)
		die("bench_gpu: %s", err);
	for (int g = 0; g < gpus; g++) {
		cudaSetDevice(g);
		if (cudaMalloc(&nb->bufs[g], max_floats * sizeof(float)) != cudaSuccess ||
		    cudaMemset(nb->bufs[g], 0, max_floats * sizeof(float)) != cudaSuccess ||
		    cudaStreamCreate((cudaStream_t *)&nb->streams[g]) != cudaSuccess)
			die("bench_gpu: cannot set up GPU %d", g);
	}
}

static void nccl_close(struct nccl_bench *nb)
{
	for (int g = 0; g < nb->gpus; g++) {
		cudaSetDevice(g);
		cudaFree(nb->bufs[g]);
		cudaStreamDestroy(nb->streams[g]);
	}
	comm_release(&nb->comm);
}

static void bench_train(struct nccl_bench *nb, const char *model, int batch, long steps,
                        const char *gpu)
{
	struct train_result r[3];
	const char *names[3] = {"auto", "nccl", "auto, no CUDA graphs"};
	char err[ERR_LEN];
	struct keras_model km;
	struct model_size size;

	if (keras_model_builtin(&km, model, err) < 0 || model_plan(&km, batch, 0, &size, err) < 0)
		die("bench_gpu: %s", err);
	keras_model_release(&km);
	size_t nparams = size.nparams;
	for (int i = 0; i < 3; i++) {
		if (i == 2)
			setenv("MWJ_CUDA_GRAPHS", "0", 1);
		if (fit_seconds(model, batch, steps, i == 1 ? COLLECTIVE_NCCL : COLLECTIVE_AUTO,
		                &r[i]) < 0)
			exit(1);
		unsetenv("MWJ_CUDA_GRAPHS");
	}
	double ar = allreduce_seconds(&nb->comm, 1, nb->bufs, nb->streams, nparams, 50);
	for (int i = 0; i < 3; i++) {
		double ms = r[i].seconds * 1e3 / (double)steps;
		printf("{\"bench\":\"gpu_train\",\"impl\":\"mwj\",\"gpu\":\"%s\",\"model\":\"%s\","
		       "\"batch\":%d,\"optimizer\":\"sgd\",\"collective\":\"%s\",\"steps\":%ld,"
		       "\"samples_per_s\":%.1f,\"ms_per_step\":%.4f",
		       gpu, model, batch, names[i], steps, (double)batch * steps / r[i].seconds,
		       ms);
		if (i == 1)
			printf(",\"allreduce_ms\":%.4f,\"compute_ms\":%.4f,\"gradient_bytes\":%zu",
			       ar * 1e3, ms - ar * 1e3, nparams * sizeof(float));
		printf("}\n");
		fflush(stdout);
	}
}

static void bench_nccl(struct nccl_bench *nb, const char *gpu)
{
	for (size_t bytes = 4096; bytes <= ((size_t)64 << 20); bytes *= 4) {
		size_t n = bytes / sizeof(float);
		int iters = bytes <= ((size_t)1 << 20) ? 200 : 20;
		double t = allreduce_seconds(&nb->comm, nb->gpus, nb->bufs, nb->streams, n, iters);
		double algbw = (double)bytes / t / 1e9;
		double busbw = algbw * 2.0 * (nb->gpus - 1) / nb->gpus;
		printf("{\"bench\":\"nccl_allreduce\",\"gpu\":\"%s\",\"ranks\":%d,\"bytes\":%zu,"
		       "\"us\":%.2f,\"algbw_GBps\":%.2f,\"busbw_GBps\":%.2f}\n",
		       gpu, nb->gpus, bytes, t * 1e6, algbw, busbw);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	char why[ERR_LEN], gpu[256];
	long steps = 300;
	int gpus = gpu_count(why, sizeof(why));
	struct nccl_bench nb;

	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--steps") == 0)
			steps = strtol(argv[i + 1], NULL, 10);
	if (gpus == 0) {
		printf("{\"bench\":\"gpu\",\"skipped\":\"%s\"}\n", why);
		return 0;
	}
	log_set_level(LOG_WARN);
	gpu_describe(0, gpu, sizeof(gpu));
	if (gpus > 8)
		gpus = 8;
	nccl_open(&nb, gpus, (size_t)16 << 20);
	bench_nccl(&nb, gpu);
	nccl_close(&nb);
	nccl_open(&nb, 1, (size_t)4 << 20);
	const char *models[] = {"cnn", "cnn-pool"};
	for (int m = 0; m < 2; m++)
		for (int b = 64; b <= 1024; b *= 16)
			bench_train(&nb, models[m], b, steps, gpu);
	nccl_close(&nb);
	return 0;
}
