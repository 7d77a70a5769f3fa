/* training.h - where a job's training stands, as its chief reports it and
 * as the job's status.training shows it.
 *
 * The chief of a job POSTs a report (serve/status_server.c) at most every
 * few seconds and at each epoch's end:
 *
 *   {"training": {"epoch": 2, "epochs": 5, "step": 120, "stepsPerEpoch": 469,
 *                 "globalStep": 589, "totalSteps": 2345, "loss": 0.4123,
 *                 "metrics": {"accuracy": 0.861}, "validation": {"loss": 0.45,
 *                 "accuracy": 0.84}, "samplesPerSecond": 1830.5,
 *                 "estimatedSecondsLeft": 61, "lastBackupStep": 469,
 *                 "learningRate": 0.001}}
 *
 * Every member is optional but for globalStep. A report is someone's
 * bytes over the network: it is parsed strictly (training_report_parse),
 * with caps on its size, its number of metrics and their names, and a
 * report that breaks one is refused whole, saying why. The operator
 * adds what it derives (percent, the ETA as kubectl shows it, when it was
 * reported) and writes the object into the job's status with its other
 * changes. Reading the status back (training_status_parse) is tolerant,
 * as job_status_parse is: a user may have edited it.
 */
#ifndef MWJ_TRAINING_H
#define MWJ_TRAINING_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define TRAINING_REPORT_MAX  16384 /* bytes of a report's body: 16 KiB */
#define TRAINING_METRICS_MAX 16    /* in metrics, and in validation */
#define TRAINING_NAME_LEN    64    /* a metric's name, NUL included */
#define TRAINING_ETA_LEN     32    /* "12d3h", "4m10s" */
#define TRAINING_TIME_LEN    32    /* "2026-11-25T01:02:03Z" */
#define TRAINING_UID_LEN     64    /* a pod's uid */
/* Steps and epochs: what a JSON number holds exactly. */
#define TRAINING_COUNT_MAX 9007199254740992LL

struct training_metric {
	char name[TRAINING_NAME_LEN]; /* [A-Za-z0-9_.:-], 1 to 63 characters */
	double value;                 /* finite */
};

/* -1 in a count means unknown (left out of the status); NAN-free: an
 * unknown loss or rate has its has_ flag 0. */
struct training_status {
	int present;                        /* 0: no report yet: status.training is left out */
	long long epoch, epochs;            /* epoch counts from 1 */
	long long step, steps_per_epoch;    /* step: completed steps in this epoch */
	long long global_step, total_steps; /* over the whole run */
	int percent;                        /* derived: 0-100, -1 when total_steps is unknown */
	int has_loss;
	double loss;
	struct training_metric metrics[TRAINING_METRICS_MAX];
	int nmetrics;
	struct training_metric validation[TRAINING_METRICS_MAX]; /* of the last epoch */
	int nvalidation;
	int has_rate;
	double samples_per_second;  /* over the last minute */
	long long eta_seconds;      /* -1: unknown */
	char eta[TRAINING_ETA_LEN]; /* derived: eta_seconds as kubectl writes an age */
	long long last_backup_step; /* -1: none yet */
	int has_learning_rate;
	double learning_rate;
	char reported[TRAINING_TIME_LEN]; /* when the operator received it (RFC 3339) */
	/* Not in the status. The chief's pod uid, as its token's review
	 * said. The step reported last before this report when it went back
	 * or came from another chief (a chief that resumed from a backup), as
	 * reports.c saw it, -1 when neither; new_chief: the latter;
	 * resumed_backup: the backup step of the report that went back (the
	 * backup it resumed from; later reports may name newer ones), -1 when
	 * none or unknown. */
	char chief[TRAINING_UID_LEN];
	long long resumed_from;
	int new_chief;
	long long resumed_backup;
};

/* --- Reading --- */

/* Parses a report's body (len bytes, need not be NUL-terminated) into t,
 * and derives percent and eta; reported is set to now (RFC 3339, may be
 * ""). Returns 0, or -1 with a message naming the member at fault (too
 * large, not JSON, a wrong type, out of range, a bad metric name, too many
 * metrics, a step beyond totalSteps); t is then zeroed. */
int training_report_parse(struct training_status *t, const char *body, size_t len, const char *now,
                          char *err);

/* Reads status.training back into t; anything missing or malformed is
 * left unknown, a malformed metric dropped. obj NULL: no report. */
void training_status_parse(struct training_status *t, const cJSON *obj);

/* --- Writing --- */

/* The status.training object. The caller deletes it; NULL when nothing
 * was reported (t->present 0). */
cJSON *training_status_to_json(const struct training_status *t);

/* seconds as kubectl writes a duration (HumanDuration's short form:
 * "45s", "4m10s", "3h2m", "12d3h", "2y30d") into out (TRAINING_ETA_LEN);
 * "" for a negative one. */
void training_format_eta(long long seconds, char *out);

/* Forgets where t went back from (resumed_from, resumed_backup,
 * new_chief): said once, in the status write that took it. */
void training_forget_resume(struct training_status *t);

#endif
