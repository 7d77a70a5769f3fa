/* evaluate.c - Model.evaluate over a saved model. */
#include "evaluate.h"

#include <stdlib.h>

#include "err.h"
#include "log.h"
#include "model_file.h"
#include "parallel.h"
#include "progress.h"

int evaluate_run(const struct eval_config *cfg, FILE *out, char *err)
{
	struct dataset test = {0};
	struct model *m = NULL;
	struct backend *b = NULL;
	float *x = NULL;
	uint8_t *y = NULL;
	struct progress p;
	int rc = -1;

	if (parallel_init(cfg->threads, err) < 0)
		return -1;
	m = model_file_load(cfg->model_dir, cfg->batch_size, err);
	if (!m)
		goto out;
	if (m->in_c != 1) {
		err_set(err, "the model takes %dx%dx%d inputs, and IDX images have 1 channel",
		        m->in_h, m->in_w, m->in_c);
		goto out;
	}
	/* The test images' header is checked against the model before they
	 * are read. */
	if (dataset_load(&test, cfg->data_dir, "t10k",
	                 &(struct dataset_want){(uint32_t)m->in_h, (uint32_t)m->in_w, NULL, NULL},
	                 err) < 0)
		goto out;
	log_info("evaluating model %s (%zu parameters) on %u test examples", m->name, m->nparams,
	         test.n);
	x = xcalloc((size_t)cfg->batch_size * test.rows * test.cols, sizeof(float));
	y = xcalloc((size_t)cfg->batch_size, 1);
	progress_init(&p, out, cfg->json, 0, cfg->batch_size);
	b = backend_new_cpu(m, NULL, NULL, NULL, cfg->batch_size);
	long steps = trainer_eval_steps(&test, cfg->batch_size, VALIDATION_ALL);
	struct metrics sums =
	    trainer_evaluate(b, &test, cfg->batch_size, VALIDATION_ALL, 0, 1, x, y);
	progress_evaluate_end(&p, steps, &sums);
	rc = 0;
out:
	free(x);
	free(y);
	backend_free(b);
	model_free(m);
	dataset_release(&test);
	parallel_shutdown();
	return rc;
}
