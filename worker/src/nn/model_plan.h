/* model_plan.h - model.c's planning step (model_plan.c): the file's layers
 * into the model's, with their shapes, their slices of the parameter,
 * state and statistics buffers, and the architecture string and its hash.
 * No buffer is allocated or carved here. */
#ifndef MWJ_MODEL_PLAN_H
#define MWJ_MODEL_PLAN_H

#include "keras_model.h"
#include "model.h"

/* Fills m's layers, in_*, out_len, nparams, nstate, nstats, desc and
 * arch_hash from km. Returns 0, or -1 with a message in err naming the
 * layer whose shape does not fit. */
int model_plan_layers(struct model *m, const struct keras_model *km, char *err);

#endif
