/* Guest RAM of a running QEMU, read and written through the QEMU process's memory (/proc/PID/mem)
 * at the host addresses of a guest-physical map learned from QEMU (qemu_memmap.h): any machine type
 * (pc, q35), any RAM size, anonymous, memfd, file or hugetlbfs backends, NUMA nodes. Data only: TCG
 * does not see code written this way (code patches go through the gdbstub). */
#ifndef HVT_QEMU_MEM_H
#define HVT_QEMU_MEM_H

#include "host/qemu/qemu_memmap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct qemu_mem {
	int fd;	     /* /proc/PID/mem */
	unsigned nr; /* regions, sorted by gpa, disjoint */
	struct qemu_mem_region region[QEMU_MEM_MAX_REGIONS];
};

/* A human monitor command (struct qemu_conn's hmp): 0, or a negative errno. */
typedef int (*qemu_hmp_fn)(void *ctx, const char *cmd, char *out, size_t len);

/* A QMP command (`{"execute":...}`, struct qemu_conn's qmp): its "return" value's JSON text in
 * @reply, 0; or a negative errno as qmp_execute (-ENOSYS: no such command). */
typedef int (*qemu_qmp_fn)(void *ctx, const char *cmd, char *reply, size_t len);

/* Learns the guest-physical map of QEMU @pid through its monitor (`info mtree -f`, `info ramblock`,
 * and the memory backends of QMP's `query-memdev` through @qmp, or of HMP's `info memdev` where
 * @qmp is NULL or fails; @hmp and @qmp both take @mon_ctx) and its /proc/PID/smaps, telling alike
 * backends apart by the address `info ramblock` shows (QEMU 10.0) or else through @phys_read
 * (guest-physical reads, the gdbstub's physical mode; the VM must be stopped). Main thread. Returns
 * 0, or a negative errno with one line in @err (-EACCES: not allowed to read the process). */
int qemu_mem_open(struct qemu_mem *m, pid_t pid, qemu_hmp_fn hmp, qemu_qmp_fn qmp, void *mon_ctx,
		  qemu_memmap_read_fn phys_read, void *phys_ctx, char *err, size_t errlen);

/* Reads/writes guest-physical memory: 0, or -EFAULT when any byte is outside RAM (nothing is
 * written then) or the process is gone. An access across two adjacent regions is split. Any thread;
 * no allocation. */
int qemu_mem_read(const struct qemu_mem *m, uint64_t gpa, void *buf, size_t len);
int qemu_mem_write(const struct qemu_mem *m, uint64_t gpa, const void *buf, size_t len);

/* Offers @hit each 8-byte aligned u64 of RAM in [@lo, @hi] and the u64 after it (0 at a region's
 * end) until it says true: 1 then, 0 if never, -EFAULT when RAM cannot be read. Reads in 1 MiB
 * pieces into a buffer of its own. Any thread. */
int qemu_mem_scan(const struct qemu_mem *m, uint64_t lo, uint64_t hi,
		  bool (*hit)(void *ctx, uint64_t v, uint64_t next), void *ctx);

void qemu_mem_close(struct qemu_mem *m);

#endif
