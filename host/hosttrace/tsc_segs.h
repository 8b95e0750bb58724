/* Each vCPU's guest TSC offset as the host's KVM moves it (issue 40): a table of segments per vCPU,
 * each "from host TSC H on, the guest's TSC is the host's plus O", in the order the host wrote them,
 * and the host TSC at which a guest TSC value a vCPU read was current. Where the host's TSC is
 * unstable (a nested KVM, a TSC that is not the clocksource), KVM sets a vCPU's offset back at each
 * vcpu_load and catches it up after, so the guest's TSC is not one line against the host's; a stub
 * record's guest TSC then says when it was written only with the offset in force then. Pure; one
 * thread at a time (the drain's). */
#ifndef HVT_TSC_SEGS_H
#define HVT_TSC_SEGS_H

#include <stdbool.h>
#include <stdint.h>

#define TSC_SEGS_KEEP    4096u /* segments kept per vCPU: the newest, a ring */
#define TSC_SEGS_REORDER 64u   /* how far back a late move is put in its place */

struct tsc_seg {
	uint64_t host;	 /* host TSC at which the offset was written */
	uint64_t offset; /* guest TSC - host TSC from then on (mod 2^64) */
};

struct tsc_segs {
	unsigned nr_vcpus;
	struct tsc_seg *seg; /* nr_vcpus * TSC_SEGS_KEEP */
	uint64_t *n;	     /* per vCPU: segments ever added */
	uint64_t *cursor;    /* per vCPU: the segment (sequence number) of the last lookup */
	uint64_t added, dropped; /* segments added; lookups older than the oldest kept */
	uint64_t bad_vcpu;	 /* moves of a vCPU number out of range, ignored */
};

/* Allocates the table of @nr_vcpus vCPUs (1 to 1024). 0 or -ENOMEM/-EINVAL. */
int tsc_segs_init(struct tsc_segs *s, unsigned nr_vcpus);

/* Frees it. Safe on a zeroed or freed struct. */
void tsc_segs_free(struct tsc_segs *s);

/* vCPU @vcpu's offset became @offset at host TSC @host (one older than the newest goes in its
 * place, up to TSC_SEGS_REORDER back; an out-of-range @vcpu is counted in bad_vcpu). */
void tsc_segs_add(struct tsc_segs *s, unsigned vcpu, uint64_t host, uint64_t offset);

/* The host TSC at which vCPU @vcpu's guest read @guest: with the offset of the newest segment that
 * had begun by then in guest time (its host TSC plus its offset at most @guest; KVM never moves a
 * guest's TSC backwards, so these starts rise). False when the vCPU has no segment. Moves the
 * vCPU's cursor: lookups in rising order cost O(1) each. */
bool tsc_segs_host(struct tsc_segs *s, unsigned vcpu, uint64_t guest, uint64_t *host);

#endif
