/* backend.c - the backend interface's dispatch. */
#include "backend.h"

void backend_free(struct backend *b)
{
	if (b)
		b->ops->free(b);
}

int backend_step(struct backend *b, const struct backend_step *s, struct step_sums *out, char *err)
{
	return b->ops->step(b, s, out, err);
}

void backend_evaluate(struct backend *b, const float *x, const float *y, int n,
                      struct metrics *sums)
{
	b->ops->evaluate(b, x, y, n, sums);
}

void backend_pull(struct backend *b)
{
	if (b)
		b->ops->pull(b);
}

void backend_push(struct backend *b)
{
	if (b)
		b->ops->push(b);
}

const char *backend_name(const struct backend *b)
{
	return b->ops->name;
}
