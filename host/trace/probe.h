/* Probes: one per patched site (INT3 for a trap probe, CALL rel32 into the guest stub for a stub
 * probe), found by address in O(1) without locks or allocation, each with what the session asked of it
 * and its counters. The table is built before the guest runs and never changes shape while it does;
 * only flags and counters change. */
#ifndef HVT_PROBE_H
#define HVT_PROBE_H

#include "arch/arch.h"
#include "host/trace/fevent.h"
#include "host/trace/target.h"
#include "vmi/vmi_sites.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Counters of one probe kept on the vCPU threads and the stub drain (rare events only: hits and returns
 * are in the records). */
struct probe_counters {
	_Atomic uint64_t misses;  /* could not be traced: shadow stack full, unreadable slot, no room */
	_Atomic uint64_t unwound; /* hooked frames abandoned without returning (non-local exit) */
	_Atomic uint64_t hooked;  /* entries whose return was hooked */
};

struct probe {
	uint64_t addr;
	const struct vmi_sym *func; /* borrowed */
	uint32_t id;
	uint64_t gpa;	/* guest-physical address of the site, resolved once by probe_verify_all */
	bool resolved;	/* gpa, orig and nop hold what probe_verify_all found */
	bool rewritten; /* the guest rewrote a patch of ours there: no longer ours to restore */
	uint8_t orig;	/* the byte INT3 replaced (the NOP5's first) */
	bool inserted;	/* INT3 is in guest memory now */
	bool stub;	/* a stub probe: CALL rel32 into the guest stub instead of INT3 */
	bool patched;	/* stub: the CALL is in guest memory now */
	bool yielded;	/* stub: its site is handed back to the guest's patcher (tracer_yield.c);
			 * traced by a breakpoint that lets the site's instruction run, until the
			 * guest puts its NOP back and the stub's CALL returns */
	bool ever_yielded; /* stub: handed back at least once (counted once in --stats) */
	uint8_t nop[ARCH_PATCH_MAX]; /* the patchable NOP the site held when verified (its arch's
				      * site_len bytes; a stub's CALL replaces it) */
	bool entry;	/* an entry site (vmi_site.entry): a trap probe whose instruction runs in place */
	bool inside;	/* an instruction inside a function (vmi_site.inside): an entry site whose
			 * probe never hooks a return and whose [RSP] is no return address */
	/* an entry site that can be a stub probe through a detour (stub.h): its first instructions'
	 * relocation, owned (tracer_set_detour), else NULL; its slot in the stub's detours */
	struct arch_reloc_plan *detour;
	uint32_t detour_idx;

	/* What the session asks of it; set before the tracer attaches, read-only after. */
	bool graph_root;		 /* set_graph_function matched it */
	bool ret_probe;			 /* a return probe (-r) */
	bool quiet_entry;		 /* its entries are not recorded (only there for -r) */
	bool hooks_return;		 /* its returns go through the trampoline (function_graph, -r) */
	bool no_return;			 /* an entry that may not be a call (no C function): its
					  * return is never hooked */
	const struct fe_spec *event;	 /* function-based event of its entries, or NULL; borrowed */
	const struct fe_spec *ret_event; /* typed return fields of RAX, or NULL; borrowed */
	bool agg;			 /* only aggregations want its events */
	bool agg_count;			 /* ... and as a stub probe they are counted in the guest
					  * (a counting routine), never recorded */
	uint8_t agg_mode;		 /* what the aggregations need (STUB_AGG_*) */
	bool stack_key;			 /* a hist keyed by stacktrace watches it: its stack walked at
					  * each call (a trap probe), HVT_STACK_FOR_HIST */

	struct probe_counters n;
};

/* One probe's function name in the table's by-name index. */
struct probe_name {
	const char *name; /* the probe's func->name (borrowed) */
	uint32_t id;
};

/* The probes of a session, by id (0..nr), by site address (probe_lookup) and by function name
 * (probe_find); read it through the functions below, never its fields. */
struct probe_table {
	struct probe *v;
	size_t nr;
	uint32_t *slots; /* open addressing: probe index + 1, 0 = empty */
	uint64_t mask;
	unsigned shift; /* 64 - log2(table size): the hash takes the product's top bits */
	struct probe_name *by_name; /* nr entries sorted by name, then id */
};

/* Fibonacci hashing of a site address into the table. */
static inline uint64_t probe_hash(const struct probe_table *t, uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ull) >> t->shift;
}

/* Lazy arming (tracer_opts.lazy): whether @p stays inserted while no graph root is live: the roots,
 * and the probes with an -e event, which fires outside the graph too. Pure. */
static inline bool probe_always_armed(const struct probe *p)
{
	return p->graph_root || p->event;
}

/* Builds one probe per site in @sites[0..n) (a site listed twice gets one probe), and the by-name
 * index. Returns 0 or -ENOMEM. */
int probe_table_init(struct probe_table *t, const struct vmi_site *const *sites, size_t n);
/* Frees what probe_table_init made (the probes' detours too). */
void probe_table_free(struct probe_table *t);

/* How many probes @t holds (their ids are 0..count). Any thread. */
static inline size_t probe_count(const struct probe_table *t)
{
	return t->nr;
}

/* Probe @id, or NULL past the end. Any thread; only flags and counters of a probe change once the
 * guest runs. */
static inline struct probe *probe_at(const struct probe_table *t, size_t id)
{
	return id < t->nr ? &t->v[id] : NULL;
}

/* Every probe of @t in id order, as `struct probe *p`. */
#define probe_for_each(p, t) for (struct probe *p = (t)->v; p < (t)->v + (t)->nr; p++)

/* The probes of function @name (its entry and any site inside it, each named by its own func),
 * in id order: their count, and *@first their first entry of the by-name index (id by id:
 * (*@first)[k].id). A binary search; any thread. */
size_t probe_find_all(const struct probe_table *t, const char *name,
		      const struct probe_name **first);

/* The first probe (lowest id) of function @name, or NULL. A binary search; any thread. */
struct probe *probe_find(const struct probe_table *t, const char *name);

/* The probe at @addr or NULL. Any thread; wait-free. */
static inline struct probe *probe_lookup(const struct probe_table *t, uint64_t addr)
{
	for (uint64_t i = probe_hash(t, addr) & t->mask;; i = (i + 1) & t->mask) {
		uint32_t s = t->slots[i];

		if (!s)
			return NULL;
		if (t->v[s - 1].addr == addr)
			return &t->v[s - 1];
	}
}

/* Resolves every site to its guest-physical address through vCPU 0's page tables, once (later
 * patches and restores go by that address, whatever page tables a vCPU holds then), and verifies it
 * holds a NOP5 there (kept in the probe). Returns 0, or -EFAULT / -EILSEQ with @err naming the
 * site. Writes no guest memory. Main thread, target paused or not started. */
int probe_verify_all(struct probe_table *t, struct target *tgt, char *err, size_t errlen);

/* Writes INT3 on one verified probe's site / puts its byte back, each only if the byte there is the
 * one expected (the NOP5's first / our INT3); no-ops when already so. 0, -EINVAL (not verified),
 * -ESTALE when the guest rewrote the site (nothing written; the probe is marked rewritten and no
 * longer inserted), or -errno. Any thread (lazy arming runs on vCPU threads). */
int probe_insert(struct probe *p, struct target *tgt);
int probe_remove(struct probe *p, struct target *tgt);

/* Verifies every site holds a NOP5 in guest memory, then writes INT3 on each that is not a stub probe.
 * On any error nothing stays patched and @err names the site. Not from a hit callback. */
int probe_insert_all(struct probe_table *t, struct target *tgt, char *err, size_t errlen);

/* Restores every inserted probe's byte. Returns 0 or the first error (it still tries all); a site
 * the guest rewrote is left alone and only marked (see probe_report_rewritten). Call with the
 * target paused or not running. */
int probe_remove_all(struct probe_table *t, struct target *tgt);

/* Prints one line on stderr for each site the guest rewrote over a patch of ours (left as the guest
 * wrote it), naming the site and the bytes it holds; returns how many. Main thread, after the
 * detach. */
unsigned probe_report_rewritten(const struct probe_table *t, struct target *tgt);

#endif
