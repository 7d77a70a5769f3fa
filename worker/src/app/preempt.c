/* preempt.c - recording SIGTERM and SIGINT for the trainer to act on. */
#include "preempt.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t received;

static void on_signal(int sig)
{
	received = sig;
}

void preempt_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGXFSZ, SIG_IGN);
}

int preempt_signal(void)
{
	return received;
}

void preempt_reset(void)
{
	received = 0;
}
