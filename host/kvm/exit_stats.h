/* Counting a vCPU's exits for --stats: by exit reason, and for port I/O and MMIO by port / address
 * and direction, in small fixed tables (the guest cannot make them grow: keys past the table's size
 * are counted as "other"). */
#ifndef HVT_EXIT_STATS_H
#define HVT_EXIT_STATS_H

#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>

#define XS_REASONS 40 /* KVM_EXIT_* below this are counted one by one, the rest together */
#define XS_SLOTS   16 /* distinct ports (and MMIO addresses) counted one by one */

struct xs_slot {
	uint64_t key; /* port or address, | XS_WRITE for writes */
	uint64_t n;
};

struct exit_stats {
	uint64_t reason[XS_REASONS + 1];
	struct xs_slot io[XS_SLOTS], mmio[XS_SLOTS];
	unsigned nr_io, nr_mmio;
	uint64_t io_other, mmio_other;
	uint64_t kicks; /* KVM_RUN ended by a signal (pause, stop) */
};

/* Counts the exit in @run. The vCPU's own thread; no allocation, no syscall. */
void exit_stats_add(struct exit_stats *xs, const struct kvm_run *run);

/* Writes @xs as lines "hvtrace: stats: cpu@cpu exits ..." to @f, most frequent first. After the
 * vCPU's thread is joined (or from it). */
void exit_stats_print(const struct exit_stats *xs, unsigned cpu, FILE *f);

#endif
