/* record --host: each trap event of the guest's file at the moment its vCPU left the guest for it,
 * the host's kvm_exit, instead of when hvtrace heard of the hit (KVM_RUN's return, QEMU's stop
 * reply: after the host's whole exit path, tens of us on a nested host). An event moves when it was
 * stamped while its vCPU was out of its guest (host_side_exit_of) and the exit was at the event's
 * own breakpoint: the guest RIP of the exit is the function's site (entries, -e events) or the
 * return trampoline (returns). Stub events, stamped by the guest's clock while it runs, never are;
 * nor are events whose vCPU's exit the host file does not have. The rest of the event (a return's
 * calltime and rettime) stays as hvtrace measured it. */
#ifndef HVT_TRACEDAT_RESTAMP_H
#define HVT_TRACEDAT_RESTAMP_H

#include "host/sink/tracedat_host.h"

#include <stdint.h>
#include <stdio.h>

struct td_restamp {
	const struct host_side *host; /* the host's file as read back (borrowed) */
	uint64_t t0_ns;		      /* host time of the guest file's time 0 */
	uint64_t trampoline;	      /* where returns exit (0: no returns trapped) */
	unsigned ret_first, ret_end;  /* event ids [ret_first, ret_end): return probes' events */
};

struct td_restamp_counts {
	uint64_t events; /* read */
	uint64_t moved;	 /* to their exit */
	uint64_t shift_max_ns, shift_total_ns;
};

/* Copies the @pages ring-buffer pages of vCPU @cpu from @in (read from its start) to @out as pages
 * again, each event moved as the header says; losses stay where they were. *@out_pages: pages
 * written. Counts add to @n. 0, or -EIO (a read or write failed) or -EINVAL (a page this sink did
 * not write). Any thread; allocation-free. */
int td_restamp_cpu(const struct td_restamp *r, unsigned cpu, FILE *in, uint64_t pages, FILE *out,
		   uint64_t *out_pages, struct td_restamp_counts *n);

#endif
