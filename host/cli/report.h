/* `hvtrace report`: prints a trace.dat the way `run` prints a trace. */
#ifndef HVT_REPORT_H
#define HVT_REPORT_H

#include "host/session/session.h"

/* Reads s->input (trace.dat) and prints it on stdout as s->report_format says: text (the function
 * tracer's lines), graph (function_graph's), json or folded; auto: graph if the file holds
 * function_graph events, else text. One error line on a bad file. Returns the exit status. */
int cmd_report(const struct session *s);

#endif
