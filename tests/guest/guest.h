/* Shared between the test guest's runtime (not instrumented) and its workloads (instrumented). */
#ifndef HVT_TEST_GUEST_H
#define HVT_TEST_GUEST_H

#include <stdint.h>

#define MAX_CPUS 64
#define NTASKS 4
#define TASK_STEPS 4
#define TASK_STACK 65536 /* boot contract: guest stacks are 64 KiB-aligned 64 KiB regions */
#define FIB_BASE 12
#define TREE_ROUNDS 3
#define TREE_VALUE 243
#define BENCH_CALLS 20000 /* per vCPU, GUEST_MODE_BENCH */

#define notrace __attribute__((no_instrument_function))
#define noinline __attribute__((noinline))

/* The task ABI hvtrace reads (docs/guest-contract.md): pid at offset 0, comm at offset 4. */
struct task {
	int32_t pid;
	char comm[16];
	uint64_t rsp;
	int cpu;      /* vCPU it runs on now */
	int next_cpu; /* where to run after the next yield */
	int done;
	int migrations;
	long result;
};

/* Functions of the workloads, each counted per vCPU at its entry. */
enum fn_id { FN_WORKLOAD_RUN, FN_FIB, FN_TREE_ROOT, FN_TREE_A, FN_TREE_B, FN_TREE_LEAF,
	     FN_TASK_BODY, FN_TASK_STEP, FN_TASK_LEAF, FN_TAIL_TOP, FN_TAIL_MID, FN_TAIL_LEAF,
	     FN_NL_OUTER, FN_NL_INNER, FN_DEEP, FN_EV_TARGET, NR_FN };

/* A minimal setjmp/longjmp (start.S) for the non-local exit workload. */
struct jmpbuf {
	uint64_t rbx, rbp, r12, r13, r14, r15, rsp, rip;
};
long nl_setjmp(struct jmpbuf *b) __attribute__((returns_twice));
void nl_longjmp(struct jmpbuf *b, long v) __attribute__((noreturn));

#define NL_DEPTH 3   /* nl_inner calls abandoned by each nl_outer */
#define NL_VALUE 7   /* what nl_outer returns */
#define TAIL_ARG 1   /* tail_top(TAIL_ARG) = 2 * (TAIL_ARG + 2) */
/* For function-based events: a struct with a string, a chain of pointers and an array. */
struct ev_node {
	long value;
	struct ev_node *next;
};
struct ev_obj {
	int32_t id;	     /* +0 */
	uint32_t flags;	     /* +4 */
	const char *name;    /* +8 */
	struct ev_node *node; /* +16 */
	uint16_t arr[4];     /* +24 */
};
#define EV_BAD_POINTER 0x7fff00000000ull /* not mapped in the guest */
long ev_target(struct ev_obj *o, const char *label, const uint32_t *vals, long n);
void ev_report(void);

#define DEEP_CALLS 150 /* deeper than hvtrace's per-stack shadow bound (128) */

extern const char *const fn_names[NR_FN];
extern uint64_t fn_count[MAX_CPUS][NR_FN];
extern int nr_cpus;

int this_cpu(void);
void count_call(enum fn_id f);
void task_yield_migrate(struct task *t);

/* workloads.c */
long workload_run(int cpu, long *fib_out);
void task_body(struct task *t);
long fib(long n);
long tree_root(void);
long tail_top(long x);
long nl_outer(void);
long deep(long n);

#define COUNT(f) count_call(f)

#endif
