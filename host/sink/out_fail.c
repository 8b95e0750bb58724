#include "host/sink/out_fail.h"

#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_bool raised, armed;

int out_fail_signal(void)
{
	return SIGRTMIN + 1; /* nothing else sends it (glibc keeps its own below SIGRTMIN) */
}

void out_fail_arm(void)
{
	atomic_store(&armed, true);
}

void out_fail_raise(void)
{
	if (atomic_exchange(&raised, true))
		return;
	if (atomic_load(&armed))
		kill(getpid(), out_fail_signal());
}

bool out_fail_raised(void)
{
	return atomic_load(&raised);
}

bool out_fail_is(int sig)
{
	return sig == out_fail_signal() && atomic_load(&raised);
}
