/* The host thread that runs each vCPU of a QEMU: QMP's query-cpus-fast ("cpu-index",
 * "thread-id"), checked against the QEMU process's own threads. Main thread. */
#ifndef HVT_QEMU_VCPU_THREADS_H
#define HVT_QEMU_VCPU_THREADS_H

#include <stddef.h>

/* Parses query-cpus-fast's return value @json (a QEMU peer's bytes: bounded, checked): vCPU i's
 * thread id into @tids[i], *@nr the vCPU count (indexes 0..nr-1, each exactly once, at most @max).
 * 0, or -EINVAL with one line in @err. Pure. */
int qemu_vcpu_threads_parse(const char *json, int *tids, unsigned max, unsigned *nr, char *err,
			    size_t errlen);

/* Asks QEMU (@qmp_cmd over @ctx) and parses the answer, then checks each thread belongs to the
 * process @pid (/proc/PID/task/TID; @pid <= 0: unchecked). 0 or a negative errno with @err. */
int qemu_vcpu_threads(int (*qmp_cmd)(void *ctx, const char *cmd, char *reply, size_t len),
		      void *ctx, int pid, int *tids, unsigned max, unsigned *nr, char *err,
		      size_t errlen);

#endif
