/* device.h - where a worker computes and how it sums gradients: the
 * --device and --collective choices, and how "auto" resolves.
 *
 * Like MultiWorkerMirroredStrategy, which uses the GPUs it sees and the NCCL
 * collective when there are GPUs, and the ring over gRPC otherwise:
 *   --device auto        CUDA when this binary has CUDA and a GPU is visible,
 *                        else the CPU;
 *   --collective auto    NCCL on CUDA, the TCP ring on the CPU.
 * A choice that cannot be honoured (--device cuda in a CPU-only build or
 * without a visible GPU, --collective nccl on the CPU) is a permanent error
 * (exit 1) with a message that says why, never a silent fallback.
 */
#ifndef MWJ_DEVICE_H
#define MWJ_DEVICE_H

enum device_kind { DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA };
enum collective_kind { COLLECTIVE_AUTO, COLLECTIVE_RING, COLLECTIVE_NCCL };

/* Parse "auto", "cpu", "cuda" / "auto", "ring", "nccl"; -1 if none. */
int device_parse(const char *s, enum device_kind *out);
int collective_parse(const char *s, enum collective_kind *out);
const char *device_name(enum device_kind d);
const char *collective_name(enum collective_kind c);

/* What a worker runs on, resolved from the flags, the number of workers in
 * the job, and what the machine has: gpus is the number of visible GPUs (0 in a CPU-only build, or
 * when the driver finds none) and why_none the reason there are none, for the message. gpus_wanted
 * is --gpus (0: every visible one). On success fills *dev (CPU or CUDA), *coll (RING or NCCL;
 * "auto" is RING, which stands for no collective at all, when one worker uses one GPU: nothing to
 * sum) and *replicas (GPUs used, 0 on the CPU). Returns 0, or -1 with a message in err. Pure: the
 * caller asks the driver. */
int device_resolve(enum device_kind want_dev, enum collective_kind want_coll, int gpus_wanted,
                   int workers, int gpus, const char *why_none, enum device_kind *dev,
                   enum collective_kind *coll, int *replicas, char *err);

#endif
