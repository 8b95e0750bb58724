/* Guest RAM of a VMM process, read and written through that process's memory (/proc/PID/mem) at
 * the host addresses of a guest-physical map: a sorted table of regions (guest-physical range ->
 * host address in the VMM) that the backend learns its own way (QEMU: qemu_mem_open) and fills in.
 * Any VMM that maps guest RAM into its address space (QEMU, Firecracker, crosvm, hvtrace's own).
 * Data only: a VMM that translates guest code (QEMU's TCG) does not see code written this way. */
#ifndef HVT_PROC_MEM_H
#define HVT_PROC_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_MEM_MAX_REGIONS 32 /* guest-physical regions of a map */

/* A guest-physical region of the map: [gpa, gpa+len) is at @hva in the VMM process. */
struct proc_mem_region {
	uint64_t gpa, len, hva;
};

struct proc_mem {
	int fd;	     /* /proc/PID/mem; -1: closed */
	unsigned nr; /* regions, sorted by gpa, disjoint */
	struct proc_mem_region region[PROC_MEM_MAX_REGIONS];
};

/* Opens /proc/@pid/mem for reading and writing into @m, with no region yet (the caller fills
 * region[] and nr). Main thread. 0, or a negative errno with one line in @err ("pid N:
 * /proc/N/mem: reason"; -EACCES: not allowed to read the process); @m is closed then. */
int proc_mem_open(struct proc_mem *m, pid_t pid, char *err, size_t errlen);

/* Reads @len bytes at @hva, an address of the VMM process (not guest-physical): what a backend
 * learning the map compares. 0 or -EFAULT. Any thread. */
int proc_mem_host_read(const struct proc_mem *m, uint64_t hva, void *buf, size_t len);

/* Reads/writes guest-physical memory: 0, or -EFAULT when any byte is outside the map (nothing is
 * written then) or the process is gone. An access across two adjacent regions is split. Any thread;
 * no allocation. */
int proc_mem_read(const struct proc_mem *m, uint64_t gpa, void *buf, size_t len);
int proc_mem_write(const struct proc_mem *m, uint64_t gpa, const void *buf, size_t len);

/* Offers @hit each 8-byte aligned u64 of RAM in [@lo, @hi] and the u64 after it (0 at a region's
 * end) until it says true: 1 then, 0 if never, -EFAULT when RAM cannot be read. Reads in 1 MiB
 * pieces into a buffer of its own. Any thread. */
int proc_mem_scan(const struct proc_mem *m, uint64_t lo, uint64_t hi,
		  bool (*hit)(void *ctx, uint64_t v, uint64_t next), void *ctx);

/* Closes the process's memory and forgets the map. Idempotent (also on a never-opened @m whose fd
 * is -1). */
void proc_mem_close(struct proc_mem *m);

#endif
