/* model_init.c - Keras' initializers, drawn into the model's parameters.
 *
 * Keras 3's keras/src/initializers: the Glorot, He and LeCun families are
 * VarianceScaling with scale 1 or 2 over fan_in, fan_out or their mean;
 * their uniform form draws from +-sqrt(3 scale / fan), their normal form
 * from a normal truncated at two standard deviations whose standard
 * deviation is sqrt(scale / fan) / .87962566103423978 (the truncation's
 * correction); TruncatedNormal truncates at two standard deviations too.
 * A kernel's fans: a dense layer's are its inputs and units, a
 * convolution's its receptive field times its input and output channels.
 *
 * The numbers come from mwj's generator (rng.h), not TensorFlow's: a seed
 * gives the same weights on every machine and every run, but not Keras'
 * weights. Initializers without a seed of their own draw in layer order
 * from one stream of --seed; one with a seed draws from a stream of that
 * seed, as a seeded Keras initializer repeats its draws.
 */
#include <math.h>
#include <string.h>

#include "dropout.h"
#include "model.h"
#include "rng.h"

#define TRUNCATED_STDDEV_FIX .87962566103423978

/* A standard normal draw (Box-Muller in double). */
static double normal(struct rng *r)
{
	double u1 = (double)(rng_next(r) >> 11) * 0x1.0p-53;
	double u2 = (double)(rng_next(r) >> 11) * 0x1.0p-53;

	return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

static double truncated(struct rng *r)
{
	for (;;) {
		double z = normal(r);
		if (fabs(z) <= 2.0)
			return z;
	}
}

static void fill(float *w, size_t n, const struct keras_init *ini, double fan_in, double fan_out,
                 struct rng *shared)
{
	struct rng own;
	struct rng *r = shared;
	double scale = 1.0, fan = fan_in, limit, stddev;

	if (ini->has_seed) {
		rng_init(&own, ini->seed, 0);
		r = &own;
	}
	switch (ini->kind) {
	case KERAS_INIT_ZEROS:
	case KERAS_INIT_ONES:
		for (size_t i = 0; i < n; i++)
			w[i] = ini->kind == KERAS_INIT_ONES ? 1.0f : 0.0f;
		return;
	case KERAS_INIT_RANDOM_UNIFORM:
		for (size_t i = 0; i < n; i++)
			w[i] = rng_uniform(r, (float)ini->a, (float)ini->b);
		return;
	case KERAS_INIT_RANDOM_NORMAL:
		for (size_t i = 0; i < n; i++)
			w[i] = (float)(ini->a + ini->b * normal(r));
		return;
	case KERAS_INIT_TRUNCATED_NORMAL:
		for (size_t i = 0; i < n; i++)
			w[i] = (float)(ini->a + ini->b * truncated(r));
		return;
	case KERAS_INIT_GLOROT_UNIFORM:
		/* As mwj always drew it: bit for bit the seed models' weights. */
		limit = sqrt(6.0 / (fan_in + fan_out));
		for (size_t i = 0; i < n; i++)
			w[i] = rng_uniform(r, -(float)limit, (float)limit);
		return;
	case KERAS_INIT_GLOROT_NORMAL:
		fan = (fan_in + fan_out) / 2.0;
		break;
	case KERAS_INIT_HE_UNIFORM:
	case KERAS_INIT_HE_NORMAL:
		scale = 2.0;
		break;
	case KERAS_INIT_LECUN_UNIFORM:
	case KERAS_INIT_LECUN_NORMAL:
		break;
	}
	if (ini->kind == KERAS_INIT_HE_UNIFORM || ini->kind == KERAS_INIT_LECUN_UNIFORM) {
		limit = sqrt(3.0 * scale / fan);
		for (size_t i = 0; i < n; i++)
			w[i] = rng_uniform(r, -(float)limit, (float)limit);
		return;
	}
	stddev = sqrt(scale / fan) / TRUNCATED_STDDEV_FIX;
	for (size_t i = 0; i < n; i++)
		w[i] = (float)(stddev * truncated(r));
}

void model_init_params(struct model *m, const struct keras_model *km, uint64_t seed)
{
	struct rng r;

	rng_init(&r, seed, 0);
	m->seed = seed;
	memset(m->params, 0, m->nparams * sizeof(float));
	for (int i = 0; i < m->nlayers; i++) {
		struct layer *l = &m->layers[i];
		const struct keras_layer *k = &km->layers[l->source];
		float *w = m->params + l->w_off, *b = m->params + l->b_off;
		double fan_in = (double)l->units_in, fan_out = (double)l->out_c;
		switch (l->kind) {
		case LAYER_CONV2D:
			fan_in = (double)l->kh * l->kw * l->in_c;
			fan_out = (double)l->kh * l->kw * l->out_c;
			/* fall through */
		case LAYER_DENSE:
			fill(w, l->w_len, &k->kernel_init, fan_in, fan_out, &r);
			fill(b, l->b_len, &k->bias_init, fan_in, fan_out, &r);
			break;
		case LAYER_BATCHNORM:
			fill(w, l->w_len, &k->gamma_init, l->in_c, l->in_c, &r);
			fill(b, l->b_len, &k->beta_init, l->in_c, l->in_c, &r);
			fill(m->state + l->s_off, (size_t)l->in_c, &k->moving_mean_init, l->in_c,
			     l->in_c, &r);
			fill(m->state + l->s_off + l->in_c, (size_t)l->in_c,
			     &k->moving_variance_init, l->in_c, l->in_c, &r);
			break;
		case LAYER_DROPOUT:
			l->key = dropout_key(k->has_seed ? k->seed : seed, k->has_seed ? 0 : i);
			break;
		default:
			break;
		}
	}
}
