/* Stub probes, guest side: places the stub (guest-stub/x86/) in guest memory through the target,
 * patches sites NOP5 <-> CALL rel32 into it, reads the records its per-CPU rings hold, and at
 * detach hands every hooked return back. Record decoding belongs to the drain (stub_drain.c). */
#ifndef HVT_STUB_H
#define HVT_STUB_H

#include "arch/arch.h"
#include "guest-stub/stub_abi.h"
#include "host/trace/target.h"
#include "vmi/vmi_task.h"

#include <stdbool.h>
#include <stdint.h>

/* Records per CPU ring: a power of two, at least what was asked for (--buffer-size-kb: bytes per
 * CPU, as ftrace's buffer_size_kb), by default at least ftrace's default of 1408 KiB per CPU. */
#define STUB_RING_RECORDS_DEFAULT 32768	     /* 2 MiB per CPU */
#define STUB_RING_RECORDS_MAX	  (1u << 24) /* 1 GiB per CPU */
#define STUB_RING_RECORDS_MIN	  64
#define STUB_STACKS_MAX	      256
#define STUB_STACKS_MIN	      16
/* Aggregation table entries per CPU: a power of two in this range (stub_agg_entries_for). */
#define STUB_AGG_ENTRIES_MIN 1024
#define STUB_AGG_ENTRIES_MAX 65536 /* 4 MiB per CPU */

struct stub_blob;

struct stub {
	struct target *tgt; /* borrowed */
	const struct stub_blob *blob; /* the guest ISA's stub (guest-stub/stub_blob.h) */
	struct target_region reg;
	uint64_t code_gva; /* where the stub's code runs: reg.gva, or reg.code_gva */
	bool placed;
	unsigned nr_cpus;
	uint64_t ring_records; /* per CPU */
	uint64_t nr_stacks;    /* 0: no return hooks */
	/* The bounds the host gave the stub, kept here: the guest can rewrite its copy in the
	 * header, the host never reads them back. */
	unsigned max_depth;   /* frames per shadow stack (H_MAX_DEPTH as written) */
	unsigned stack_shift; /* guest stacks are 1 << stack_shift aligned regions */
	const char *cpu_from; /* where the stub takes its CPU number: "rdtscp", "gs" or "cpuid" */
	uint64_t entry[16]; /* GVAs of the entry routines: [hook | 2 * arguments | 4 * graph root |
			     * 8 * from a detour slot] */
	uint64_t ret;	   /* GVA of the return routine */
	uint64_t agg[8];   /* GVAs of the counting routines by mode (STUB_AGG_*), 0: none */
	uint64_t agg_entries;	      /* aggregation table entries per CPU (0: no tables) */
	uint64_t tail[STUB_MAX_CPUS]; /* next index the host reads, per CPU */
	uint64_t head[STUB_MAX_CPUS]; /* guest-reported: the ring's head as last read (any value) */
	uint64_t gave_up[STUB_MAX_CPUS]; /* guest-reported: its RH_GAVE_UP as last read */
	uint64_t waits[STUB_MAX_CPUS];	 /* guest-reported: its RH_WAITS as last read */
	uint64_t wait_timeouts; /* waits for room the host saw timed out (RH_GAVE_UP cleared) */
	uint64_t lost[STUB_MAX_CPUS]; /* guest-reported: the guest's count of events its ring had no
				       * room for, as last read (any value the guest wrote) */
	uint64_t bad_cpu, no_stack;   /* guest-reported: the header's counters, as last read */
	uint64_t restored_slots;      /* hooked returns handed back at detach */
	unsigned nr_detours;	      /* detour slots at the region's end (stub_detour_write) */
	uint64_t detour_off;	      /* region offset of slot 0 (in the code's block, when separate) */
	uint64_t detour_gva, detour_gpa; /* slot 0 */
};

/* Where the stub needs the CPU number and the running task. */
struct stub_guest {
	uint64_t cpu_gs_off;		    /* the u32 CPU number is at %gs:cpu_gs_off */
	uint32_t cpu_aux_mask; /* nonzero: it is RDTSCP's ECX & this instead (preferred) */
	bool cpu_cpuid;	       /* without cpu_aux_mask: it is CPUID leaf 1's APIC ID instead */
	const struct vmi_task_layout *task; /* current-task slots, or NULL */
	unsigned stack_shift;		    /* guest stacks are 1 << stack_shift aligned regions */
	unsigned max_depth;   /* frames per shadow stack (the host's SHADOW_MAX_DEPTH) */
	uint64_t max_records; /* records per CPU ring wanted, rounded up to a power of two
			       * (0: STUB_RING_RECORDS_DEFAULT) */
	bool exact;	      /* fewer than that is an error (else: as many as fit) */
	bool graph;	      /* set_graph_function: only calls below a root are traced */
	uint64_t wait_tsc;    /* backpressure: TSC ticks the stub waits for room in a full ring
			       * before it counts the event lost (0: it never waits) */
	unsigned nr_detours;  /* detour slots wanted (probes at an entry without fentry site) */
	uint64_t agg_entries; /* aggregation table entries per CPU wanted (0: no counting sites),
			       * rounded by stub_agg_entries_for */
	uint64_t tsc_khz;     /* the guest's TSC rate, for the durations the stub counts */
};

/* Records per CPU ring for @want records asked for (0: the default): the next power of two within
 * [STUB_RING_RECORDS_MIN, STUB_RING_RECORDS_MAX]. Pure. */
uint64_t stub_ring_records_for(uint64_t want);

/* Bytes of the stub's region (guest-stub/stub_abi.h) for @nr_cpus rings of @ring_records records
 * and @nr_stacks shadow stacks. Pure. */
uint64_t stub_region_bytes(unsigned nr_cpus, uint64_t ring_records, uint64_t nr_stacks);

/* With the target paused: places and initialises the stub for @nr_cpus CPUs, reachable by CALL
 * rel32 from every address in [@lo, @hi]; with @returns room for shadow stacks. Returns 0 or -errno
 * with a reason in @err (-ENOTSUP: the target has no stub support). Main thread. */
int stub_place(struct stub *s, struct target *tgt, unsigned nr_cpus, bool returns,
	       const struct stub_guest *g, uint64_t lo, uint64_t hi, char *err, size_t errlen);

/* Whether the stub of an earlier hvtrace (killed together with its guardian) still lives at
 * guest-physical @gpa, where a stub region would start. Any thread. */
bool stub_live_at(struct target *tgt, uint64_t gpa);

/* With the target paused: CALL rel32 into the stub at @site, written by guest-physical address
 * (@gpa, resolved at attach) and only if the five bytes there are still @nop, the NOP5 verified at
 * attach. The entry also hooks the return when @hook, records the argument registers when @args,
 * and starts a graph when @root (set_graph_function; implies @hook). 0, -EILSEQ (@nop is not a
 * NOP5), -ERANGE (out of reach), -ESTALE (the site no longer holds @nop; nothing written), or
 * -EFAULT. */
int stub_patch(struct stub *s, uint64_t site, uint64_t gpa, const uint8_t *nop, bool hook,
	       bool args, bool root);

/* With the target paused: CALL rel32 into the counting routine of @mode (STUB_AGG_*) at @site, as
 * stub_patch's: the site's calls (and with STUB_AGG_RET its returns) are counted in the stub's
 * tables, never recorded. 0, -EINVAL (no such routine, or no tables placed), or stub_patch's
 * errors. */
int stub_patch_agg(struct stub *s, uint64_t site, uint64_t gpa, const uint8_t *nop, unsigned mode);

/* Aggregation table entries per CPU for @want: the next power of two within
 * [STUB_AGG_ENTRIES_MIN, STUB_AGG_ENTRIES_MAX]. Pure. */
uint64_t stub_agg_entries_for(uint64_t want);

/* Bytes of @nr_cpus aggregation tables of @entries each. Pure. */
uint64_t stub_agg_bytes(unsigned nr_cpus, uint64_t entries);

/* Copies entries [@first, @first + @n) of CPU @cpu's aggregation table (within the host's own
 * bounds) into @buf, as the guest holds them (untrusted: host/trace/stub_agg validates). 0,
 * -EINVAL out of bounds or without tables, -EFAULT. Main thread, or the drain thread. */
int stub_agg_read(struct stub *s, unsigned cpu, uint64_t first, struct stub_agg_ent *buf,
		  uint64_t n);

/* CPU @cpu's count of aggregated events its table had no room for (RH_AGG_DROP, guest-reported:
 * any value). 0 or -errno. */
int stub_agg_dropped(struct stub *s, unsigned cpu, uint64_t *out);

/* With the target paused: whether guest-physical @gpa may hold a CALL rel32 from @site into the
 * stub (it does, or it cannot be read): where a stub_patch that failed may have landed all the
 * same. */
bool stub_may_call(struct stub *s, uint64_t site, uint64_t gpa);

/* With the target paused: puts @nop back at @site (guest-physical @gpa) if it still holds a CALL
 * rel32 into the stub. 0, -ESTALE when the guest rewrote the site (nothing written), -errno. */
int stub_unpatch(struct stub *s, uint64_t site, uint64_t gpa, const uint8_t *nop);

/* True if @rip is inside the stub's code or its detours. */
bool stub_owns_rip(const struct stub *s, uint64_t rip);

/* True if @rip is where a context interrupted inside the stub may resume: an entry routine's
 * instructions before its CLI, a detour slot's CALL (everywhere else in those interrupts are off,
 * so no task is interrupted, let alone preempted, there), and anywhere in the counting routines
 * and the return routine (which run with interrupts on, pinned by the preempt count). What the
 * detach looks for on the guest's kernel stacks before it unmaps the stub. Pure. */
bool stub_interruptible_at(const struct stub *s, uint64_t rip);

/* Detours: a probe at a function entry without an fentry site. The entry's first instructions
 * (plan: the arch's reloc_plan) give way to a JMP rel32 into detour slot @idx (layout: stub_abi.h),
 * which holds a CALL rel32 into the stub's detour routine (so the stub sees the stack an fentry
 * CALL would give it, and records the slot's address as the site), the displaced instructions
 * relocated, run with interrupts off, and the way back. */
#define STUB_DETOURS_MAX 65536

/* Guest address of detour slot @idx (its CALL). Pure. */
uint64_t stub_detour_gva(const struct stub *s, unsigned idx);

/* Which detour slot a record's site @ip names: its index, or -1 (not a detour's CALL). Any
 * thread. */
long stub_detour_index(const struct stub *s, uint64_t ip);

/* With the target paused, before its site is patched: writes detour slot @idx for @plan (made from
 * the bytes at the site, plan->code_addr, which has no ENDBR64 left before it, and passed by
 * the arch's reloc_detour_check) calling the detour routine for @hook, @args and @root as
 * stub_patch's. Written through write_text, so that a TCG translation of an earlier session's bytes
 * there is dropped. 0, or -errno with one line in @why (-EOPNOTSUPP, -ERANGE, -ENOSPC, -EFAULT). */
int stub_detour_write(struct stub *s, unsigned idx, const struct arch_reloc_plan *plan, bool hook,
		      bool args, bool root, char *why, size_t whylen);

/* With the target paused: JMP rel32 to detour slot @idx at @site (guest-physical @gpa), only if
 * its first five bytes are still @orig (the plan's). 0, -ESTALE (nothing written), -ERANGE,
 * -errno. Undone by stub_detour_unpatch, which puts @orig back only where our JMP still is (0,
 * -ESTALE: the guest rewrote it, -errno). */
int stub_detour_patch(struct stub *s, unsigned idx, uint64_t site, uint64_t gpa,
		      const uint8_t *orig);
int stub_detour_unpatch(struct stub *s, unsigned idx, uint64_t site, uint64_t gpa,
			const uint8_t *orig);
/* Whether @gpa may hold our JMP to detour @idx (it does, or cannot be read). */
bool stub_detour_may_jump(struct stub *s, unsigned idx, uint64_t site, uint64_t gpa);

/* With the target paused: writes the saved return address back into every guest stack slot that
 * still points at the return routine; with @clear (only once no vCPU is inside the stub) also
 * empties the shadow stacks. Returns 0 or the first error (it still tries all). */
int stub_restore_slots(struct stub *s, bool clear);

/* Hooked returns still out, as the guest's shadow stacks say (each stack's depth bounded by the
 * layout's room: any value the guest wrote), -errno when they cannot be read. What a detach waits
 * for where a return is hooked in a register (stub_blob ret_in_register): the stub must stay until
 * each has come back through it. Target paused, or any thread. */
long stub_hooked_frames(struct stub *s);

/* With the target paused and nothing left that can enter it: unmaps the stub. */
void stub_unplace(struct stub *s);

/* Up to @max committed, unread records of CPU @cpu, oldest first (across the end of the ring),
 * copied into @buf (at most the host's ring size, whatever head the guest wrote). Returns how many
 * (0 if none or unreadable). Only the drain thread. */
unsigned stub_read(struct stub *s, unsigned cpu, struct stub_rec *buf, unsigned max);

/* Once no vCPU can commit a record any more (the final drain): hands back the records of CPU @cpu
 * reserved but never committed ahead of the first committed one (gaps in the sequence numbers),
 * reading through @buf (@max records). Returns how many (0: the next record is committed, or no
 * record after it is). Only the drain thread. */
unsigned stub_skip_uncommitted(struct stub *s, unsigned cpu, struct stub_rec *buf, unsigned max);

/* Records CPU @cpu's ring held beyond the host's tail at the last read of its header, as the
 * guest says (a lie is bounded to the ring's size). Only the drain thread. */
uint64_t stub_backlog(const struct stub *s, unsigned cpu);

/* Waits for room in a full ring the guest reports in all (backpressure; any value it wrote,
 * saturating). Only the drain thread, or once it stopped. */
uint64_t stub_guest_waits(const struct stub *s);

/* Hands @n records of CPU @cpu back to the guest, and lets its stub wait for room again if a wait
 * had timed out (RH_GAVE_UP cleared, counted in wait_timeouts). 0 or -EFAULT. Only the drain
 * thread. */
int stub_consume(struct stub *s, unsigned cpu, unsigned n);

/* Events the guest says it could not record (full rings, CPU numbers out of range, returns not
 * hooked because their shadow stack was busy or full): sums of the guest's counters
 * (guest-reported: any value the guest wrote, the sums saturating), as stub_read last saw them
 * where the guest can no longer be read (a QEMU that exited). */
struct stub_counters {
	uint64_t lost, bad_cpu, no_stack;
};
void stub_counters(struct stub *s, struct stub_counters *out);

#endif
