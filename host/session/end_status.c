#include "host/session/end_status.h"
#include "host/session/cmd_out.h"
#include "host/session/exitcode.h"
#include "host/sink/out_fail.h"

#include <string.h>

int end_status_signal(int sig)
{
	if (out_fail_is(sig))
		return EXIT_HOST_ERROR; /* the output's own line comes when it is closed */
	cmd_error("stopped by SIG%s", sigabbrev_np(sig));
	return EXIT_SIGNAL_BASE + sig;
}

int end_status_timeout(const struct session *s, const char *who)
{
	cmd_error("--timeout %g: %s was stopped after %g s", s->timeout, who, s->timeout);
	return EXIT_TIMEOUT;
}
