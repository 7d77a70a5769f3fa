/* reports.c - the newest training report of each job, and the pace of
 * its status writes and of its requests. */
#include "reports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "ratelimit.h"

struct report_slot {
	char uid[JOB_UID_LEN];
	struct training_status newest;
	int waiting;                  /* newest is not in the status yet */
	unsigned long seq, taken;     /* newest's number; the one a pass holds (0: none) */
	long long last_step;          /* the step of the last report put; -1: none */
	unsigned long went_back;      /* the seq of the last report behind its predecessor */
	char chief[TRAINING_UID_LEN]; /* the pod uid of the last report's chief */
	long long written_ms;         /* the last write; -1: none yet */
	struct ratelimit rate;        /* the job's requests */
};

void reports_init(struct reports *r, long long write_interval_ms)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	strmap_init(&r->jobs);
	r->write_interval_ms = write_interval_ms;
}

void reports_release(struct reports *r)
{
	if (r == NULL || r->jobs.slots == NULL)
		return;
	strmap_release(&r->jobs, free);
	pthread_mutex_destroy(&r->lock);
	memset(r, 0, sizeof(*r));
}

/* The slot of key, made (or made anew for another uid; uid NULL: any). */
static struct report_slot *slot(struct reports *r, const char *key, const char *uid)
{
	struct report_slot *s = strmap_get(&r->jobs, key);

	if (s != NULL && (uid == NULL || s->uid[0] == '\0' || strcmp(s->uid, uid) == 0)) {
		if (uid != NULL && s->uid[0] == '\0')
			snprintf(s->uid, sizeof(s->uid), "%s", uid);
		return s;
	}
	if (s != NULL) {
		/* The job was made again under its name: nothing carries over,
		 * not even the requests' bucket. */
		free(strmap_remove(&r->jobs, key));
	}
	s = xcalloc(1, sizeof(*s));
	snprintf(s->uid, sizeof(s->uid), "%s", uid != NULL ? uid : "");
	s->written_ms = -1;
	s->last_step = -1;
	ratelimit_init(&s->rate, REPORTS_BURST, REPORTS_REFILL_MS);
	strmap_put(&r->jobs, key, s);
	return s;
}

long long reports_admit(struct reports *r, const char *key, long long now_ms)
{
	long long wait = 0, suppressed;
	struct report_slot *s;

	pthread_mutex_lock(&r->lock);
	s = slot(r, key, NULL);
	if (!ratelimit_allow(&s->rate, now_ms, &suppressed)) {
		wait = s->rate.refilled_ms + s->rate.interval - now_ms;
		wait = wait < 1 ? 1 : wait;
		r->limited++;
	}
	pthread_mutex_unlock(&r->lock);
	return wait;
}

/* How long from now until a slot's next write may go. */
static long long wait_of(const struct reports *r, const struct report_slot *s, long long now_ms)
{
	long long wait;

	if (s->written_ms < 0)
		return 0;
	wait = s->written_ms + r->write_interval_ms - now_ms;
	return wait < 0 ? 0 : wait;
}

long long reports_put(struct reports *r, const char *key, const char *uid,
                      const struct training_status *t, long long now_ms)
{
	struct report_slot *s;
	long long wait;

	pthread_mutex_lock(&r->lock);
	s = slot(r, key, uid);
	/* A report behind the one before is a chief that went back to a
	 * backup. Said once, even when a newer report replaces this one
	 * before the status shows it: the step it went back from rides on. */
	long long from = s->waiting ? s->newest.resumed_from : -1;
	long long backup = s->waiting ? s->newest.resumed_backup : -1;
	int new_chief = s->waiting && s->newest.new_chief;
	int other = s->chief[0] != '\0' && t->chief[0] != '\0' && strcmp(s->chief, t->chief) != 0;

	s->seq++;
	if (s->last_step >= 0 && (s->last_step > t->global_step || other)) {
		from = s->last_step > from ? s->last_step : from;
		new_chief |= other;
		backup = t->last_backup_step;
		s->went_back = s->seq;
	}
	s->last_step = t->global_step;
	if (t->chief[0] != '\0')
		snprintf(s->chief, sizeof(s->chief), "%s", t->chief);
	s->newest = *t;
	s->newest.resumed_from = from;
	s->newest.new_chief = new_chief;
	s->newest.resumed_backup = backup;
	s->waiting = 1;
	r->accepted++;
	wait = wait_of(r, s, now_ms);
	pthread_mutex_unlock(&r->lock);
	return wait;
}

int reports_due(struct reports *r, const char *key, const char *uid, struct training_status *out,
                long long now_ms, long long *wait_ms)
{
	struct report_slot *s;
	int due = 0;

	*wait_ms = -1;
	pthread_mutex_lock(&r->lock);
	s = strmap_get(&r->jobs, key);
	if (s != NULL && s->waiting && strcmp(s->uid, uid) == 0) {
		*wait_ms = wait_of(r, s, now_ms);
		if (*wait_ms == 0) {
			*out = s->newest;
			s->taken = s->seq;
			due = 1;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return due;
}

int reports_due_now(struct reports *r, const char *key, const char *uid,
                    struct training_status *out)
{
	struct report_slot *s;
	int due = 0;

	pthread_mutex_lock(&r->lock);
	s = strmap_get(&r->jobs, key);
	if (s != NULL && s->waiting && strcmp(s->uid, uid) == 0) {
		*out = s->newest;
		s->taken = s->seq;
		due = 1;
	}
	pthread_mutex_unlock(&r->lock);
	return due;
}

void reports_written(struct reports *r, const char *key, const char *uid, long long now_ms)
{
	struct report_slot *s;

	pthread_mutex_lock(&r->lock);
	s = strmap_get(&r->jobs, key);
	if (s != NULL && strcmp(s->uid, uid) == 0 && s->taken != 0) {
		/* A report that came while the pass wrote stays waiting: it
		 * is newer than what the pass took. */
		s->waiting = s->seq != s->taken;
		/* What was written said where training went back from; a newer
		 * report says it again only if it went back again. */
		if (s->went_back <= s->taken)
			training_forget_resume(&s->newest);
		s->taken = 0;
		s->written_ms = now_ms;
	}
	pthread_mutex_unlock(&r->lock);
}

void reports_forget(struct reports *r, const char *key)
{
	pthread_mutex_lock(&r->lock);
	free(strmap_remove(&r->jobs, key));
	pthread_mutex_unlock(&r->lock);
}

void reports_each(struct reports *r,
                  void (*fn)(void *ctx, const char *key, const struct training_status *t),
                  void *ctx)
{
	struct strmap_slot *it;
	size_t i = 0;

	pthread_mutex_lock(&r->lock);
	while ((it = strmap_next(&r->jobs, &i)) != NULL) {
		const struct report_slot *s = it->value;

		if (s->newest.present)
			fn(ctx, it->key, &s->newest);
	}
	pthread_mutex_unlock(&r->lock);
}
