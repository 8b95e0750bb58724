/* What a thread's seccomp filters would do with a syscall, before it is injected there
 * (ptrace_inject): the filters read with PTRACE_SECCOMP_GET_FILTER (CAP_SYS_ADMIN, the thread
 * stopped by ptrace) and run here on the call's seccomp_data by a classic-BPF interpreter, so that
 * a filter that would kill the VMM (or trap, or fail the call) is known without making the call.
 * The filters are the peer's: every instruction is checked (loads inside seccomp_data, scratch
 * memory, jumps forward and inside the program); one the interpreter does not know makes the
 * verdict unknown. */
#ifndef HVT_SECCOMP_CHECK_H
#define HVT_SECCOMP_CHECK_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#define SECCOMP_CHECK_MAX_FILTERS 64 /* filters of a thread looked at */

/* Runs the filter @f (@n instructions, at most BPF_MAXINSNS) on @d: 0 with its return value in
 * *@ret, or -EINVAL when the program is malformed or uses what this interpreter does not run.
 * Pure; no allocation; any thread. */
int seccomp_check_eval(const struct sock_filter *f, unsigned n, const struct seccomp_data *d,
		       uint32_t *ret);

/* The action (SECCOMP_RET_ACTION_FULL bits, the data bits kept) the filters of the ptrace-stopped
 * thread @tid would take on syscall @nr(@args) made at @ip (the address after the syscall
 * instruction), as the kernel combines them (the most restrictive wins): SECCOMP_RET_ALLOW when it
 * has none. 0, or a negative errno when it cannot be known (-EACCES, -EPERM: not allowed to read
 * the filters; -EINVAL: a filter this interpreter cannot run; -ESRCH). Main thread. */
int seccomp_check_thread(pid_t tid, long nr, const uint64_t args[6], uint64_t ip, uint32_t *action);

/* A seccomp action's name ("SECCOMP_RET_KILL_PROCESS", ...). */
const char *seccomp_check_action_name(uint32_t action);

#endif
