/* Synthetic kallsyms tables for tests and fuzz seeds: what the kernel's scripts/kallsyms emits, in
 * the 6.1 layout (with or without kallsyms_seqs_of_names) or the 6.4+ one, base-relative with
 * ABSOLUTE_PERCPU ('A' symbols are absolute, the rest relative to the relative base), or the 7.0+
 * one (labels aligned to 4, offsets place-relative, no relative base). */
#ifndef HVT_TESTS_KALLSYMS_IMAGE_H
#define HVT_TESTS_KALLSYMS_IMAGE_H

#include <stddef.h>
#include <stdint.h>

enum ks_layout {
	KS_6_1_NOSEQS, /* offsets, relative_base, num_syms, names, markers, token_table, token_index
			*/
	KS_6_1,	       /* ... markers, seqs_of_names, token_table, token_index */
	KS_6_4, /* num_syms, names, markers, seqs_of_names, token_table, token_index, offsets,
		 * relative_base */
	KS_7_0, /* num_syms (4 bytes), names, markers, token_table, token_index, offsets
		 * (place-relative), seqs_of_names; each aligned to 4 (as Debian's 7.3 image) */
};

struct ks_sym {
	uint64_t addr;
	const char *name; /* its type letter first: "Tvfs_read" */
};

/* Where the builder put each table (offsets into the buffer). */
struct ks_where {
	size_t offsets, rbase, num, names, markers, seqs, tt, ti, end;
};

/* Builds the tables for @n symbols into @buf (@cap bytes, zeroed first) after @lead bytes of
 * pseudo-random filler (a multiple of 8; of 4 for KS_7_0). Non-'A' addresses must be >= @rbase.
 * For KS_7_0, @rbase is instead the address @buf is mapped at (there is no relative base; 'A'
 * symbols are not allowed) and no address may be more than 2 GiB from it. Returns the bytes used
 * (0 when @cap is too small), the places in @w (rbase and seqs: 0 when absent). */
size_t ks_build(uint8_t *buf, size_t cap, const struct ks_sym *syms, size_t n, enum ks_layout lay,
		uint64_t rbase, size_t lead, struct ks_where *w);

/* The token of byte @b in the tables ks_build makes. */
const char *ks_token(unsigned b);

#endif
