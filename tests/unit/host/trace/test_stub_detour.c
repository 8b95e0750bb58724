/* Stub detours (issue 25): a stub probe at the entry of a function without an fentry site. The
 * attach relocates the function's first instructions into a slot of the stub region and writes a
 * JMP there once no vCPU is inside the bytes it replaces; a function with a context saved inside
 * them becomes a trap probe instead. The detour runs them with interrupts off, so the detach needs
 * no such search. Guest memory is host buffers (GVA = GPA); a "saved context" is an interrupt
 * frame's RIP and kernel CS written into a buffer standing for a task's stack. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_insn.h"
#include "arch/x86/x86_reloc.h"
#include "host/session/text_verify.h"
#include "host/trace/stub_drain_int.h"
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h" /* white-box: the tracer's fields */
#include "tests/common/fake_target.h"
#include "tests/common/fake_tasks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT	  0x100000ull /* NR_FUNCS functions, 0x40 bytes apart */
#define TEXT_LEN  0x1000
#define NR_FUNCS  3
#define REGION	  0x400000ull /* the stub's */
#define STACK	  0x800000ull /* a task's stack */
#define TASKS	  0x900000ull /* the task list, then the current task pointer (one vCPU) */
#define CURRENT	  (TASKS + 2 * FAKE_TASKS_MAX * FAKE_TASK_SIZE)
#define KERNEL_CS 0x10

/* endbr64; push rbp; mov rbp, rsp; push r15; xor eax, eax; pop r15; pop rbp; ret: the JMP goes
 * after the ENDBR64 and displaces push rbp, mov rbp,rsp and push r15 (6 bytes) */
static const uint8_t func_bytes[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5,
				     0x41, 0x57, 0x31, 0xc0, 0x41, 0x5f, 0x5d, 0xc3};
#define ENTRY_OFF 4 /* the site: after the ENDBR64 */

struct fixture {
	struct fake_target f;
	uint8_t text[TEXT_LEN];
	uint8_t stack[4096];
	uint8_t *region;
	struct vmi_symtab syms;
	struct vmi_sites sites;
	const struct vmi_site *sel[NR_FUNCS];
	struct tracer *tr;
	bool mapped;
	uint64_t rip; /* every vCPU's */
	unsigned scans;
	uint8_t tasks[2 * FAKE_TASKS_MAX * FAKE_TASK_SIZE + 8];
	unsigned runs;	      /* run_for calls */
	unsigned clear_after; /* the stack is wiped at this run_for call (a task went on); 0: never */
	unsigned out_at;      /* the vCPU leaves the stub (rip_out) at this run_for call */
	uint64_t rip_out;
};

static struct fixture *fx(struct target *t)
{
	return (struct fixture *)fake_target_of(t);
}

static int map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
	       struct target_region *out, char *err, size_t errlen)
{
	(void)lo, (void)hi, (void)err, (void)errlen;
	out->gva = out->gpa = REGION;
	out->size = want < (2u << 20) ? want : (2u << 20);
	out->where = "memslot";
	assert_true(out->size >= min);
	fx(t)->mapped = true;
	return 0;
}

static uint64_t exec_off, exec_len;

/* What the stub asks to stay executable: its code page and the detour slots' pages. */
static int protect(struct target *t, const struct target_region *r, uint64_t off, uint64_t len)
{
	(void)t, (void)r;
	exec_off = off;
	exec_len = len;
	return 0;
}

static void unmap(struct target *t, const struct target_region *r)
{
	(void)r;
	fx(t)->mapped = false;
}

static int get_regs(struct target *t, unsigned cpu, struct arch_regs *regs)
{
	(void)cpu;
	memset(regs, 0, sizeof(*regs));
	regs->r[X86_RIP] = fx(t)->rip;
	return 0;
}

/* The guest runs: a task preempted on the stack goes on at the chosen call. */
static int run_for(struct target *t, unsigned us)
{
	struct fixture *x = fx(t);

	(void)us;
	if (++x->runs == x->clear_after)
		memset(x->stack, 0, sizeof(x->stack));
	if (x->runs == x->out_at)
		x->rip = x->rip_out;
	return 0;
}

static void set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	(void)t, (void)fn, (void)ctx;
}

/* Every 8-byte word of the text, the stack and the region, as the QEMU target scans its RAM. */
static int scan_ram(struct target *t, uint64_t lo, uint64_t hi,
		    bool (*hit)(void *ctx, uint64_t v, uint64_t next), void *ctx)
{
	struct fake_mem *m = &fake_target_of(t)->mem;

	fx(t)->scans++;
	for (unsigned r = 0; r < m->nr; r++)
		for (size_t o = 0; o + 8 <= m->r[r].size; o += 8) {
			uint64_t v, next = 0;

			memcpy(&v, m->r[r].buf + o, 8);
			if (o + 16 <= m->r[r].size)
				memcpy(&next, m->r[r].buf + o + 8, 8);
			if (v >= lo && v <= hi && hit(ctx, v, next))
				return 1;
		}
	return 0;
}

static const struct target_ops ops = {
    .read_virt = fake_target_read_virt,
    .write_virt = fake_target_write_virt,
    .read_phys = fake_target_read_phys,
    .write_phys = fake_target_write_phys,
    .translate = fake_target_translate,
    .kernel_gpa = fake_target_kernel_gpa,
    .insert_bp = fake_target_insert_bp,
    .remove_bp = fake_target_remove_bp,
    .write_text = fake_target_write_text,
    .stub_map = map,
    .stub_protect = protect,
    .stub_unmap = unmap,
    .pause = fake_target_pause,
    .resume = fake_target_resume,
    .get_regs = get_regs,
    .set_bp_handler = set_bp_handler,
    .scan_ram = scan_ram,
    .read_kernel = fake_target_read_phys,
    .run_for = run_for,
};

static uint64_t site(unsigned i)
{
	return TEXT + i * 0x40 + ENTRY_OFF;
}

/* NR_FUNCS functions without an fentry site, each planned for a detour; not attached yet. With
 * @sp, the guest's task list is known: init_task (running on the vCPU, no stack) and one task
 * preempted with its stack at STACK, saved stack pointer @sp; else where contexts are saved is
 * found by scanning RAM. */
static void fixture_init_sp(struct fixture *x, uint64_t sp)
{
	struct tracer_opts opts = {.stub = true, .ring_records = 64};
	struct vmi_task_layout task = {.unknown = true};
	const struct fake_task tasks[] = {{0, 0, 0}, {1, STACK, sp}};
	uint64_t addrs[NR_FUNCS];
	char name[NR_FUNCS][16];

	memset(x, 0, sizeof(*x));
	fake_target_init(&x->f, &ops, 1);
	x->rip = TEXT + TEXT_LEN - 1;
	x->region = calloc(1, 2u << 20);
	assert_non_null(x->region);
	memset(x->text, 0xcc, sizeof(x->text));
	for (unsigned i = 0; i < NR_FUNCS; i++) {
		addrs[i] = site(i);
		memcpy(x->text + i * 0x40, func_bytes, sizeof(func_bytes));
		snprintf(name[i], sizeof(name[i]), "func_%u", i);
		assert_int_equal(vmi_symtab_add(&x->syms, TEXT + i * 0x40, 0x40, name[i]), 0);
	}
	fake_mem_map(&x->f.mem, TEXT, x->text, sizeof(x->text));
	fake_mem_map(&x->f.mem, REGION, x->region, 2u << 20);
	fake_mem_map(&x->f.mem, STACK, x->stack, sizeof(x->stack));
	if (sp) {
		uint64_t init = TASKS;

		fake_tasks_build(x->tasks, TASKS, tasks, 2, sizeof(x->stack), &task.list);
		memcpy(x->tasks + (CURRENT - TASKS), &init, 8);
		fake_mem_map(&x->f.mem, TASKS, x->tasks, sizeof(x->tasks));
		task.valid = true;
		task.current_slot[0] = CURRENT;
	}
	vmi_symtab_sort(&x->syms);
	assert_int_equal(vmi_sites_build(&x->sites, addrs, NR_FUNCS, &x->syms), 0);
	for (unsigned i = 0; i < NR_FUNCS; i++) {
		x->sites.v[i].entry = true;
		x->sel[i] = &x->sites.v[i];
	}
	assert_int_equal(tracer_new(&x->tr, &x->f.t, x->sel, NR_FUNCS, &task, &opts), 0);
	for (unsigned i = 0; i < NR_FUNCS; i++) {
		struct arch_reloc_plan plan;
		char why[200];
		const struct probe *p = &tracer_probes(x->tr)->v[i];

		assert_int_equal(x86_reloc_plan(x->text + (p->addr - TEXT), 0x40 - ENTRY_OFF,
						p->addr, X86_JMP_REL32_LEN, &plan, why,
						sizeof(why)),
				 0);
		assert_int_equal(plan.len, 6);
		assert_int_equal(tracer_set_detour(x->tr, p->id, &plan), 0);
	}
}

static void fixture_init(struct fixture *x)
{
	fixture_init_sp(x, 0);
}

static void fixture_free(struct fixture *x)
{
	tracer_free(x->tr);
	vmi_sites_free(&x->sites);
	vmi_symtab_free(&x->syms);
	free(x->region);
}

static int32_t rel32_at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Each site jumps to its own slot, which calls the stub's entry routine, runs the three displaced
 * instructions and jumps back past them; a record naming the slot names the probe. The detach
 * puts every byte back and unmaps the stub. */
static void test_detour_bytes(void **state)
{
	struct fixture x;
	struct text_verify v;
	struct text_verdict d;
	char err[256] = "";

	(void)state;
	fixture_init(&x);
	assert_int_equal(text_verify_begin(&v, fake_mem_read, &x.f.mem, TEXT, TEXT + TEXT_LEN), 0);
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
	for (unsigned i = 0; i < NR_FUNCS; i++) {
		const struct probe *p = &tracer_probes(x.tr)->v[i];
		const struct stub *s = &x.tr->stub.stub;
		uint64_t slot = stub_detour_gva(s, p->detour_idx);
		const uint8_t *at = x.text + (p->addr - TEXT);
		const uint8_t *code = x.region + (slot - REGION);

		assert_true(p->stub && p->patched);
		assert_int_equal(at[0], 0xe9);
		assert_int_equal(p->addr + 5 + (uint64_t)(int64_t)rel32_at(at + 1), slot);
		/* the byte after the JMP is left as it was (nothing branches there) */
		assert_int_equal(at[5], 0x57);
		assert_int_equal(code[0], X86_CALL_REL32);
		assert_int_equal(slot + 5 + (uint64_t)(int64_t)rel32_at(code + 1), s->entry[8]);
		assert_int_not_equal(s->entry[8], s->entry[0]);
		assert_memory_equal(code + 5, func_bytes + ENTRY_OFF, 6);
		/* jmp *(16 - 256)(%rsp): push rbp and push r15 moved RSP down 16 bytes */
		assert_memory_equal(code + 11, "\xff\xa4\x24", 3);
		assert_int_equal(rel32_at(code + 14), 16 - STUB_DETOUR_SCRATCH);
		/* the two ways back: endbr64; sti; jmp and endbr64; jmp */
		assert_memory_equal(code + DT_STI, "\xf3\x0f\x1e\xfa\xfb\xe9", 6);
		assert_int_equal(slot + DT_STI + 10 +
				     (uint64_t)(int64_t)rel32_at(code + DT_STI + 6),
				 p->addr + 6);
		assert_memory_equal(code + DT_NOSTI, "\xf3\x0f\x1e\xfa\xe9", 5);
		assert_int_equal(slot + DT_NOSTI + 9 +
				     (uint64_t)(int64_t)rel32_at(code + DT_NOSTI + 5),
				 p->addr + 6);
		assert_int_equal(stub_detour_index(s, slot), (long)p->detour_idx);
		assert_int_equal(stub_detour_index(s, slot + 5), -1);
		assert_true(stub_owns_rip(s, slot + 5));
	}
	assert_int_equal(stub_detour_index(&x.tr->stub.stub, site(0)), -1);
	/* the slots right after the ring headers, in a page of their own that alone (with the code
	 * page) stays executable; the rings after it */
	assert_int_equal(exec_off, STUB_RINGS_OFF);
	assert_int_equal(exec_len, 4096);
	assert_int_equal(stub_detour_gva(&x.tr->stub.stub, 0), REGION + STUB_RINGS_OFF);
	assert_true(stub_detour_gva(&x.tr->stub.stub, NR_FUNCS - 1) + STUB_DETOUR_SIZE <=
		    REGION + exec_off + exec_len);
	{
		uint64_t rings;

		memcpy(&rings, x.region + STUB_HDR_OFF + H_RINGS, 8);
		assert_int_equal(rings, REGION + exec_off + exec_len);
	}
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_false(x.mapped);
	assert_int_equal(text_verify_end(&v, arch_default(), fake_mem_read, &x.f.mem, tracer_probes(x.tr), 0, &d),
			 0);
	assert_int_equal(d.ours, 0);
	assert_int_equal(d.kernel, 0);
	text_verify_free(&v);
	fixture_free(&x);
}

/* A task interrupted after the first displaced instruction (its frame: RIP, kernel CS) would resume
 * in the middle of the JMP: that function becomes a trap probe at its entry, the others are
 * detoured; on a target that cannot run an instruction under a breakpoint the attach refuses and
 * writes nothing. The same value without a frame's CS after it (a return address, a stale word),
 * at the site itself or past the replaced bytes is no context inside. */
static void test_saved_context_inside(void **state)
{
	struct fixture x;
	char err[256] = "";
	uint64_t frame[2] = {site(1) + 1, KERNEL_CS};
	const struct probe *v;

	(void)state;
	fixture_init(&x);
	x.f.t.bp_in_place = true;
	memcpy(x.stack + 512, frame, sizeof(frame));
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
	v = tracer_probes(x.tr)->v;
	assert_true(v[0].stub && v[0].patched && v[2].stub && v[2].patched);
	assert_false(v[1].stub || v[1].patched);
	assert_true(v[1].inserted);
	assert_int_equal(x.text[0x40 + ENTRY_OFF], X86_INT3);
	assert_int_equal(x.text[ENTRY_OFF], 0xe9);
	assert_int_equal(tracer_detach(x.tr), 0);
	for (unsigned i = 0; i < NR_FUNCS; i++)
		assert_memory_equal(x.text + i * 0x40, func_bytes, sizeof(func_bytes));
	assert_false(x.mapped);
	fixture_free(&x);

	fixture_init(&x);
	memcpy(x.stack + 512, frame, sizeof(frame));
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "func_1: a context saved in guest memory may resume inside"));
	for (unsigned i = 0; i < NR_FUNCS; i++)
		assert_memory_equal(x.text + i * 0x40, func_bytes, sizeof(func_bytes));
	assert_false(x.mapped);
	fixture_free(&x);

	for (int k = 0; k < 3; k++) {
		fixture_init(&x);
		frame[0] = k == 0 ? site(1) : k == 1 ? site(1) + 6 : site(1) + 4;
		frame[1] = k == 2 ? 0xffffffff81000000ull : KERNEL_CS;
		memcpy(x.stack + 512, frame, sizeof(frame));
		assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
		assert_true(x.scans > 0);
		assert_true(tracer_probes(x.tr)->v[1].patched);
		assert_int_equal(tracer_detach(x.tr), 0);
		assert_false(x.mapped);
		fixture_free(&x);
	}
}

/* A vCPU stopped inside the bytes to be replaced: refused, nothing written. */
static void test_vcpu_inside_refused(void **state)
{
	struct fixture x;
	char err[256] = "";

	(void)state;
	fixture_init(&x);
	x.rip = site(2) + 4; /* after push rbp; mov rbp, rsp */
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "vCPU 0 stays inside the first bytes of func_2, which its "
				    "detour replaces (use --probe trap)"));
	for (unsigned i = 0; i < NR_FUNCS; i++)
		assert_memory_equal(x.text + i * 0x40, func_bytes, sizeof(func_bytes));
	fixture_free(&x);
}

/* Issue 36: the guest's kprobe patcher (arch_prepare_kprobe), learned from its symbols, gets a
 * breakpoint of hvtrace's (QEMU's kind: hits stop every vCPU, an instruction runs in place) when
 * the session has detours, and ftrace's none (no fentry stub site). At a stop there every detour
 * goes back to the function's own bytes, traced by a breakpoint whose instruction runs in place,
 * for good (a later stop hands nothing more back); the detach leaves every function as it was. */
static void test_kprobe_patcher_takes_detours_back(void **state)
{
	const struct vmi_patcher ps[2] = {{.addr = TEXT + 0xe00, .detours = false},
					  {.addr = TEXT + 0xe80, .detours = true}};
	struct arch_regs regs = {0};
	struct tracer_stats st;
	struct fixture x;
	char err[256] = "";

	(void)state;
	fixture_init(&x);
	x.f.t.hit_all_stopped = x.f.t.bp_in_place = true;
	assert_int_equal(tracer_set_patchers(x.tr, ps, 2), 0);
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
	tracer_stats(x.tr, &st);
	assert_int_equal(st.patchers, 1);
	assert_int_equal(st.stub_detours, NR_FUNCS);
	assert_int_equal(x.text[0xe80], 0xcc);
	assert_int_equal(x.text[site(0) - TEXT], 0xe9);

	regs.r[X86_RIP] = TEXT + 0xe80;
	assert_int_equal(tracer_hit(x.tr, 0, TEXT + 0xe80, &regs, 0), TARGET_BP_IN_PLACE);
	for (unsigned i = 0; i < NR_FUNCS; i++) {
		const struct probe *p = &tracer_probes(x.tr)->v[i];
		uint8_t want[sizeof(func_bytes)];

		memcpy(want, func_bytes, sizeof(want));
		want[ENTRY_OFF] = 0xcc; /* the breakpoint over push rbp */
		assert_memory_equal(x.text + i * 0x40, want, sizeof(want));
		assert_true(p->yielded && !p->patched && p->inserted);
	}
	tracer_stats(x.tr, &st);
	assert_int_equal(st.yields, NR_FUNCS);
	assert_int_equal(st.yielded_sites, NR_FUNCS);
	/* the function is traced by its breakpoint, push rbp run in place */
	regs.r[X86_RIP] = site(1);
	assert_int_equal(tracer_hit(x.tr, 0, site(1), &regs, 0), TARGET_BP_IN_PLACE);
	assert_int_equal(regs.r[X86_RIP], site(1));
	/* the next kprobe: nothing more to hand back, and no return breakpoint */
	regs.r[X86_RIP] = TEXT + 0xe80;
	assert_int_equal(tracer_hit(x.tr, 0, TEXT + 0xe80, &regs, 0), TARGET_BP_IN_PLACE);
	tracer_stats(x.tr, &st);
	assert_int_equal(st.yields, NR_FUNCS);
	assert_int_equal(st.reclaims, 0);
	assert_int_equal(st.patcher_stops, 2);
	assert_false(x.tr->ret_bp.inserted);

	assert_int_equal(tracer_detach(x.tr), 0);
	for (unsigned i = 0; i < NR_FUNCS; i++)
		assert_memory_equal(x.text + i * 0x40, func_bytes, sizeof(func_bytes));
	assert_int_equal(x.text[0xe80], 0xcc); /* the fixture's filler, as it was */
	assert_false(x.mapped);
	fixture_free(&x);
}

/* Nothing is interrupted inside a detour (its instructions run with interrupts off), so a word
 * that looks like a frame there (a stale one) keeps nothing: the detach restores every site and
 * unmaps the region. */
static void test_detach_ignores_detour_frames(void **state)
{
	struct fixture x;
	char err[256] = "";
	uint64_t frame[2];

	(void)state;
	fixture_init(&x);
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
	frame[0] = stub_detour_gva(&x.tr->stub.stub, 1) + 6; /* after the relocated push rbp */
	frame[1] = KERNEL_CS;
	memcpy(x.stack + 1024, frame, sizeof(frame));
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_false(x.mapped);
	for (unsigned i = 0; i < NR_FUNCS; i++)
		assert_memory_equal(x.text + i * 0x40, func_bytes, sizeof(func_bytes));
	fixture_free(&x);
}

/* With the task list, only the live part of each task's stack counts: a frame below its saved
 * stack pointer (stale) leaves the detour in, one above it (the task was preempted there) makes
 * that function a trap probe, as the RAM scan would for both. A guest whose thread list loops
 * without coming back to its head gets the RAM scan (its stale frame counts). */
static void test_task_stacks_at_attach(void **state)
{
	struct fixture x;
	char err[256] = "";
	uint64_t frame[2] = {site(1) + 1, KERNEL_CS};

	(void)state;
	for (int c = 0; c < 3; c++) {
		bool live = c == 1, hostile = c == 2;

		fixture_init_sp(&x, STACK + 2048);
		x.f.t.bp_in_place = true;
		memcpy(x.stack + (live ? 3072 : 1024), frame, sizeof(frame));
		if (hostile) {
			uint64_t self = fake_task_thread_next(TASKS, 1);

			memcpy(x.tasks + (self - TASKS), &self, 8);
		}
		assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
		/* no RAM scan where the task list says where to look */
		assert_int_equal(x.scans > 0, hostile);
		assert_int_equal(tracer_probes(x.tr)->v[1].stub, !live && !hostile);
		assert_int_equal(x.text[0x40 + ENTRY_OFF], live || hostile ? X86_INT3 : 0xe9);
		assert_int_equal(tracer_detach(x.tr), 0);
		for (unsigned i = 0; i < NR_FUNCS; i++)
			assert_memory_equal(x.text + i * 0x40, func_bytes, sizeof(func_bytes));
		fixture_free(&x);
	}
}

/* A task preempted where the stub runs with interrupts on (here the detour routine's first
 * instruction) would resume in it: the detach restores every site, then waits (letting the guest
 * run) until the task has gone on before it unmaps the stub; when it never does, the stub stays
 * mapped and the detach says so (-EBUSY). A frame after the routine's CLI, or below the task's
 * saved stack pointer, is none. */
static void test_detach_waits_for_preempted_task(void **state)
{
	static const struct {
		unsigned at, off, clear_after;
		int ret;
		bool mapped;
		unsigned min_runs, scans;
	} c[] = {
	    {3072, 0, 3, 0, false, 3, 4}, /* preempted; goes on at the third run */
	    /* preempted before the CLI; never goes on */
	    {3072, 1, 0, -EBUSY, true, 2, LEAVE_TASK_SCANS + 1},
	    {3072, 2, 0, 0, false, 0, 1}, /* after the CLI: no interrupt comes in there */
	    {1024, 0, 0, 0, false, 0, 1}, /* below the saved stack pointer: stale */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct fixture x;
		char err[256] = "";
		uint64_t frame[2];

		fixture_init_sp(&x, STACK + 2048);
		assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
		frame[0] = x.tr->stub.stub.entry[8] + c[i].off;
		frame[1] = KERNEL_CS;
		memcpy(x.stack + c[i].at, frame, sizeof(frame));
		x.clear_after = c[i].clear_after;
		x.runs = 0;
		assert_int_equal(tracer_detach(x.tr), c[i].ret);
		assert_int_equal(x.mapped, c[i].mapped);
		assert_int_equal(x.tr->stub.leave_scans, c[i].scans);
		assert_true(x.runs >= c[i].min_runs);
		if (!c[i].min_runs)
			assert_int_equal(x.runs, 0);
		for (unsigned k = 0; k < NR_FUNCS; k++)
			assert_memory_equal(x.text + k * 0x40, func_bytes, sizeof(func_bytes));
		fixture_free(&x);
	}
}

/* A vCPU that stays inside the stub until the last run the detach allows it: the tasks are looked
 * at once it is out, and one preempted inside keeps the stub mapped. */
static void test_detach_looks_at_tasks_last(void **state)
{
	struct fixture x;
	char err[256] = "";
	uint64_t frame[2];

	(void)state;
	fixture_init_sp(&x, STACK + 2048);
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
	frame[0] = x.tr->stub.stub.entry[8];
	frame[1] = KERNEL_CS;
	memcpy(x.stack + 3072, frame, sizeof(frame));
	x.rip_out = x.rip;
	x.rip = x.tr->stub.stub.entry[8] + 40; /* in the routine, interrupts off */
	x.out_at = LEAVE_TRIES;
	x.runs = 0;
	assert_int_equal(tracer_detach(x.tr), -EBUSY);
	assert_int_equal(x.runs, LEAVE_TRIES);
	assert_int_equal(x.tr->stub.leave_scans, 1);
	assert_true(x.mapped);
	for (unsigned k = 0; k < NR_FUNCS; k++)
		assert_memory_equal(x.text + k * 0x40, func_bytes, sizeof(func_bytes));
	fixture_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_detour_bytes),
	    cmocka_unit_test(test_saved_context_inside),
	    cmocka_unit_test(test_vcpu_inside_refused),
	    cmocka_unit_test(test_kprobe_patcher_takes_detours_back),
	    cmocka_unit_test(test_detach_ignores_detour_frames),
	    cmocka_unit_test(test_task_stacks_at_attach),
	    cmocka_unit_test(test_detach_waits_for_preempted_task),
	    cmocka_unit_test(test_detach_looks_at_tasks_last),
	};

	return cmocka_run_group_tests_name("stub_detour", tests, NULL, NULL);
}
