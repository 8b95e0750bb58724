/* Helpers shared by the commands (`run` in the embedded VMM, `run --qemu` and `attach`). */
#ifndef HVT_CMD_COMMON_H
#define HVT_CMD_COMMON_H

#include "host/session/cmd_out.h"
#include "host/session/cmd_probe.h"
#include "host/session/session.h"
#include "host/trace/tracer.h"

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

/* Call before any thread exists: blocks SIGINT, SIGTERM and SIGHUP (every later thread inherits the
 * mask, so they reach only the returned signalfd and teardown always runs; the previous mask goes
 * to @old). SIGINT is set back to its default first: a shell starts background jobs with it
 * ignored, and an explicit `kill -INT` should still stop us cleanly. Returns the signalfd or
 * -errno. */
int cmd_block_signals(sigset_t *old);

/* First thing in main: blocks out_fail's signal (host/sink/out_fail.h) in every thread to come, for
 * good: only the signalfd of cmd_block_signals reads it, and one raised after that is closed (or
 * in a command without one) stays pending, never kills hvtrace. */
void cmd_hold_out_fail(void);

/* Before any trap probe on KVM (the embedded VMM, or QEMU with KVM when @qemu): does INT3 in a
 * guest exit on this host in the form the backend needs (kvm_int3_check)? If so 0 and *@no_trap
 * false. If not: --probe trap is refused (-ENOTSUP, the line in @err); `auto` says on stderr that
 * it uses stub probes for every site; both `auto` and `stub` get *@no_trap (no trap probe may be
 * armed). The embedded VMM (!@qemu) on a host where the check could make no VM at all (no
 * /dev/kvm): -ENODEV whatever the probe, the reason in @err. Main thread. */
int cmd_check_int3(const struct session *s, bool qemu, bool *no_trap, char *err, size_t errlen);

#endif
