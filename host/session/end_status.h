/* How a run ended, in the words every backend uses: one line on stderr and the exit status. */
#ifndef HVT_END_STATUS_H
#define HVT_END_STATUS_H

#include "host/session/session.h"

/* "stopped by SIG<name>"; returns EXIT_SIGNAL_BASE + @sig. For out_fail's signal (an output could
 * not be written) nothing, and EXIT_HOST_ERROR: the output's line comes when it is closed. */
int end_status_signal(int sig);

/* "--timeout N: @who was stopped after N s"; returns EXIT_TIMEOUT. */
int end_status_timeout(const struct session *s, const char *who);

#endif
