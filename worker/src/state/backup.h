/* backup.h - the chief's backups while it trains, and the restore at start
 * (the file format and directory rules are in checkpoint.h).
 *
 * A backup is written on a thread of its own: backup_start copies the state,
 * which takes a few milliseconds, and training goes on while the file is
 * written and flushed to disk. A write that fails (a full disk, a
 * permission) is logged and changes nothing: the previous backups stay, and
 * training goes on.
 */
#ifndef MWJ_BACKUP_H
#define MWJ_BACKUP_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

#define BACKUP_NONE UINT64_MAX

struct backup;
struct worker_metrics;

/* A writer of backups into dir for a model of nparams parameters and
 * nstate floats of state (model.h), and an optimizer with nslots state
 * slots; backup_start copies all three, so that training goes on while
 * the copy is written. dir is copied. Freed with backup_free,
 * which waits for a write in flight (NULL accepted). */
struct backup *backup_new(const char *dir, size_t nparams, size_t nstate, int nslots);
void backup_free(struct backup *b);

/* Counts each write's outcome, time and file size into m from now on
 * (worker_metrics_backup); call before the first backup_start. */
void backup_set_metrics(struct backup *b, struct worker_metrics *m);

/* Copies c, its parameters and its optimizer state, and starts writing
 * them, once the write before has finished. The outcome is logged. */
void backup_start(struct backup *b, const struct checkpoint *c);

/* Waits until no write is in flight. Returns 0 if the last write succeeded
 * (or none was started), -1 if it failed. */
int backup_wait(struct backup *b);

/* The global step of the last backup started, or BACKUP_NONE. */
uint64_t backup_last_step(const struct backup *b);

/* Loads the newest sound backup in dir into c (see checkpoint_load for what
 * c must hold on entry), logging each damaged one it passes over, and
 * checks that run can go on from its position (checkpoint_check_position).
 * Returns 1 if one was loaded, 0 if dir holds none, and -1 with a message
 * if the newest sound backup belongs to another model or format, or holds
 * a position run cannot take up, or if there are backups but none is
 * sound: starting over, or over an older backup, would throw away the
 * progress they hold, and no file is touched (exit 1). */
int backup_restore(const char *dir, struct checkpoint *c, const struct checkpoint_run *run,
                   char *err);

#endif
