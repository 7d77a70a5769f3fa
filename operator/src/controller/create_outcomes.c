/* create_outcomes.c - the answers to this replica's creates; see
 * create_outcomes.h. */
#include "create_outcomes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

struct job_outcomes {
	int n; /* indices 0..n-1 have room */
	struct create_outcome *by_index;
	struct create_outcome objects[JOB_OBJECTS];
};

static const struct create_outcome unknown = {.attempt = -1, .result = CREATE_UNKNOWN};

static void job_free(void *p)
{
	struct job_outcomes *j = p;

	if (j == NULL)
		return;
	free(j->by_index);
	free(j);
}

void create_outcomes_init(struct create_outcomes *o)
{
	memset(o, 0, sizeof(*o));
	pthread_mutex_init(&o->lock, NULL);
	strmap_init(&o->jobs);
}

void create_outcomes_release(struct create_outcomes *o)
{
	if (o == NULL)
		return;
	strmap_release(&o->jobs, job_free);
	pthread_mutex_destroy(&o->lock);
	memset(o, 0, sizeof(*o));
}

/* Makes room for index in j (the new entries know nothing). */
static void grow(struct job_outcomes *j, int index)
{
	int n = j->n ? j->n : 4;

	if (index < j->n)
		return;
	while (n <= index)
		n *= 2;
	struct create_outcome *grown = xmalloc((size_t)n * sizeof(*grown));
	if (j->n)
		memcpy(grown, j->by_index, (size_t)j->n * sizeof(*grown));
	for (int i = j->n; i < n; i++)
		grown[i] = unknown;
	free(j->by_index);
	j->by_index = grown;
	j->n = n;
}

/* The job's entry, made when missing. Called with the lock held. */
static struct job_outcomes *job_entry(struct create_outcomes *o, const char *job)
{
	struct job_outcomes *j = strmap_get(&o->jobs, job);

	if (j == NULL) {
		j = xcalloc(1, sizeof(*j));
		for (int k = 0; k < JOB_OBJECTS; k++)
			j->objects[k] = unknown;
		strmap_put(&o->jobs, job, j);
	}
	return j;
}

static void set(struct create_outcome *to, long attempt, enum create_result result,
                const char *message)
{
	to->attempt = attempt;
	to->result = result;
	snprintf(to->message, sizeof(to->message), "%s", message ? message : "");
}

void create_outcomes_record(struct create_outcomes *o, const char *job, int index, long attempt,
                            enum create_result result, const char *message)
{
	struct job_outcomes *j;

	if (index < 0)
		return;
	pthread_mutex_lock(&o->lock);
	j = job_entry(o, job);
	grow(j, index);
	set(&j->by_index[index], attempt, result, message);
	pthread_mutex_unlock(&o->lock);
}

void create_outcomes_record_object(struct create_outcomes *o, const char *job, enum job_object what,
                                   enum create_result result, const char *message)
{
	if ((unsigned)what >= JOB_OBJECTS)
		return;
	pthread_mutex_lock(&o->lock);
	set(&job_entry(o, job)->objects[what], 0, result, message);
	pthread_mutex_unlock(&o->lock);
}

void create_outcomes_get(struct create_outcomes *o, const char *job, int n,
                         struct create_outcome *out, struct create_outcome *objects)
{
	const struct job_outcomes *j;

	pthread_mutex_lock(&o->lock);
	j = strmap_get(&o->jobs, job);
	for (int i = 0; i < n; i++)
		out[i] = j && i < j->n ? j->by_index[i] : unknown;
	for (int k = 0; objects != NULL && k < JOB_OBJECTS; k++)
		objects[k] = j ? j->objects[k] : unknown;
	pthread_mutex_unlock(&o->lock);
}

void create_outcomes_forget(struct create_outcomes *o, const char *job)
{
	pthread_mutex_lock(&o->lock);
	if (job != NULL) {
		job_free(strmap_remove(&o->jobs, job));
	} else {
		strmap_release(&o->jobs, job_free);
		strmap_init(&o->jobs);
	}
	pthread_mutex_unlock(&o->lock);
}
