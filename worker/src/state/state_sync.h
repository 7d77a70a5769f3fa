/* state_sync.h - after the workers have met, every one takes the state of
 * the most advanced one.
 *
 * This is MultiWorkerMirroredStrategy's start (every worker starts from the
 * chief's weights) made general: the worker that has done the most steps
 * (the lowest rank among equals; at a fresh start, the chief) sends its
 * position, weights and optimizer state to all. A worker restarted from a
 * backup thus catches up with the survivors, and survivors that lost a
 * step in flight get it back, so that after a lost worker no step is done
 * twice.
 */
#ifndef MWJ_STATE_SYNC_H
#define MWJ_STATE_SYNC_H

#include "checkpoint.h"
#include "comm.h"
#include "model.h"
#include "optimizer.h"

/* Makes p, m's parameters and state, and o's state and step count equal on every rank
 * of c to those of the most advanced rank, whose number goes in *from. The
 * others receive into scratch (m's gradient buffer among it) and take the
 * state only once all of it has arrived, so a failure half-way leaves them
 * where they were. Returns 0, or -1 with the communicator's message (a lost
 * peer). */
int state_sync(struct comm *c, struct train_position *p, struct model *m, struct optimizer *o,
               int *from, char *err);

#endif
