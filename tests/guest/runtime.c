/* The test guest's runtime, not instrumented: console, per-vCPU data, barrier, a cooperative scheduler
 * that moves tasks between vCPUs, and the final report of the guest's own call counts. */
#include "tests/guest/guest.h"

#define MSR_GS_BASE 0xc0000101

const char *const fn_names[NR_FN] = {
	[FN_WORKLOAD_RUN] = "workload_run", [FN_FIB] = "fib",
	[FN_TREE_ROOT] = "tree_root",	    [FN_TREE_A] = "tree_a",
	[FN_TREE_B] = "tree_b",		    [FN_TREE_LEAF] = "tree_leaf",
	[FN_TASK_BODY] = "task_body",	    [FN_TASK_STEP] = "task_step",
	[FN_TASK_LEAF] = "task_leaf",	    [FN_TAIL_TOP] = "tail_top",
	[FN_TAIL_MID] = "tail_mid",	    [FN_TAIL_LEAF] = "tail_leaf",
	[FN_NL_OUTER] = "nl_outer",	    [FN_NL_INNER] = "nl_inner",
	[FN_DEEP] = "deep", [FN_EV_TARGET] = "ev_target",
};

struct percpu {
	struct percpu *self;
	int cpu;
	struct task idle; /* the vCPU's boot context, named cpu<N> */
	uint64_t switches;
};

uint64_t fn_count[MAX_CPUS][NR_FN];
int nr_cpus;
#ifdef GUEST_MODE_BARE
/* The `bare` variant defines no hvtrace_* symbol at all: no task names, no CPU number offset. */
#define hvtrace_current guest_current
#endif
/* hvtrace reads the running task of vCPU N from hvtrace_current[N] (docs/guest-contract.md). */
struct task *volatile hvtrace_current[MAX_CPUS];

static struct percpu percpu[MAX_CPUS];
#ifndef GUEST_MODE_BARE
/* hvtrace's stub probes find the CPU number at %gs:hvtrace_cpu_gs (docs/guest-contract.md) where
 * the CPU has no RDTSCP (else IA32_TSC_AUX, which the host sets). */
const unsigned long hvtrace_cpu_gs = __builtin_offsetof(struct percpu, cpu);
#endif
static struct task tasks[NTASKS];
static uint8_t task_stacks[NTASKS][TASK_STACK] __attribute__((aligned(TASK_STACK)));
static long fib_result[MAX_CPUS];
static long workload_bad[MAX_CPUS];
static int tasks_done;
/* GUEST_MODE_LOOP: after the report the guest keeps calling traced functions forever, counting here. */
volatile uint64_t loop_iterations;

struct rq {
	int lock;
	unsigned head, tail;
	struct task *q[NTASKS + 1];
};
static struct rq runqueues[MAX_CPUS];

void context_switch(uint64_t *save_rsp, uint64_t new_rsp);
void task_start(void);

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static void putstr(const char *s)
{
	while (*s)
		outb(0xe9, *s++);
}

static void putnum(long v)
{
	char buf[24];
	int i = 0;
	unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;

	if (v < 0)
		outb(0xe9, '-');
	do {
		buf[i++] = '0' + u % 10;
		u /= 10;
	} while (u);
	while (i)
		outb(0xe9, buf[--i]);
}

static void copy_name(char *dst, const char *prefix, long n)
{
	int i = 0;
	char digits[24];
	int d = 0;

	while (*prefix)
		dst[i++] = *prefix++;
	do {
		digits[d++] = '0' + n % 10;
		n /= 10;
	} while (n);
	while (d)
		dst[i++] = digits[--d];
	dst[i] = 0;
}

static void lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
}

static void unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static void barrier(void)
{
	static int arrived, generation;
	int gen = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);

	if (__atomic_add_fetch(&arrived, 1, __ATOMIC_ACQ_REL) == nr_cpus) {
		__atomic_store_n(&arrived, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&generation, gen + 1, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&generation, __ATOMIC_ACQUIRE) == gen)
		cpu_relax();
}

static void guest_exit(uint32_t code)
{
	outl(0xf4, code);
	for (;;)
		__asm__ volatile("cli; hlt");
}

int this_cpu(void)
{
	int cpu;

	__asm__ volatile("movl %%gs:8, %0" : "=r"(cpu));
	return cpu;
}

void count_call(enum fn_id f)
{
	fn_count[this_cpu()][f]++;
}

static void rq_push(int cpu, struct task *t)
{
	struct rq *rq = &runqueues[cpu];

	lock(&rq->lock);
	rq->q[rq->tail++ % (NTASKS + 1)] = t;
	unlock(&rq->lock);
}

static struct task *rq_pop(int cpu)
{
	struct rq *rq = &runqueues[cpu];
	struct task *t = 0;

	lock(&rq->lock);
	if (rq->head != rq->tail)
		t = rq->q[rq->head++ % (NTASKS + 1)];
	unlock(&rq->lock);
	return t;
}

/* Called by a task: go back to this vCPU's scheduler, which queues the task on the next vCPU. */
void task_yield_migrate(struct task *t)
{
	int before = t->cpu;

	t->next_cpu = (t->cpu + 1) % nr_cpus;
	context_switch(&t->rsp, percpu[t->cpu].idle.rsp);
	if (t->cpu != before)
		t->migrations++;
}

void task_main(struct task *t)
{
	task_body(t);
	t->done = 1;
	context_switch(&t->rsp, percpu[t->cpu].idle.rsp);
}

static void tasks_init(void)
{
	for (int i = 0; i < NTASKS; i++) {
		struct task *t = &tasks[i];
		uint64_t *sp = (uint64_t *)(task_stacks[i] + TASK_STACK);

		t->pid = 101 + i;
		copy_name(t->comm, "worker", i + 1);
		/* frame for context_switch: r15 r14 r13 r12 rbx rbp, then the return address */
		*--sp = (uint64_t)task_start;
		for (int r = 0; r < 6; r++)
			*--sp = r == 2 ? (uint64_t)t : 0; /* r12 = task */
		t->rsp = (uint64_t)sp;
		rq_push(i % nr_cpus, t);
	}
}

static void schedule_loop(struct percpu *pc)
{
	while (__atomic_load_n(&tasks_done, __ATOMIC_ACQUIRE) < NTASKS) {
		struct task *t = rq_pop(pc->cpu);

		if (!t) {
			cpu_relax();
			continue;
		}
		t->cpu = pc->cpu;
		pc->switches++;
		hvtrace_current[pc->cpu] = t;
		context_switch(&pc->idle.rsp, t->rsp);
		hvtrace_current[pc->cpu] = &pc->idle;
		if (t->done)
			__atomic_add_fetch(&tasks_done, 1, __ATOMIC_ACQ_REL);
		else
			rq_push(t->next_cpu, t);
	}
}

static long expected_task_result(const struct task *t)
{
	long sum = 0;

	for (long i = 0; i < TASK_STEPS; i++) {
		long a = (i + t->pid) * 3 + 1;

		sum += a + a * 3 + 1;
	}
	return sum;
}

static long fib_plain(long n)
{
	long a = 0, b = 1;

	while (n--) {
		long c = a + b;

		a = b;
		b = c;
	}
	return a;
}

/* The event test's data as the guest sees it (the trace of ev_target must show the same values). */
static struct ev_node ev_n2 = {.value = 99};
static struct ev_node ev_n1 = {.value = 7, .next = &ev_n2};
static const uint32_t ev_vals[3] = {10, 20, 30};
struct ev_obj ev_object = {.id = 42, .flags = 0xbeef, .name = "objname", .node = &ev_n1,
			   .arr = {1, 2, 3, 4}};

void ev_report(void)
{
	putstr("hvt-guest: ev id=");
	putnum(ev_object.id);
	putstr(" flags=beef name=");
	putstr(ev_object.name);
	putstr(" deep=");
	putnum(ev_object.node->next->value);
	putstr(" arr=");
	for (int i = 0; i < 4; i++) {
		putnum(ev_object.arr[i]);
		putstr(i < 3 ? "," : "");
	}
	putstr(" label=hello-events vals=");
	for (int i = 0; i < 3; i++) {
		putnum(ev_vals[i]);
		putstr(i < 2 ? "," : "");
	}
	putstr("\n");
}

long ev_call(int bad)
{
	return ev_target(&ev_object, bad ? (const char *)EV_BAD_POINTER : "hello-events", ev_vals, 3);
}

static void report(void)
{
	long bad = 0, migrations = 0, switches = 0;

	putstr("hvt-guest: cpus ");
	putnum(nr_cpus);
	putstr("\n");
	for (int c = 0; c < nr_cpus; c++) {
		long n = FIB_BASE + c % 4;

		putstr("hvt-guest: cpu ");
		putnum(c);
		putstr(" fib(");
		putnum(n);
		putstr(") = ");
		putnum(fib_result[c]);
		putstr("\n");
		if (fib_result[c] != fib_plain(n) || workload_bad[c])
			bad++;
		switches += percpu[c].switches;
	}
	for (int i = 0; i < NTASKS; i++) {
		putstr("hvt-guest: task ");
		putstr(tasks[i].comm);
		putstr(" pid ");
		putnum(tasks[i].pid);
		putstr(" result ");
		putnum(tasks[i].result);
		putstr(" migrations ");
		putnum(tasks[i].migrations);
		putstr("\n");
		if (tasks[i].result != expected_task_result(&tasks[i]))
			bad++;
		migrations += tasks[i].migrations;
	}
	ev_report();
	putstr("hvt-guest: switches ");
	putnum(switches);
	putstr(" migrations ");
	putnum(migrations);
	putstr("\n");
	for (int c = 0; c < nr_cpus; c++)
		for (int f = 0; f < NR_FN; f++) {
			if (!fn_count[c][f])
				continue;
			putstr("hvt-guest: count ");
			putstr(fn_names[f]);
			putstr(" cpu ");
			putnum(c);
			putstr(" = ");
			putnum(fn_count[c][f]);
			putstr("\n");
		}
	putstr(bad ? "hvt-guest: FAILED\n" : "hvt-guest: ok\n");
#ifdef GUEST_MODE_LOOP
	putstr("hvt-guest: looping\n");
	return;
#endif
	guest_exit(bad ? 1 : 0);
}

void guest_entry(uint64_t cpu, uint64_t ncpus)
{
	struct percpu *pc = &percpu[cpu];
	uint64_t base = (uint64_t)pc;

	pc->self = pc;
	pc->cpu = (int)cpu;
	pc->idle.pid = 0;
	pc->idle.cpu = (int)cpu;
	copy_name(pc->idle.comm, "cpu", (long)cpu);
	__asm__ volatile("wrmsr" : : "c"(MSR_GS_BASE), "a"((uint32_t)base), "d"((uint32_t)(base >> 32)));
	hvtrace_current[cpu] = &pc->idle;
#ifdef GUEST_MODE_FAULT
	/* No IDT: the invalid opcode becomes a triple fault, right after one traced call (whose probe
	 * hit is the last exit the host sees of this vCPU before the fault). */
	if (cpu == 0) {
		putstr("hvt-guest: faulting\n");
		tree_root();
		__asm__ volatile("ud2");
	}
#endif
	if (cpu == 0) {
		__atomic_store_n(&nr_cpus, ncpus > MAX_CPUS ? MAX_CPUS : (int)ncpus,
				 __ATOMIC_RELEASE);
		if (ncpus > MAX_CPUS) {
			putstr("hvt-guest: too many vCPUs\n");
			guest_exit(2);
		}
	} else {
		while (!__atomic_load_n(&nr_cpus, __ATOMIC_ACQUIRE))
			cpu_relax();
	}
	if (cpu == 0)
		tasks_init();
	barrier();
#ifdef GUEST_MODE_BENCH
	{
		long bench_loop(long n);

		if (bench_loop(BENCH_CALLS) != (long)BENCH_CALLS * (BENCH_CALLS + 1) / 2)
			guest_exit(1);
		barrier();
		if (cpu == 0)
			guest_exit(0);
		for (;;)
			__asm__ volatile("cli; hlt");
	}
#endif

	workload_bad[cpu] = workload_run((int)cpu, &fib_result[cpu]);
	barrier();

	schedule_loop(pc);
	barrier();
	if (cpu == 0)
		report();
#ifdef GUEST_MODE_LOOP
	barrier();
	for (;;) {
		if (tree_root() != TREE_VALUE)
			guest_exit(1);
		__atomic_add_fetch(&loop_iterations, 1, __ATOMIC_RELAXED);
	}
#endif
	for (;;)
		__asm__ volatile("cli; hlt");
}
