/* compile_config.h - what a model is compiled with, as Keras' compile()
 * would be given it: the loss, the metrics and the optimizer of the model
 * file's compile config, each overridden by the flags that name it.
 *
 * Precedence, field by field: mwj's defaults (sgd, learning rate 0.001,
 * no metrics), then the file's compile config, then the flags. A flag
 * that names an optimizer other than the file's starts that optimizer
 * from Keras' defaults, with mwj's learning rate of 0.001 unless
 * --learning-rate says otherwise. A model file without a loss (tf-keras
 * files carry no compile config) needs --loss.
 */
#ifndef MWJ_COMPILE_CONFIG_H
#define MWJ_COMPILE_CONFIG_H

#include "keras_model.h"
#include "loss.h"
#include "optimizer.h"

#define COMPILE_DEFAULT_LEARNING_RATE 0.001

/* The flags given, and their values. */
struct compile_flags {
	int loss_set, from_logits_set, metrics_set, optimizer_set;
	int lr_set, momentum_set, nesterov_set, beta_1_set, beta_2_set, epsilon_set;
	int weight_decay_set, rho_set, centered_set, accumulator_set;
	enum loss_kind loss;
	int from_logits;
	int nmetrics;
	enum metric_kind metrics[LOSS_MAX_METRICS];
	struct optimizer_config opt; /* only the fields set are read */
};

/* What a run is compiled with. */
struct compiled {
	struct loss_config loss;
	int nmetrics;
	enum metric_kind metrics[LOSS_MAX_METRICS];
	struct optimizer_config opt;
};

/* --metrics: a comma-separated list of Keras names ("accuracy,mse"), or
 * "none". Returns 0, or -1 with the name it does not know in err. */
int compile_parse_metrics(struct compile_flags *f, const char *list, char *err);

/* Resolves km's compile config and the flags f into out. Returns 0, or -1
 * with a message naming the flag or the file's field: no loss anywhere,
 * --momentum for an optimizer without one, a value Keras would refuse. */
int compile_resolve(struct compiled *out, const struct keras_model *km,
                    const struct compile_flags *f, char *err);

/* compile_resolve into a run's config: t->km = km, and its loss, metrics,
 * opt, optimizer, learning_rate and momentum. For the command line and
 * for programs that build a train_config themselves (tests, benches). */
struct train_config;
int compile_apply(struct train_config *t, const struct keras_model *km,
                  const struct compile_flags *f, char *err);

#endif
