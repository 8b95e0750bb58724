/* What a detach leaves in the guest, over a fake target whose memory and registers the test holds:
 * a takeover after hvtrace died in the middle of a return (entry popped, RIP not yet written), a
 * return an interrupt caught on the trampoline (its frame gets the return address), and
 * --verify-text telling a byte hvtrace left behind from the kernel's own patching; that one hit
 * reads the running task once; and that an -e event fires where function_graph's -g / --max-depth
 * leave its call out. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_insn.h"
#include "host/session/text_verify.h"
#include "host/trace/fevent.h"
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h" /* white-box: the tracer's fields */
#include "tests/common/fake_target.h"

#include <errno.h>
#include <string.h>

#define TEXT   0x100000ull /* the guest's text: two functions and the trampoline */
#define SITE_A (TEXT + 0x10)
#define SITE_B (TEXT + 0x40)
#define TRAMP  (TEXT + 0xf0)
#define CALLER (TEXT + 0x99) /* a return address in the text */
#define STACK  0x200000ull   /* a 16 KiB guest stack */
#define SLOT   (STACK + 0x3f00)
#define NOP5   "\x0f\x1f\x44\x00\x00"
#define PERCPU 0x300000ull /* the current-task pointer of vCPU 0, then the task struct */
#define TASK   (PERCPU + 0x40)

struct fixture {
	struct fake_target f;
	uint8_t text[0x100], stack[0x4000];
	struct arch_regs regs[1]; /* what the vCPU has, as the target would report it */
	uint64_t fail_remove_at; /* remove_bp there fails (a peer that refuses the restore) */
	struct vmi_symtab syms;
	struct vmi_sites sites;
	const struct vmi_site *sel[2];
	struct tracer *tr;
	uint8_t percpu[0x80];
	unsigned task_reads; /* reads of the current-task pointer */
};

static struct fixture *fx(struct target *t)
{
	return (struct fixture *)fake_target_of(t);
}

static int read_virt(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len)
{
	fx(t)->task_reads += gva == PERCPU;
	return fake_target_read_virt(t, cpu, gva, buf, len);
}

static int get_regs(struct target *t, unsigned cpu, struct arch_regs *regs)
{
	*regs = fx(t)->regs[cpu];
	return 0;
}

static int set_regs(struct target *t, unsigned cpu, const struct arch_regs *regs)
{
	fx(t)->regs[cpu] = *regs;
	return 0;
}

static void set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	(void)t;
	(void)fn;
	(void)ctx;
}

static int remove_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	return gva == fx(t)->fail_remove_at ? -EIO : fake_target_remove_bp(t, gva, gpa, orig);
}

static const struct target_ops ops = {
    .read_virt = read_virt,
    .write_virt = fake_target_write_virt,
    .read_phys = fake_target_read_phys,
    .write_phys = fake_target_write_phys,
    .translate = fake_target_translate,
    .insert_bp = fake_target_insert_bp,
    .remove_bp = remove_bp,
    .pause = fake_target_pause,
    .resume = fake_target_resume,
    .get_regs = get_regs,
    .set_regs = set_regs,
    .set_bp_handler = set_bp_handler,
};

/* Two traced functions and the trampoline, a tracer with returns hooked, not attached yet; func_a
 * by an entry probe (no fentry site) when @entry_a. */
static void fixture_init_with(struct fixture *x, bool entry_a)
{
	static const uint64_t addrs[2] = {SITE_A, SITE_B};
	struct tracer_opts opts = {.returns = true, .hook_all = true, .ring_records = 64};
	struct vmi_task_layout task = {.unknown = true};

	memset(x, 0, sizeof(*x));
	fake_target_init(&x->f, &ops, 1);
	x->f.t.trampoline = TRAMP;
	x->f.t.stack_shift = 14;
	memset(x->text, 0x90, sizeof(x->text));
	memcpy(x->text + (SITE_A - TEXT), NOP5, 5);
	memcpy(x->text + (SITE_B - TEXT), NOP5, 5);
	x->text[TRAMP - TEXT] = 0xc3;
	fake_mem_map(&x->f.mem, TEXT, x->text, sizeof(x->text));
	fake_mem_map(&x->f.mem, STACK, x->stack, sizeof(x->stack));
	assert_int_equal(vmi_symtab_add(&x->syms, SITE_A, 0x30, "func_a"), 0);
	assert_int_equal(vmi_symtab_add(&x->syms, SITE_B, 0x30, "func_b"), 0);
	vmi_symtab_sort(&x->syms);
	assert_int_equal(vmi_sites_build(&x->sites, addrs, 2, &x->syms), 0);
	x->sites.v[0].entry = entry_a;
	x->f.t.bp_in_place = entry_a;
	x->sel[0] = &x->sites.v[0];
	x->sel[1] = &x->sites.v[1];
	assert_int_equal(tracer_new(&x->tr, &x->f.t, x->sel, 2, &task, &opts), 0);
}

static void fixture_init(struct fixture *x)
{
	fixture_init_with(x, false);
}

static void attach(struct fixture *x)
{
	char err[256];

	assert_int_equal(tracer_attach(x->tr, err, sizeof(err)), 0);
}

static void fixture_free(struct fixture *x)
{
	tracer_free(x->tr);
	vmi_sites_free(&x->sites);
	vmi_symtab_free(&x->syms);
}

static uint64_t slot_value(struct fixture *x)
{
	uint64_t v;

	memcpy(&v, x->stack + (SLOT - STACK), 8);
	return v;
}

/* Attached; func_a is called (return address CALLER at SLOT) and hooked; then it returns into the
 * trampoline, whose hit leaves in *@at_return the registers the vCPU is to resume with. */
static void call_and_return(struct fixture *x, struct arch_regs *at_return)
{
	struct arch_regs r = {.r[X86_RIP] = SITE_A, .r[X86_RSP] = SLOT};
	uint64_t ret = CALLER;

	fixture_init(x);
	attach(x);
	memcpy(x->stack + (SLOT - STACK), &ret, 8);
	x->regs[0] = r;
	assert_int_equal(tracer_hit(x->tr, 0, SITE_A, &x->regs[0], 0), 0);
	assert_int_equal(x->regs[0].r[X86_RIP], SITE_A + X86_NOP5_LEN);
	assert_int_equal(slot_value(x), TRAMP);
	/* its RET: RIP on the trampoline, the slot popped */
	x->regs[0].r[X86_RIP] = TRAMP;
	x->regs[0].r[X86_RSP] = SLOT + 8;
	*at_return = x->regs[0];
	assert_int_equal(tracer_hit(x->tr, 0, TRAMP, at_return, 0), 0);
	assert_int_equal(at_return->r[X86_RIP], CALLER);
}

/* hvtrace is killed after the return's shadow entry was popped and before the new RIP reached the
 * vCPU (QEMU: the gdbstub's P packet): the guardian, taking over, still moves that vCPU off the
 * trampoline to where it returns. */
static void test_takeover_mid_return(void **state)
{
	struct fixture x;
	struct arch_regs at_return;

	(void)state;
	call_and_return(&x, &at_return);
	/* never written back: x.regs[0].r[X86_RIP] is still the trampoline */
	assert_int_equal(x.regs[0].r[X86_RIP], TRAMP);
	assert_int_equal(tracer_takeover_detach(x.tr), 0);
	assert_int_equal(x.regs[0].r[X86_RIP], CALLER);
	assert_int_equal(x.regs[0].r[X86_RSP], SLOT + 8);
	assert_int_equal(x.tr->restored_slots, 1);
	assert_memory_equal(x.text + (SITE_A - TEXT), NOP5, 5);
	assert_int_equal(x.text[TRAMP - TEXT], 0xc3);
	fixture_free(&x);
}

/* The same return completed (RIP written): the detach leaves that vCPU where it is. */
static void test_detach_after_return(void **state)
{
	struct fixture x;
	struct arch_regs at_return;

	(void)state;
	call_and_return(&x, &at_return);
	x.regs[0] = at_return;
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_int_equal(x.regs[0].r[X86_RIP], CALLER);
	assert_int_equal(x.tr->restored_slots, 0);
	fixture_free(&x);
}

/* func_a called with its return address CALLER at @slot and hooked; its RET then pops the slot,
 * and before the trampoline's breakpoint fires the vCPU takes an interrupt: the hardware frame
 * (RIP, CS, RFLAGS, RSP, SS) goes below the popped slot, 16-byte aligned, with RIP on the
 * trampoline
 * (@frame_rsp: the RSP it saves). The vCPU is now in the handler, elsewhere. Returns the frame's
 * address. */
static uint64_t return_interrupted(struct fixture *x, uint64_t slot, uint64_t frame_rsp)
{
	uint64_t ret = CALLER, frame = ((slot + 8) & ~15ull) - 40;
	const uint64_t hw[5] = {TRAMP, 0x10, 0x202, frame_rsp, 0x18};

	fixture_init(x);
	attach(x);
	memcpy(x->stack + (slot - STACK), &ret, 8);
	x->regs[0] = (struct arch_regs){.r[X86_RIP] = SITE_A, .r[X86_RSP] = slot};
	assert_int_equal(tracer_hit(x->tr, 0, SITE_A, &x->regs[0], 0), 0);
	memcpy(&ret, x->stack + (slot - STACK), 8);
	assert_int_equal(ret, TRAMP);
	memcpy(x->stack + (frame - STACK), hw, sizeof(hw));
	x->regs[0] = (struct arch_regs){.r[X86_RIP] = TEXT + 0x80, .r[X86_RSP] = STACK + 0x1000};
	return frame;
}

static uint64_t stack_word(struct fixture *x, uint64_t gva)
{
	uint64_t v;

	memcpy(&v, x->stack + (gva - STACK), 8);
	return v;
}

/* The detach hands the return back in the interrupt's frame: its IRET goes to CALLER, not to the
 * trampoline's own RET (which would pop whatever lies above). Both alignments: the slot in the gap
 * above the frame (still holding the trampoline), or under the frame's SS (overwritten). */
static void test_detach_interrupted_return(void **state)
{
	static const uint64_t slots[2] = {SLOT, SLOT - 8};

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct fixture x;
		uint64_t frame = return_interrupted(&x, slots[i], slots[i] + 8);

		if (i == 1) /* the frame's SS went where the slot was */
			assert_int_equal(stack_word(&x, slots[i]), 0x18);
		assert_int_equal(tracer_detach(x.tr), 0);
		assert_int_equal(stack_word(&x, frame), CALLER);
		assert_int_equal(stack_word(&x, frame + 24), slots[i] + 8);
		assert_int_equal(x.regs[0].r[X86_RIP], TEXT + 0x80);
		assert_int_equal(x.tr->restored_slots, 1);
		assert_int_equal(x.tr->interrupted_returns, 1);
		assert_memory_equal(x.text + (SITE_A - TEXT), NOP5, 5);
		fixture_free(&x);
	}
}

/* A frame that only looks like one (RIP on the trampoline, but saving another RSP than one past the
 * slot) is left alone; the slot, still hooked, gets its return address back as usual. */
static void test_detach_not_an_interrupted_return(void **state)
{
	struct fixture x;
	uint64_t frame = return_interrupted(&x, SLOT, SLOT + 0x10);

	(void)state;
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_int_equal(stack_word(&x, frame), TRAMP);
	assert_int_equal(stack_word(&x, SLOT), CALLER);
	assert_int_equal(x.tr->restored_slots, 1);
	assert_int_equal(x.tr->interrupted_returns, 0);
	fixture_free(&x);
}

/* A stale frame: an earlier return at this slot was interrupted on the trampoline (its frame, still
 * in the dead stack below), and the same call has just been made again and hooked, the vCPU at the
 * function's first instruction, nothing pushed yet. The look-alike frame gets the return address
 * (dead stack: harmless), and the live slot gets it back too: left on the trampoline, the function
 * would return into the trampoline's own RET after the detach and pop its caller's data. */
static void test_detach_stale_interrupted_frame(void **state)
{
	static const uint64_t slots[2] = {SLOT, SLOT - 8};

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct fixture x;
		uint64_t frame = ((slots[i] + 8) & ~15ull) - 40;
		const uint64_t hw[4] = {TRAMP, 0x10, 0x202, slots[i] + 8};

		fixture_init(&x);
		attach(&x);
		memcpy(x.stack + (frame - STACK), hw, sizeof(hw));
		x.regs[0] = (struct arch_regs){.r[X86_RIP] = SITE_A, .r[X86_RSP] = slots[i]};
		memcpy(x.stack + (slots[i] - STACK), &(uint64_t){CALLER}, 8);
		assert_int_equal(tracer_hit(x.tr, 0, SITE_A, &x.regs[0], 0), 0);
		assert_int_equal(stack_word(&x, slots[i]), TRAMP);
		assert_int_equal(tracer_detach(x.tr), 0);
		assert_int_equal(stack_word(&x, slots[i]), CALLER);
		assert_int_equal(x.regs[0].r[X86_RIP], SITE_A + 5);
		assert_int_equal(x.tr->restored_slots, 1);
		fixture_free(&x);
	}
}

/* The fixture, and --verify-text's reference copy of its text (taken before the first patch). */
static void verify_init(struct fixture *x, struct text_verify *v)
{
	fixture_init(x);
	assert_int_equal(text_verify_begin(v, fake_mem_read, &x->f.mem, TEXT, TEXT + 0x100), 0);
}

/* What --verify-text finds now. */
static void verify_now(struct fixture *x, const struct text_verify *v, struct text_verdict *d)
{
	assert_int_equal(
	    text_verify_end(v, arch_default(), fake_mem_read, &x->f.mem, tracer_probes(x->tr), TRAMP, d),
	    0);
	assert_int_equal(d->len, 0x100);
}

/* A traced run between --verify-text's two reads: attach, the kernel writes @val at @off of its
 * text (0: nothing), detach (its return value), with remove_bp failing at @fail_remove_at. */
static int traced_run(struct fixture *x, struct text_verdict *d, unsigned off, uint8_t val,
		      uint64_t fail_remove_at)
{
	struct text_verify v;
	int ret;

	verify_init(x, &v);
	x->fail_remove_at = fail_remove_at;
	attach(x);
	if (off) /* alternatives, return thunks: two bytes, then one apart */
		x->text[off] = x->text[off + 1] = x->text[off + 0x20] = val;
	ret = tracer_detach(x->tr);
	verify_now(x, &v, d);
	text_verify_free(&v);
	return ret;
}

/* --verify-text: the kernel patched its own text while traced (alternatives): reported, not
 * blamed. */
static void test_verify_kernel_own_changes(void **state)
{
	struct fixture x;
	struct text_verdict d;

	(void)state;
	assert_int_equal(traced_run(&x, &d, 0x80, 0xe9, 0), 0);
	assert_int_equal(d.ours, 0);
	assert_int_equal(d.kernel, 3);
	assert_int_equal(d.kernel_runs, 2);
	assert_int_equal(d.kernel_at, TEXT + 0x80);
	fixture_free(&x);
}

/* --verify-text: an INT3 the restore could not take out (the peer refused it) is caught, at its
 * site. */
static void test_verify_catches_left_byte(void **state)
{
	struct fixture x;
	struct text_verdict d;

	(void)state;
	assert_int_equal(traced_run(&x, &d, 0, 0, SITE_B), -EIO);
	assert_int_equal(d.ours, 1);
	assert_int_equal(d.ours_at, SITE_B);
	assert_int_equal(d.ours_now, X86_INT3);
	assert_int_equal(d.ours_was, 0x0f);
	assert_int_equal(d.kernel, 0);
	fixture_free(&x);
}

/* The trampoline: an INT3 left there is hvtrace's; any other change (the kernel rewriting its own
 * RET, as return-thunk patching does to __fentry__) is the kernel's, and so are bytes next to a
 * site. */
static void test_verify_trampoline_and_neighbours(void **state)
{
	struct fixture x;
	struct text_verify v, empty;
	struct text_verdict d;

	(void)state;
	verify_init(&x, &v);
	x.text[TRAMP - TEXT] = 0xe9;
	x.text[SITE_A - TEXT - 1] = 0xcc;
	x.text[SITE_A - TEXT + X86_NOP5_LEN] = 0xcc;
	verify_now(&x, &v, &d);
	assert_int_equal(d.ours, 0);
	assert_int_equal(d.kernel, 3);
	x.text[TRAMP - TEXT] = X86_INT3;
	x.text[SITE_A - TEXT + 4] = 0x01;
	verify_now(&x, &v, &d);
	assert_int_equal(d.ours, 2);
	assert_int_equal(d.ours_at, SITE_A + 4);
	assert_int_equal(d.kernel, 2);
	assert_int_equal(text_verify_begin(&empty, fake_mem_read, &x.f.mem, TEXT, TEXT), -EINVAL);
	text_verify_free(&v);
	fixture_free(&x);
}

/* An entry probe's breakpoint covers its first byte alone: a change at that byte is hvtrace's to
 * answer for, one in the instruction's next bytes is the kernel's. */
static void test_verify_entry_probe_byte(void **state)
{
	struct fixture x;
	struct text_verify v;
	struct text_verdict d;

	(void)state;
	fixture_init_with(&x, true);
	assert_int_equal(text_verify_begin(&v, fake_mem_read, &x.f.mem, TEXT, TEXT + 0x100), 0);
	x.text[SITE_A - TEXT + 2] = 0x01;
	verify_now(&x, &v, &d);
	assert_int_equal(d.ours, 0);
	assert_int_equal(d.kernel, 1);
	x.text[SITE_A - TEXT] = X86_INT3;
	verify_now(&x, &v, &d);
	assert_int_equal(d.ours, 1);
	assert_int_equal(d.ours_at, SITE_A);
	text_verify_free(&v);
	fixture_free(&x);
}

/* One hit reads the task running on the vCPU once, whatever records it makes: the call, and its
 * stacktrace and snapshot triggers' records all name that task. */
static void test_task_read_once_per_hit(void **state)
{
	static const struct trigger stack = {.func = "func_a", .cmd = TRIG_STACKTRACE, .count = -1};
	static const struct trigger snap = {.func = "func_a", .cmd = TRIG_SNAPSHOT, .count = -1};
	struct tracer_opts opts = {.returns = true, .hook_all = true, .ring_records = 64};
	struct vmi_task_layout task = {.valid = true, .pid_off = 0, .comm_off = 8};
	struct arch_regs r = {.r[X86_RIP] = SITE_A, .r[X86_RSP] = SLOT};
	uint64_t ret = CALLER, cur = TASK;
	int32_t pid = 42;
	const struct hvt_record *rec;
	unsigned types = 0, n = 0;
	struct fixture x;

	(void)state;
	fixture_init(&x);
	tracer_free(x.tr);
	task.current_slot[0] = PERCPU;
	memcpy(x.percpu, &cur, 8);
	memcpy(x.percpu + 0x40, &pid, 4);
	memcpy(x.percpu + 0x48, "worker", 7);
	fake_mem_map(&x.f.mem, PERCPU, x.percpu, sizeof(x.percpu));
	assert_int_equal(tracer_new(&x.tr, &x.f.t, x.sel, 2, &task, &opts), 0);
	assert_int_equal(tracer_add_trigger(x.tr, 0, &stack), 0);
	assert_int_equal(tracer_add_trigger(x.tr, 0, &snap), 0);
	attach(&x);
	memcpy(x.stack + (SLOT - STACK), &ret, 8);
	x.regs[0] = r;
	x.task_reads = 0;
	assert_int_equal(tracer_hit(x.tr, 0, SITE_A, &x.regs[0], 0), 0);
	assert_int_equal(x.task_reads, 1);
	while ((rec = ring_peek(&x.tr->rings[0]))) {
		uint64_t slots =
		    1 + (hvt_record_has_payload(rec) ? hvt_record_payload_slots(rec->value) : 0);

		assert_int_equal(rec->pid, 42);
		assert_string_equal(rec->comm, "worker");
		types |= 1u << rec->type;
		n++;
		while (slots--)
			ring_pop(&x.tr->rings[0]);
	}
	assert_int_equal(types, 1u << HVT_REC_ENTRY | 1u << HVT_REC_STACK | 1u << HVT_REC_SNAPSHOT);
	assert_int_equal(n, 3);
	tracer_detach(x.tr);
	fixture_free(&x);
}

/* A hit's records carry the time the backend learned of the hit (at_ns: KVM_RUN's return, the
 * gdbstub's stop reply), not a later clock read: an entry at t0 + 5 us and its return at t0 + 12 us
 * are stamped 5000 and 12000 ns into the session, the return's duration 7000. */
static void test_hit_stamped_when_it_came(void **state)
{
	struct arch_regs r = {.r[X86_RIP] = SITE_A, .r[X86_RSP] = SLOT};
	const struct hvt_record *rec;
	uint64_t ret = CALLER, ts[2] = {0}, dur = 0;
	uint8_t types[2];
	unsigned n = 0;
	struct fixture x;

	(void)state;
	fixture_init(&x);
	attach(&x);
	memcpy(x.stack + (SLOT - STACK), &ret, 8);
	x.regs[0] = r;
	assert_int_equal(tracer_hit(x.tr, 0, SITE_A, &x.regs[0], x.tr->t0 + 5000), 0);
	x.regs[0].r[X86_RIP] = TRAMP;
	x.regs[0].r[X86_RSP] = SLOT + 8;
	assert_int_equal(tracer_hit(x.tr, 0, TRAMP, &x.regs[0], x.tr->t0 + 12000), 0);
	assert_int_equal(x.regs[0].r[X86_RIP], CALLER);
	while ((rec = ring_peek(&x.tr->rings[0]))) {
		assert_true(n < 2);
		types[n] = rec->type;
		ts[n++] = rec->ts;
		dur = rec->duration;
		ring_pop(&x.tr->rings[0]);
	}
	assert_int_equal(n, 2);
	assert_int_equal(types[0], HVT_REC_ENTRY);
	assert_int_equal(types[1], HVT_REC_RETURN);
	assert_int_equal(ts[0], 5000);
	assert_int_equal(ts[1], 12000);
	assert_int_equal(dur, 7000);
	tracer_detach(x.tr);
	fixture_free(&x);
}

/* The records vCPU 0's ring holds, popped: their types in @types (at most @max), depths in
 * @depths. Returns how many. */
static unsigned pop_records(struct fixture *x, uint8_t *types, uint8_t *depths, unsigned max)
{
	const struct hvt_record *rec;
	unsigned n = 0;

	while ((rec = ring_peek(&x->tr->rings[0]))) {
		uint64_t slots =
		    1 + (hvt_record_has_payload(rec) ? hvt_record_payload_slots(rec->value) : 0);

		assert_true(n < max);
		types[n] = rec->type;
		depths[n++] = rec->depth;
		while (slots--)
			ring_pop(&x->tr->rings[0]);
	}
	return n;
}

/* function_graph -g func_a -e 'func_b(...)' (issue 23): func_b called outside func_a's graph
 * gives its event alone (no entry, its return not hooked), as ftrace prints a trace event
 * whatever set_graph_function says; called inside, the graph's entry with its event and a hooked
 * return. With --max-depth 1 the call inside is past the depth: its event alone again, at the
 * graph's depth there. Lazy arming keeps func_b's probe in while no root is live. */
static void event_outside_graph(unsigned max_depth)
{
	struct tracer_opts opts = {.returns = true,
				   .hook_all = true,
				   .graph_filter = true,
				   .lazy = true,
				   .max_depth = max_depth,
				   .ring_records = 64};
	struct vmi_task_layout task = {.unknown = true};
	struct arch_regs r = {.r[X86_RIP] = SITE_B, .r[X86_RSP] = SLOT, .r[X86_RDI] = 7};
	uint64_t ret = CALLER, slot_a = SLOT + 0x40;
	uint8_t types[8], depths[8];
	struct fe_spec spec;
	struct fixture x;
	char err[128];
	size_t pos;

	fixture_init(&x);
	tracer_free(x.tr);
	assert_int_equal(fe_parse("func_b(u64 n)", &spec, err, sizeof(err), &pos), 0);
	assert_int_equal(tracer_new(&x.tr, &x.f.t, x.sel, 2, &task, &opts), 0);
	assert_int_equal(tracer_set_graph_root(x.tr, 0), 0);
	assert_int_equal(tracer_set_event(x.tr, 1, &spec), 0);
	attach(&x);
	/* lazy: the root's probe and the -e one are in, no root live */
	assert_int_equal(x.text[SITE_A - TEXT], 0xcc);
	assert_int_equal(x.text[SITE_B - TEXT], 0xcc);

	/* func_b alone: its event, its return left alone */
	memcpy(x.stack + (SLOT - STACK), &ret, 8);
	x.regs[0] = r;
	assert_int_equal(tracer_hit(x.tr, 0, SITE_B, &x.regs[0], 0), 0);
	assert_int_equal(slot_value(&x), CALLER);
	assert_int_equal(pop_records(&x, types, depths, 8), 1);
	assert_int_equal(types[0], HVT_REC_EVENT_ALONE);
	assert_int_equal(depths[0], 0);

	/* func_a (the root, hooked at slot_a), then func_b under it */
	memcpy(x.stack + (slot_a - STACK), &ret, 8);
	x.regs[0] = (struct arch_regs){.r[X86_RIP] = SITE_A, .r[X86_RSP] = slot_a};
	assert_int_equal(tracer_hit(x.tr, 0, SITE_A, &x.regs[0], 0), 0);
	x.regs[0] = r;
	assert_int_equal(tracer_hit(x.tr, 0, SITE_B, &x.regs[0], 0), 0);
	assert_int_equal(slot_value(&x), max_depth == 1 ? CALLER : TRAMP);
	assert_int_equal(pop_records(&x, types, depths, 8), 2);
	assert_int_equal(types[0], HVT_REC_ENTRY);
	assert_int_equal(depths[0], 0);
	assert_int_equal(types[1], max_depth == 1 ? HVT_REC_EVENT_ALONE : HVT_REC_EVENT);
	assert_int_equal(depths[1], 1);
	tracer_detach(x.tr);
	fixture_free(&x);
}

static void test_event_outside_graph(void **state)
{
	(void)state;
	event_outside_graph(0);
}

static void test_event_past_max_depth(void **state)
{
	(void)state;
	event_outside_graph(1);
}

/* An entry probe's hit leaves RIP on it (the target runs the instruction there in place), and its
 * return is not hooked where the stack is no kernel stack (here the low half: an entry that is no
 * call, a syscall's first instruction on the user's stack): the slot keeps its value. */
static void test_entry_probe_in_place(void **state)
{
	struct fixture x;
	uint64_t ret = CALLER;

	(void)state;
	fixture_init_with(&x, true);
	attach(&x);
	memcpy(x.stack + (SLOT - STACK), &ret, 8);
	x.regs[0] = (struct arch_regs){.r[X86_RIP] = SITE_A, .r[X86_RSP] = SLOT};
	assert_int_equal(tracer_hit(x.tr, 0, SITE_A, &x.regs[0], 0), TARGET_BP_IN_PLACE);
	assert_int_equal(x.regs[0].r[X86_RIP], SITE_A);
	assert_int_equal(slot_value(&x), CALLER);
	/* func_b, an fentry site, is hooked as before */
	x.regs[0] = (struct arch_regs){.r[X86_RIP] = SITE_B, .r[X86_RSP] = SLOT};
	assert_int_equal(tracer_hit(x.tr, 0, SITE_B, &x.regs[0], 0), 0);
	assert_int_equal(x.regs[0].r[X86_RIP], SITE_B + X86_NOP5_LEN);
	assert_int_equal(slot_value(&x), TRAMP);
	fixture_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_takeover_mid_return),
	    cmocka_unit_test(test_detach_after_return),
	    cmocka_unit_test(test_detach_interrupted_return),
	    cmocka_unit_test(test_detach_not_an_interrupted_return),
	    cmocka_unit_test(test_detach_stale_interrupted_frame),
	    cmocka_unit_test(test_verify_kernel_own_changes),
	    cmocka_unit_test(test_verify_catches_left_byte),
	    cmocka_unit_test(test_verify_trampoline_and_neighbours),
	    cmocka_unit_test(test_task_read_once_per_hit),
	    cmocka_unit_test(test_event_outside_graph),
	    cmocka_unit_test(test_event_past_max_depth),
	    cmocka_unit_test(test_entry_probe_in_place),
	    cmocka_unit_test(test_hit_stamped_when_it_came),
	    cmocka_unit_test(test_verify_entry_probe_byte),
	};

	return cmocka_run_group_tests_name("restore", tests, NULL, NULL);
}
