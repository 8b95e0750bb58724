/* Guest RAM of a running QEMU: the QEMU process's memory (host/vmm/proc_mem.h) opened with the
 * guest-physical map learned from QEMU (qemu_memmap.h): any machine type (pc, q35), any RAM size,
 * anonymous, memfd, file or hugetlbfs backends, NUMA nodes. Data only: TCG does not see code
 * written this way (code patches go through the gdbstub). */
#ifndef HVT_QEMU_MEM_H
#define HVT_QEMU_MEM_H

#include "host/qemu/qemu_memmap.h"
#include "host/vmm/proc_mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A human monitor command (struct qemu_conn's hmp): 0, or a negative errno. */
typedef int (*qemu_hmp_fn)(void *ctx, const char *cmd, char *out, size_t len);

/* A QMP command (`{"execute":...}`, struct qemu_conn's qmp): its "return" value's JSON text in
 * @reply, 0; or a negative errno as qmp_execute (-ENOSYS: no such command). */
typedef int (*qemu_qmp_fn)(void *ctx, const char *cmd, char *reply, size_t len);

/* Opens the memory of QEMU @pid into @m (proc_mem_open) and learns its guest-physical map through
 * its monitor (`info mtree -f`, `info ramblock`, and the memory backends of QMP's `query-memdev`
 * through @qmp, or of HMP's `info memdev` where @qmp is NULL or fails; @hmp and @qmp both take
 * @mon_ctx) and its /proc/PID/smaps, telling alike
 * backends apart by the address `info ramblock` shows (QEMU 10.0) or else through @phys_read
 * (guest-physical reads, the gdbstub's physical mode; the VM must be stopped). Main thread. Returns
 * 0, or a negative errno with one line in @err (-EACCES: not allowed to read the process); @m is
 * closed then. */
int qemu_mem_open(struct proc_mem *m, pid_t pid, qemu_hmp_fn hmp, qemu_qmp_fn qmp, void *mon_ctx,
		  qemu_memmap_read_fn phys_read, void *phys_ctx, char *err, size_t errlen);

#endif
