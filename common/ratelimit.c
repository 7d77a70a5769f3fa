/* ratelimit.c - a token bucket for log lines. */
#include "ratelimit.h"

void ratelimit_init(struct ratelimit *rl, int burst, long long interval_ms)
{
	*rl = (struct ratelimit){.burst = burst > 0 ? burst : 1,
	                         .interval = interval_ms > 0 ? interval_ms : 1,
	                         .tokens = burst > 0 ? burst : 1};
}

int ratelimit_allow(struct ratelimit *rl, long long now_ms, long long *suppressed)
{
	if (rl->refilled_ms == 0 || now_ms < rl->refilled_ms) {
		rl->refilled_ms = now_ms; /* first use, or a clock that went back */
	} else {
		long long gained = (now_ms - rl->refilled_ms) / rl->interval;
		if (gained > 0) {
			rl->tokens =
			    gained >= rl->burst - rl->tokens ? rl->burst : rl->tokens + (int)gained;
			rl->refilled_ms += gained * rl->interval;
		}
	}
	if (rl->tokens == 0) {
		rl->suppressed++;
		return 0;
	}
	rl->tokens--;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return 1;
}
