/* checkpoint_position.c - whether a backup's position can be resumed
 * (checkpoint_check_position in checkpoint.h). */
#include "checkpoint.h"

#include <inttypes.h>
#include <math.h>

#include "err.h"

/* The most examples one step takes: the largest world times the largest
 * batch a backup may record (checkpoint.c). */
#define MAX_STEP_EXAMPLES (4096ull << 20)

/* The fields against each other, whatever the run. */
static int check_counts(const struct train_position *p, char *err)
{
	uint64_t g = p->global_step;

	if ((uint64_t)p->step > g)
		return err_set(err,
		               "it is at step %ld of an epoch, more than the %" PRIu64
		               " steps it took in all",
		               p->step, g);
	/* Every epoch before this one took a step at least. */
	if ((uint64_t)p->epoch > g - (uint64_t)p->step)
		return err_set(
		    err,
		    "it is past %d whole epoch(s) and %ld step(s) of another, in only %" PRIu64
		    " steps",
		    p->epoch, p->step, g);
	if ((g == 0) != (p->examples == 0) || p->examples < g ||
	    (g < UINT64_MAX / MAX_STEP_EXAMPLES && p->examples > g * MAX_STEP_EXAMPLES))
		return err_set(err, "%" PRIu64 " steps cannot have taken %" PRIu64 " examples", g,
		               p->examples);
	return 0;
}

/* The running sums of the epoch in progress against its steps: each step
 * adds a global batch of examples, and every loss and metric (accuracies,
 * errors) is a sum of values that are not negative. */
static int check_sums(const struct train_position *p, char *err)
{
	const struct metrics *m = &p->sums;
	int bad = !isfinite(m->loss_sum) || !isfinite(m->count) || m->loss_sum < 0 ||
	          m->count > (double)p->examples || m->count < (double)p->step ||
	          (p->step == 0 && (m->count != 0 || m->loss_sum != 0));

	for (int i = 0; i < METRICS_MAX; i++)
		bad |= !isfinite(m->sums[i]) || m->sums[i] < 0 || (p->step == 0 && m->sums[i] != 0);
	if (bad)
		return err_set(
		    err,
		    "its running sums (loss %g, metrics %g %g %g %g over %g examples) do "
		    "not fit its %ld step(s) of the epoch",
		    m->loss_sum, m->sums[0], m->sums[1], m->sums[2], m->sums[3], m->count, p->step);
	return 0;
}

/* The position against what the run will do with it. */
static int check_run(const struct train_position *p, const struct checkpoint_run *run, char *err)
{
	uint64_t global = (uint64_t)p->world * p->batch_size;

	if (p->epoch > run->epochs || (p->epoch == run->epochs && p->step > 0))
		return err_set(err,
		               "it is at epoch %d, step %ld, past the %d epoch(s) of this run "
		               "(--epochs %d or more goes on from it)",
		               p->epoch + 1, p->step, run->epochs, p->epoch + 1);
	if (run->steps_per_epoch > 0 && p->step > run->steps_per_epoch)
		return err_set(err,
		               "it is at step %ld of epoch %d, past the %ld steps of an epoch "
		               "(--steps-per-epoch %ld)",
		               p->step, p->epoch + 1, run->steps_per_epoch, run->steps_per_epoch);
	/* One pass an epoch: its steps, at the world and batch that took them,
	 * stay within the data set. */
	if (run->steps_per_epoch == 0 && global > 0 &&
	    (uint64_t)p->step > (run->examples + global - 1) / global)
		return err_set(
		    err,
		    "it is at step %ld of epoch %d, but an epoch of %u worker(s) at batch "
		    "%u is %" PRIu64 " steps over the %u examples of the data set",
		    p->step, p->epoch + 1, p->world, p->batch_size,
		    (run->examples + global - 1) / global, run->examples);
	return 0;
}

int checkpoint_check_position(const struct train_position *p, const struct checkpoint_run *run,
                              char *err)
{
	if (check_counts(p, err) < 0 || check_sums(p, err) < 0 || check_run(p, run, err) < 0)
		return -1;
	return 0;
}
