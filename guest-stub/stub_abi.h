/* The exit-free stub's memory layout, shared by the stub (one per guest ISA,
 * guest-stub/<isa>/stub.S, assembled; guest-stub/x86/ for x86-64) and the host (host/trace/stub.c).
 * One region of guest memory, mapped executable in the guest's kernel page tables within +-2 GiB of
 * the text it is called from:
 *
 *   +0x0000  code: the entry routines and the return routine (position independent, never
 *            written after placement, so TCG's translation cache never holds a stale copy),
 *            STUB_CODE_SIZE bytes at most
 *   +0x2000  header: parameters the host writes before any site calls the stub, and the
 *            counters the stub keeps
 *   +0x3000  per-CPU ring headers, 64 bytes each (STUB_MAX_CPUS of them)
 *   +0x4000  detour slots (STUB_DETOUR_SIZE bytes each, whole pages; none without detours):
 *            with the code, the only executable pages (the host writes them by physical address)
 *   +rings   nr_cpus rings of (ring_mask + 1) records of STUB_REC_SIZE bytes (the header's H_RINGS)
 *   +stacks  (stacks_mask + 1) shadow stacks of STUB_STACK_SIZE bytes
 *
 * A record is reserved by a compare-and-swap on its CPU's head with interrupts off (so preemption
 * and migration cannot split it, and an NMI that nests only takes the next index), filled, then
 * committed by writing its sequence number (index + 1, low 32 bits) last. The host reads records in
 * index order, stops at the first one not yet committed, and hands the ring back by advancing the
 * CPU's tail; a full ring counts the event in the CPU's `lost` and writes nothing.
 *
 * Shared by every architecture: the region's layout (pages, header fields H_*, ring headers RH_*,
 * the record's size and types, shadow stacks S_* / E_*) is the same for every ISA, and so is
 * struct stub_rec's shape; the host reads them without knowing the guest's ISA. Per architecture
 * (each ISA's stub.S and arch/<isa>/ on the host, behind arch/arch.h): how an entry reaches the
 * stub (x86: CALL rel32 over the fentry NOP5) and the detour slot's code (DT_STI, DT_NOSTI,
 * STUB_DETOUR_SCRATCH: ENDBR64, STI, JMP *(%rsp) are x86's; the host writes it with the arch's
 * detour_code); how the CPU number and time are read (H_CPU_GS_OFF, H_AUX_MASK, H_CPUID,
 * H_CUR_GS_*: x86's %gs, RDTSCP, CPUID); which registers a record carries (R_RAX and the six
 * argument registers of STUB_REC_ARGS in args[] are x86_64's return and SysV argument registers,
 * an ISA with more keeps its first six); the saved-flags bits (F_DETOUR_*: EFLAGS.IF). The stub's stack frame and internal flags
 * are each stub's own (guest-stub/x86/frame.h). */
#ifndef HVT_STUB_ABI_H
#define HVT_STUB_ABI_H

#define STUB_MAX_CPUS 64
#define STUB_CODE_OFF 0x0000
#define STUB_CODE_SIZE 0x2000 /* the code's pages, the only ones executable but for detour slots */
#define STUB_HDR_OFF 0x2000
#define STUB_RINGHDR_OFF 0x3000
#define STUB_RINGHDR_SIZE 64
#define STUB_RINGS_OFF (STUB_RINGHDR_OFF + STUB_MAX_CPUS * STUB_RINGHDR_SIZE)
#define STUB_MAGIC 0x6275747374766868 /* "hhvtstub" */
/* A stub whose code must not share its mapping with the data it writes (arm64: the region is
 * mapped by level-2 blocks, 2 MiB or larger, none both writable and executable) runs from a copy of
 * its code this far below the region (at the end of a block of its own), and finds the header at
 * .Lbase + STUB_CODE_DELTA + STUB_HDR_OFF. */
#define STUB_CODE_DELTA 0x200000

/* Header fields (offsets in the header page). The guest can rewrite any of them: the host keeps its
 * own copy of every bound it writes here and never reads one back. */
#define H_MAGIC 0	 /* u64 */
#define H_NR_CPUS 8	 /* u32 */
#define H_RING_MASK 16	 /* u64: records per ring - 1 (a power of two - 1) */
#define H_CPU_GS_OFF 24	 /* u64: the CPU number is the u32 at %gs:this */
#define H_RINGS 32	 /* u64: GVA of the first ring */
#define H_STACKS 40	 /* u64: GVA of the shadow-stack table */
#define H_STACKS_MASK 48 /* u64: shadow stacks - 1 (a power of two - 1) */
#define H_STACK_SHIFT 56 /* u64: a guest stack is a 1 << this aligned region */
#define H_RET 64	 /* u64: GVA of the return routine */
#define H_BAD_CPU 72	 /* u64 counter: calls on a CPU number >= nr_cpus (not recorded) */
#define H_NO_STACK 80	 /* u64 counter: hooked entries whose return could not be hooked */
#define H_MAX_DEPTH 88	 /* u64: frames per shadow stack; the stub uses at most STUB_STACK_DEPTH */
#define H_GRAPH 96	 /* u64: 1: set_graph_function: only calls below a root entry are traced */
#define H_AUX_MASK 104	 /* u64: nonzero: time and CPU number from one RDTSCP, the CPU number
			  * being ECX (IA32_TSC_AUX) & this; 0: RDTSC and the u32 at %gs:H_CPU_GS_OFF */
#define H_CPUID 112	 /* u64: nonzero (and H_AUX_MASK 0): the CPU number is CPUID leaf 1's initial
			  * APIC ID, EBX[31:24], which the VMM sets to each vCPU's index */
#define H_WAIT_TSC 120	 /* u64: nonzero: a full ring is waited for, up to this many TSC ticks, for
			  * the host to make room (backpressure), unless its RH_GAVE_UP is set */
#define H_CUR_GS_ON 128	 /* u64: nonzero: the current task pointer is the u64 at %gs:H_CUR_GS_OFF
			  * (right from the kernel's first instruction, when the per-CPU areas
			  * move) rather than where H_CUR_SLOTS says */
#define H_CUR_GS_OFF 136 /* u64 */
#define H_PID_OFF 144	 /* u64: the pid's offset in the task struct (u32) */
#define H_COMM_OFF 152	 /* u64: the comm's offset in the task struct (16 bytes); 0: records carry
			  * no task identity (R_TASK_ID 0) */
#define H_AGG 160	 /* u64: GVA of the aggregation tables (per CPU, H_AGG_MASK + 1 entries each);
			  * 0: none */
#define H_AGG_MASK 168	 /* u64: entries per CPU table - 1 (a power of two - 1) */
#define H_NS_MULT 176	 /* u64: a duration in ns is (TSC ticks * this) >> H_NS_SHIFT */
#define H_NS_SHIFT 184	 /* u64 */
#define H_PREEMPT_GS 192 /* u64: nonzero: the CPU's preempt count is the u32 at %gs:this. The counting
			   * routines and the return routine then raise it for their duration
			   * instead of masking interrupts (no CLI, so no STI: under TCG an STI
			   * ends the translation block through QEMU's main loop) */
#define H_FAST 200	 /* u64: nonzero (the host sets it with aggregation tables, H_PREEMPT_GS, and the
			  * CPU number from RDTSCP or %gs): the function profiler's mode (STUB_AGG_RET)
			  * takes the short path (guest-stub/x86/prof.S): one table entry per site and
			  * CPU (bucket STUB_AGG_BOTH) counting calls and returns, its address kept in
			  * the frame (E_IP, see STUB_AGG_BOTH) so the return needs no second lookup.
			  * Only for a kernel in the upper half (Linux: its preempt count): such a frame
			  * is told from a site by bit 63, so without H_FAST E_IP is always the site */
#define H_CUR_SLOTS 512	 /* u64[STUB_MAX_CPUS]: GVA of the current-task pointer per CPU, 0: none */

/* Ring header fields (offsets in a CPU's 64-byte ring header). */
#define RH_HEAD 0  /* u64: next index the guest reserves */
#define RH_TAIL 8  /* u64: next index the host reads (host-written) */
#define RH_LOST 16 /* u64: events dropped because the ring was full */
#define RH_GAVE_UP 24 /* u64: nonzero: a wait for room timed out (the host is gone or late): no more
		       * waiting until the host clears it */
#define RH_LAST_TASK 40 /* u64: the task last announced on this ring (STUB_REC_TASK), */
#define RH_LAST_ID 48	/* u32: and its identity (guest-written: the host never reads them) */
#define RH_WAITS 32   /* u64: waits for room in a full ring (backpressure; each ended with room,
		       * or timed out) */
#define RH_AGG_DROP 56 /* u64: aggregated events whose key found no room in the CPU's table */

/* Record fields: 64 bytes. An entry whose event needs the argument registers takes two consecutive
 * records (reserved together): the entry with R_FLAGS bit STUB_F_ARGS, then a STUB_REC_ARGS record
 * holding RDI, RSI, RDX, RCX, R8, R9 from R_TSC on. */
#define STUB_REC_SIZE 64
#define STUB_REC_SHIFT 6
#define R_SEQ 0	    /* u32: the low 32 bits of index + 1, written last (the commit marker) */
#define R_STASH 4   /* u32: the same, kept here from the reservation until the commit; then: */
#define R_TASK_ID 4 /* u32: the task's identity when the event happened (stub_task_id: its pid
		     * mixed with a fold of its comm), so the host knows a task struct that was
		     * reused or renamed (exec) by the time it reads it; 0: not recorded */
#define R_TYPE 8    /* u8: STUB_REC_* */
#define R_DEPTH 9   /* u8: nesting depth on the guest stack (hooked entries and returns); with
		     * H_GRAPH counted from the root frame */
#define R_CPU 10    /* u16 */
#define R_FLAGS 12  /* u32: STUB_F_* */
#define R_TSC 16    /* u64: RDTSC when the event happened */
#define R_IP 24	    /* u64: the patched site (the function) */
#define R_PARENT 32 /* u64: entry: its return address; return: where it returns to */
#define R_TASK 40   /* u64: the current task pointer (0 if unknown) */
#define R_RAX 48    /* u64: RAX (the return value on a return) */
#define R_T0 56	    /* u64: return: RDTSC at the matching entry */
#define R_ARGS 16   /* in a STUB_REC_ARGS record: u64[6] */

#define STUB_REC_ENTRY 1	/* an entry; depth valid if its return was hooked */
#define STUB_REC_ENTRY_NOHOOK 2 /* an entry whose return should have been hooked but could not be */
#define STUB_REC_RETURN 3	/* a hooked function returned */
#define STUB_REC_DROP 4		/* a hooked frame was abandoned without returning (non-local exit) */
#define STUB_REC_ARGS 5		/* the argument registers of the entry before it */
#define STUB_REC_SKIP 6		/* nothing: an entry that turned out to be outside the graph */
#define STUB_REC_TASK 7		/* the CPU's current task, ahead of the first event of its run on the
				 * CPU or after it changed (exec): R_TASK, R_TASK_ID, the pid at R_IP
				 * (u32), the comm's 16 bytes at R_RAX..R_T0 */
#define STUB_F_ARGS 1		/* entry: a STUB_REC_ARGS record follows */
/* entry with STUB_F_ARGS outside the graph (H_GRAPH): recorded for its -e event alone, its return
 * not hooked */
#define STUB_F_ALONE 4

/* Detours (a stub probe at a function entry without an fentry site): slots of STUB_DETOUR_SIZE bytes
 * at the region's end, each
 *   +0          CALL rel32 to a detour entry routine (hvt_stub_detour*)
 *   +5          the function's displaced first instructions, relocated
 *   then        JMP *(delta - STUB_DETOUR_SCRATCH)(%rsp), delta being what they pushed
 *   +DT_STI     ENDBR64; STI; JMP rel32 back into the function (STI's shadow covers the JMP)
 *   +DT_NOSTI   ENDBR64; JMP rel32 back
 * A detour routine does what the entry routine does, but returns with interrupts off and leaves at
 * STUB_DETOUR_SCRATCH bytes below the function's return-address slot the address to go on at,
 * DT_STI when interrupts were on: so nothing can interrupt (and preempt) a task inside a detour,
 * and the host can take a detour away once no vCPU is inside one. */
#define STUB_DETOUR_SIZE 128
#define STUB_DETOUR_SCRATCH 256
#define DT_STI 96
#define DT_NOSTI 112

/* Shadow stacks: one per guest stack region, claimed by compare-and-swap of its key
 * ((slot >> shift) + 1) within STUB_STACK_PROBES entries of its hash, locked by a try-lock on entry
 * (busy: the return is not hooked) and a spin on return, freed (key 0) when it empties. */
#define STUB_STACK_SHIFT 13
#define STUB_STACK_SIZE (1 << STUB_STACK_SHIFT)
#define STUB_STACK_DEPTH 255 /* room per stack; the header's max_depth is the bound in force */
#define STUB_STACK_PROBES 8
#define S_KEY 0	 /* u64 */
#define S_LOCK 8 /* u64: bit 0 */
#define S_NR 16	 /* u64 */
#define S_ROOT 24 /* u64: with H_GRAPH, index + 1 of the live root frame; 0: none */
#define S_E 32	 /* entries of 32 bytes: */
#define E_SLOT 0
#define E_ORIG 8
#define E_IP 16
#define E_TSC 24

/* Aggregation in the guest (ftrace's hist triggers and function profiler kept by the stub): a site
 * patched to a counting routine (hvt_stub_count*) writes no record; it adds the call, and with a
 * hooked return the return and its duration, to its CPU's table: H_AGG_MASK + 1 entries of
 * STUB_AGG_SIZE bytes, open addressing over at most STUB_AGG_PROBES entries from the key's hash,
 * claimed by a compare-and-swap of A_IP (0: empty) after A_KEY is written, counted without LOCK
 * (the CPU's own, interrupts off). A key that finds no room is counted in the CPU's RH_AGG_DROP.
 * The host reads the tables at the end and trusts nothing in them but as the guest's word on its
 * own counts (host/trace/stub_agg). The routine's mode (STUB_AGG_*: the index of its entry in
 * struct stub's agg[]) is kept in the shadow frame's E_TSC bits 63..61 for the return. */
#define STUB_AGG_SIZE 64
#define STUB_AGG_SHIFT 6
#define STUB_AGG_PROBES 16
#define STUB_AGG_RET 1	/* the return is hooked: returns and durations counted */
#define STUB_AGG_PID 2	/* keyed by the task's pid too (else A_KEY's pid half is 0xffffffff) */
#define STUB_AGG_LOG2 4 /* returns keyed by the log2 bucket of their duration in ns */
#define STUB_AGG_NOPID 0xffffffff
#define STUB_AGG_UNWOUND 0xffff /* the bucket of a counting site's frames unwound (A_KEY) */
/* The bucket of the short path's entries (H_FAST): A_HITS counts the calls, the u64 at A_COMM the
 * returns, A_SUM, A_SUMSQ and A_MAX their durations (pid not keyed: A_KEY is all ones). Its frames
 * keep in E_IP that entry's address with bit 63 cleared and the CPU in bits 5..0 (a site, always a
 * kernel address, has bit 63 set). */
#define STUB_AGG_BOTH 0xffffffff
#define STUB_AGG_TSC_MASK 0x1fffffffffffffff /* E_TSC of a counting frame: the TSC below the mode */
#define A_IP 0	   /* u64: the site; 0: an empty entry */
#define A_KEY 8	   /* u64: the pid (u32, STUB_AGG_NOPID when not keyed by it), then the bucket
		    * (u32): 0 calls, 1 returns, 2 + log2(duration in ns) returns in that bucket,
		    * STUB_AGG_UNWOUND hooked frames abandoned without returning (pid not keyed),
		    * STUB_AGG_BOTH calls and returns (H_FAST) */
#define A_HITS 16  /* u64 */
#define A_SUM 24   /* u64: returns: the durations' sum in ns */
#define A_SUMSQ 32 /* u64: returns: the sum of their squares (ns^2, wrapping) */
#define A_MAX 40   /* u64: returns: the longest, in ns */
#define A_COMM 48  /* 16 bytes: the task's comm when the entry was claimed (pid keys) */

#ifndef __ASSEMBLER__
#include <stdint.h>

/* One aggregation table entry as the host reads it. */
struct stub_agg_ent {
	uint64_t ip;
	uint32_t pid, bucket;
	uint64_t hits, sum, sumsq, max;
	char comm[16];
};

_Static_assert(sizeof(struct stub_agg_ent) == STUB_AGG_SIZE, "stub aggregation entry layout");

/* One ring record as the host reads it (a STUB_REC_ARGS record: args over tsc..t0). */
struct stub_rec {
	uint32_t seq;
	uint32_t task_id; /* R_STASH until the commit, then R_TASK_ID */
	uint8_t type, depth;
	uint16_t cpu;
	uint32_t flags;
	union {
		struct {
			uint64_t tsc, ip, parent, task, rax, t0;
		};
		uint64_t args[6];
	};
};

/* One shadow-stack entry. */
struct stub_frame {
	uint64_t slot, orig, ip, tsc;
};

_Static_assert(sizeof(struct stub_rec) == STUB_REC_SIZE, "stub record layout");

/* R_TASK_ID of a task with @pid and the 16 bytes of @comm as the stub computes it (.Ltask_id):
 * the comm's two halves XORed and folded to 32 bits, XOR the pid times a large odd constant, low
 * bit set (0 means "not recorded"). */
static inline uint32_t stub_task_id(int32_t pid, const unsigned char comm[16])
{
	uint64_t lo = 0, hi = 0, q;

	for (int i = 7; i >= 0; i--) {
		lo = lo << 8 | comm[i];
		hi = hi << 8 | comm[8 + i];
	}
	q = lo ^ hi;
	return ((uint32_t)q ^ (uint32_t)(q >> 32) ^ (uint32_t)pid * 0x9e3779b1u) | 1u;
}
#endif

#endif
