/* Guest RAM of a running QEMU, read and written through the QEMU process's memory (/proc/PID/mem): its
 * RAM is one anonymous mapping of exactly the RAM size. Data only: TCG does not see code written this way
 * (code patches go through the gdbstub). */
#ifndef HVT_QEMU_MEM_H
#define HVT_QEMU_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct qemu_mem {
	int fd;		  /* /proc/PID/mem */
	uint64_t hva;	  /* start of the RAM mapping in QEMU */
	uint64_t size;	  /* RAM size */
	uint64_t lowmem;  /* RAM below the PCI hole; the rest is at 4 GiB */
};

/* Finds the RAM mapping of QEMU @pid for @ram_size bytes of RAM. Returns 0, or a negative errno with a
 * reason in @err (-ENOENT: no such mapping; -EACCES: not allowed to read the process). */
int qemu_mem_open(struct qemu_mem *m, pid_t pid, uint64_t ram_size, char *err, size_t errlen);

/* Reads/writes guest-physical memory. 0 or -EFAULT (outside RAM or the process is gone). Any thread. */
int qemu_mem_read(const struct qemu_mem *m, uint64_t gpa, void *buf, size_t len);
int qemu_mem_write(const struct qemu_mem *m, uint64_t gpa, const void *buf, size_t len);

/* The RAM size QEMU @pid was started with (-m), from its command line. 0 if unknown. */
uint64_t qemu_mem_ram_size(pid_t pid);

void qemu_mem_close(struct qemu_mem *m);

#endif
