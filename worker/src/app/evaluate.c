/* evaluate.c - Model.evaluate over a saved model. */
#include "evaluate.h"

#include <stdlib.h>

#include "err.h"
#include "log.h"
#include "model_file.h"
#include "parallel.h"
#include "progress.h"

/* The test split: x_test and y_test of NumPy data, or IDX's t10k files,
 * whose header is checked against the model before they are read. */
static int load_test(struct dataset *test, const struct eval_config *cfg, const struct model *m,
                     char *err)
{
	struct dataset train = {0};
	int has_test = 0;

	if (!cfg->data[0]) {
		/* IDX images are (rows, cols): a model of (rows, cols) or
		 * (rows, cols, 1) examples takes them. */
		int r = m->in_rank;
		if (r < 2 || r > 3 || (r == 3 && m->in_shape[2] != 1))
			return err_set(
			    err, "the model's examples are not images of one channel, which is "
			         "what IDX files hold: give --data");
		return dataset_load(test, cfg->data_dir, "t10k",
		                    &(struct dataset_want){(uint32_t)m->in_shape[0],
		                                           (uint32_t)m->in_shape[1], NULL, NULL},
		                    err);
	}
	if (dataset_load_numpy(&train, test, &has_test, cfg->data, err) < 0)
		return -1;
	dataset_release(&train);
	if (!has_test)
		return err_set(err, "'%s' holds no x_test and y_test", cfg->data);
	return 0;
}

int evaluate_run(const struct eval_config *cfg, FILE *out, char *err)
{
	struct dataset test = {0};
	struct model_file f = {0};
	struct loss_spec loss;
	struct backend *b = NULL;
	float *x = NULL, *y = NULL;
	struct progress p;
	int rc = -1, spec_logits, output_logits;

	if (parallel_init(cfg->threads, err) < 0)
		return -1;
	if (model_file_load(cfg->model_dir, cfg->batch_size, &f, err) < 0)
		goto out;
	if (!f.has_loss) {
		err_set(err, "'%s/%s' records no loss to evaluate", cfg->model_dir,
		        MODEL_FILE_NAME);
		goto out;
	}
	if (load_test(&test, cfg, f.model, err) < 0)
		goto out;
	dataset_set_rescale(&test, cfg->rescale != DATASET_RESCALE_NONE ? cfg->rescale : f.rescale);
	model_loss_reads(f.km, &f.loss, &spec_logits, &output_logits);
	if (dataset_check_shape(&test, f.model->in_rank, f.model->in_shape, err) < 0 ||
	    loss_resolve(&loss, &f.loss, spec_logits, (int)f.model->out_len, (int)test.y_len,
	                 f.metrics, f.nmetrics, err) < 0 ||
	    dataset_check_values(&test, &loss, err) < 0)
		goto out;
	log_info("evaluating model %s (%zu parameters) on %u test examples", f.model->name,
	         f.model->nparams, test.n);
	x = xcalloc((size_t)cfg->batch_size * f.model->in_len, sizeof(float));
	y = xcalloc((size_t)cfg->batch_size * test.y_len, sizeof(float));
	progress_init(&p, out, cfg->json, 0, cfg->batch_size, &loss);
	b = backend_new_cpu(f.model, &loss, NULL, NULL, NULL, cfg->batch_size);
	long steps = trainer_eval_steps(&test, cfg->batch_size, VALIDATION_ALL);
	struct metrics sums =
	    trainer_evaluate(b, &test, cfg->batch_size, VALIDATION_ALL, 0, 1, x, y);
	progress_evaluate_end(&p, steps, &sums);
	rc = 0;
out:
	free(x);
	free(y);
	backend_free(b);
	model_file_release(&f);
	dataset_release(&test);
	parallel_shutdown();
	return rc;
}
