/* The first failed write of any output (the trace on the writer thread, the guest's console on a
 * vCPU or console thread) ends the run: a closed pipe or a full disk stops the guest's tracing at
 * once, not when the guest ends. The run's waits all read the session's signalfd, so the request
 * is a signal of hvtrace's own queued to the process, which the waits tell from one sent from
 * outside (out_fail_is). */
#ifndef HVT_OUT_FAIL_H
#define HVT_OUT_FAIL_H

#include <stdbool.h>

/* The signal out_fail_raise queues: to block into the session's signalfd with SIGINT, SIGTERM. */
int out_fail_signal(void);

/* From now on out_fail_raise queues its signal (call once its signal is blocked in every thread
 * and read by the session's signalfd; before that, or without a call, it only records). Main
 * thread. */
void out_fail_arm(void);

/* An output could not be written: the first call (from any thread) records it and, when armed,
 * queues out_fail_signal() to the process; later calls do nothing. Async-signal-safe. */
void out_fail_raise(void);

/* Whether an output failed (out_fail_raise was called). Any thread. */
bool out_fail_raised(void);

/* Whether @sig, read from the session's signalfd, is out_fail_raise's request (an output failed),
 * not a signal from outside. Any thread. */
bool out_fail_is(int sig);

#endif
