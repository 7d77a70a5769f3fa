/* preempt.h - the preemption notice: SIGTERM, which Kubernetes sends before
 * it kills a pod (and SIGINT, for a person at a terminal).
 *
 * The handler only records the signal. The trainer reads it once per step
 * and sends it along in that step's all-reduce, so that every worker learns
 * of it at the same step and the chief can write a backup there (see
 * trainer.c). Blocking waits that would outlast a pod's grace period
 * (rendezvous.c) poll it and give up.
 */
#ifndef MWJ_PREEMPT_H
#define MWJ_PREEMPT_H

/* Installs the handlers for SIGTERM and SIGINT (without SA_RESTART, so that
 * a blocking call returns EINTR and its loop looks at the flag), and ignores
 * SIGXFSZ, so that a file-size limit fails a write with EFBIG, which the
 * backup writer reports, instead of killing the worker. */
void preempt_install(void);

/* The signal received, or 0 if none has been. */
int preempt_signal(void);

/* For tests: forgets a received signal. */
void preempt_reset(void);

#endif
