/* tf_config.h - TensorFlow's TF_CONFIG cluster description.
 *
 * TF_CONFIG is the JSON TensorFlow reads to find its peers:
 *
 *   {"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"]},
 *    "task": {"type": "worker", "index": 1}}
 *
 * mwj trains synchronously like MultiWorkerMirroredStrategy, so only "chief"
 * and "worker" tasks take part. Ranks follow TensorFlow's order: the chief is
 * rank 0 if there is one, then the workers in index order; without a chief,
 * worker 0 is rank 0 and acts as the chief. Other top-level keys
 * ("environment", "rpc_layer", ...) and extra "task" keys are ignored; empty
 * "ps" and "evaluator" lists are accepted, non-empty ones refused.
 *
 * Every error message begins with "TF_CONFIG: " and names the offending
 * member or entry, e.g. "TF_CONFIG: 'cluster.worker[2]': bad port in
 * 'w2:99999': '99999' is out of range [1, 65535]". Untrusted strings quoted in
 * messages are cut short and their non-printable bytes shown as '?'.
 */
#ifndef MWJ_TF_CONFIG_H
#define MWJ_TF_CONFIG_H

#include <stddef.h>

#define TF_CONFIG_MAX_WORKERS 4096 /* world size cap */
#define TF_CONFIG_HOST_LEN    254  /* a DNS name is at most 253 characters */
/* The largest MWJ_TF_CONFIG_FILE read: a ConfigMap holds at most 1 MiB, and
 * 4096 workers with the longest names a MultiWorkerJob allows take about
 * 800 KB. */
#define TF_CONFIG_FILE_MAX_BYTES (4u << 20)

/* One "host:port" entry. host is a DNS name or IPv4 address (letters, digits,
 * '-', '.', '_') or an IPv6 literal without its brackets. port is 1..65535,
 * or 0 in the single-worker default, meaning nothing needs to listen. */
struct tf_address {
	char host[TF_CONFIG_HOST_LEN];
	int port;
};

struct tf_config {
	int world;                /* chief (if any) + workers */
	int rank;                 /* this task's position in addrs */
	int has_chief_task;       /* 1 if "cluster.chief" lists an address, else 0 */
	char task_type[16];       /* "chief" or "worker" */
	int task_index;           /* "task.index" */
	struct tf_address *addrs; /* (world) in rank order, owned */
};

/* Parsing. c is overwritten: release a previous result first. */

/* Parses text (len bytes, need not be NUL-terminated) and validates it: known
 * task types only, one chief at most, 1..TF_CONFIG_MAX_WORKERS tasks, the
 * task present in the cluster, every address well formed and no address
 * listed twice (hosts compared case-insensitively), and no "\u0000" in any
 * string, which cJSON would silently cut at. Returns 0, or -1 with a message
 * in err (ERR_LEN) and c zeroed. Dies only on out-of-memory. */
int tf_config_parse(struct tf_config *c, const char *text, size_t len, char *err);

/* Reads the cluster from the environment:
 *   TF_CONFIG            the JSON itself; when set and not empty, it wins;
 *   MWJ_TF_CONFIG_FILE   the path of a file holding the same JSON, for a
 *                        cluster too large for one environment variable
 *                        (Linux refuses any over 128 KiB); the operator
 *                        mounts it from a ConfigMap. Its "task" may be left
 *                        out: the task is then worker MWJ_WORKER_INDEX.
 * When both are set they must describe the same cluster and task, or the
 * call fails naming both. Neither set (or both empty) means a single
 * worker on its own: world 1, rank 0, task "worker" 0, no chief, and
 * addrs[0] = {"localhost", 0}, port 0 meaning no peer will ever connect.
 * The file is read whole, and refused when larger than
 * TF_CONFIG_FILE_MAX_BYTES. Returns 0, or -1 with a message in err: as
 * tf_config_parse()'s, or beginning "MWJ_TF_CONFIG_FILE '<path>': " for
 * the file. */
int tf_config_from_env(struct tf_config *c, char *err);

/* Frees addrs and zeroes c. Accepts NULL and a zeroed struct; calling it
 * twice is harmless. */
void tf_config_release(struct tf_config *c);

/* Formatting. */

/* Writes "host:port", or "[host]:port" for an IPv6 host, into out (n bytes,
 * NUL-terminated and cut short if too small; nothing is written if n is 0). */
void tf_address_format(const struct tf_address *a, char *out, size_t n);

/* Builds the TF_CONFIG the operator gives worker index of n ("host:port"
 * strings in workers): {"cluster":{"worker":[...]},"task":{"type":"worker",
 * "index":i}}. The result is checked with tf_config_parse(), so a worker never
 * receives a TF_CONFIG it would refuse. Returns a malloc'd string the caller
 * frees, or NULL with a message in err (ERR_LEN). */
char *tf_config_format(const char *const *workers, int n, int index, char *err);

/* Parses the TF_CONFIG of worker index among n workers listening on
 * 127.0.0.1 at ports: benchmarks and tests that run a job on one host.
 * Returns 0, or -1 with a message in err. */
int tf_config_loopback(struct tf_config *c, const int *ports, int n, int index, char *err);

#endif
