/* evaluate.h - the evaluate command: a saved model against the test split. */
#ifndef MWJ_EVALUATE_H
#define MWJ_EVALUATE_H

#include <stdio.h>

#include "cli.h"

/* Loads "<model_dir>/model.mwj" and "<data_dir>/t10k-*", runs the whole test
 * split, and prints loss and accuracy on out like Keras' evaluate. Returns 0,
 * or -1 with a message in err. */
int evaluate_run(const struct eval_config *cfg, FILE *out, char *err);

#endif
