/* Sharing the guest's text with its own ftrace (issue 36, tracer_yield.c): hvtrace's stub probes
 * are in when the guest reaches its patcher; at hvtrace's breakpoint there every CALL of ours goes
 * back to the guest's NOP5 and the site is traced by a breakpoint from then on; the guest then
 * writes its own CALL, which the detach leaves exactly as the guest wrote it. A site that holds the
 * guest's CALL at attach (an entry probe there) is counted as shared. Breakpoints are QEMU's here:
 * they change no guest byte. Guest memory is host buffers (GVA = GPA). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_insn.h"
#include "host/trace/tracer.h"
#include "host/trace/tracer_int.h" /* white-box: the tracer's fields */
#include "tests/common/fake_target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT	 0x100000ull /* NR_SITES functions, 0x40 bytes apart, each starting with a NOP5 */
#define TEXT_LEN 0x1000
#define NR_SITES 8
#define PATCHER	 (TEXT + 0xe00) /* the guest's ftrace_modify_all_code */
#define PATCHER2 (TEXT + 0xe80) /* the guest's ftrace_replace_code, called from it */
#define RET	 (TEXT + 0xd05) /* where the patcher's caller goes on after its call */
#define STACK	 0x200000ull	/* a page of the guest's stack: [STACK_SP] holds RET */
#define STACK_SP (STACK + 0xf00)
#define CALLER	 (TEXT + 0xf00) /* the guest's ftrace_caller */
#define REGION	 0x400000ull	/* the stub's */
#define NOP5	 "\x0f\x1f\x44\x00\x00"
#define MAX_BPS	 32

struct fixture {
	struct fake_target f;
	uint8_t text[TEXT_LEN];
	uint8_t *region;
	uint8_t stack[0x1000];
	struct vmi_symtab syms;
	struct vmi_sites sites;
	const struct vmi_site *sel[NR_SITES];
	struct tracer *tr;
	uint64_t bps[MAX_BPS]; /* QEMU's breakpoints: no guest byte changes */
	unsigned nr_bps;
	bool mapped;
};

static struct fixture *fx(struct target *t)
{
	return (struct fixture *)fake_target_of(t);
}

static bool bp_at(struct fixture *x, uint64_t addr)
{
	for (unsigned i = 0; i < x->nr_bps; i++)
		if (x->bps[i] == addr)
			return true;
	return false;
}

/* As QEMU's gdbstub: the byte is only checked; nothing is written. */
static int insert_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	struct fixture *x = fx(t);
	uint8_t now;

	if (fake_target_read_phys(t, gpa, &now, 1) < 0)
		return -EFAULT;
	if (now != orig)
		return -ESTALE;
	assert_false(bp_at(x, gva));
	assert_true(x->nr_bps < MAX_BPS);
	x->bps[x->nr_bps++] = gva;
	return 0;
}

static int remove_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig)
{
	struct fixture *x = fx(t);

	(void)gpa, (void)orig;
	for (unsigned i = 0; i < x->nr_bps; i++)
		if (x->bps[i] == gva) {
			x->bps[i] = x->bps[--x->nr_bps];
			return 0;
		}
	fail_msg("no breakpoint at 0x%llx to remove", (unsigned long long)gva);
	return -ENOENT;
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

static void unmap(struct target *t, const struct target_region *r)
{
	(void)r;
	fx(t)->mapped = false;
}

/* Every vCPU is elsewhere: none inside the stub. */
static int get_regs(struct target *t, unsigned cpu, struct arch_regs *regs)
{
	(void)t, (void)cpu;
	memset(regs, 0, sizeof(*regs));
	regs->r[X86_RIP] = TEXT + TEXT_LEN - 1;
	return 0;
}

static void set_bp_handler(struct target *t, target_bp_fn fn, void *ctx)
{
	(void)t, (void)fn, (void)ctx;
}

static const struct target_ops ops = {
    .read_virt = fake_target_read_virt,
    .write_virt = fake_target_write_virt,
    .read_phys = fake_target_read_phys,
    .write_phys = fake_target_write_phys,
    .translate = fake_target_translate,
    .kernel_gpa = fake_target_kernel_gpa,
    .insert_bp = insert_bp,
    .remove_bp = remove_bp,
    .write_text = fake_target_write_text,
    .stub_map = map,
    .stub_unmap = unmap,
    .pause = fake_target_pause,
    .resume = fake_target_resume,
    .get_regs = get_regs,
    .set_bp_handler = set_bp_handler,
};

/* The CALL rel32 the guest's ftrace writes at @site. */
static void guest_call(uint8_t *out, uint64_t site)
{
	int32_t rel = (int32_t)(CALLER - (site + 5));

	out[0] = X86_CALL_REL32;
	memcpy(out + 1, &rel, 4);
}

/* NR_SITES functions traced with stub probes (site @entry_at, if below NR_SITES, an entry probe
 * whose first instruction is the guest's CALL), not attached yet, on a target whose hits stop every
 * vCPU. */
static void fixture_init(struct fixture *x, unsigned entry_at)
{
	struct tracer_opts opts = {.stub = true, .ring_records = 64};
	struct vmi_task_layout task = {.unknown = true};
	uint64_t addrs[NR_SITES];
	char name[NR_SITES][16];

	memset(x, 0, sizeof(*x));
	fake_target_init(&x->f, &ops, 1);
	x->f.t.bp_in_place = x->f.t.hit_all_stopped = true;
	x->region = calloc(1, 2u << 20);
	assert_non_null(x->region);
	memset(x->text, 0x90, sizeof(x->text));
	for (unsigned i = 0; i < NR_SITES; i++) {
		addrs[i] = TEXT + i * 0x40;
		memcpy(x->text + i * 0x40, NOP5, 5);
		snprintf(name[i], sizeof(name[i]), "func_%u", i);
		assert_int_equal(vmi_symtab_add(&x->syms, addrs[i], 0x40, name[i]), 0);
	}
	fake_mem_map(&x->f.mem, TEXT, x->text, sizeof(x->text));
	fake_mem_map(&x->f.mem, REGION, x->region, 2u << 20);
	{
		uint64_t ret = RET;

		memcpy(x->stack + (STACK_SP - STACK), &ret, sizeof(ret));
		fake_mem_map(&x->f.mem, STACK, x->stack, sizeof(x->stack));
	}
	vmi_symtab_sort(&x->syms);
	assert_int_equal(vmi_sites_build(&x->sites, addrs, NR_SITES, &x->syms), 0);
	if (entry_at < NR_SITES) {
		x->sites.v[entry_at].entry = true;
		guest_call(x->text + entry_at * 0x40, TEXT + entry_at * 0x40);
	}
	for (unsigned i = 0; i < NR_SITES; i++)
		x->sel[i] = &x->sites.v[i];
	assert_int_equal(tracer_new(&x->tr, &x->f.t, x->sel, NR_SITES, &task, &opts), 0);
}

static void fixture_free(struct fixture *x)
{
	tracer_free(x->tr);
	vmi_sites_free(&x->sites);
	vmi_symtab_free(&x->syms);
	free(x->region);
}

static unsigned sites_calling_stub(struct fixture *x)
{
	unsigned n = 0;

	for (unsigned i = 0; i < NR_SITES; i++) {
		int32_t rel;

		memcpy(&rel, x->text + i * 0x40 + 1, 4);
		n += x->text[i * 0x40] == X86_CALL_REL32 &&
		     TEXT + i * 0x40 + 5 + (uint64_t)(int64_t)rel >= REGION;
	}
	return n;
}

/* The fixture attached with one patcher (the guest's ftrace_modify_all_code at PATCHER). */
static void attach_one_patcher(struct fixture *x)
{
	const struct vmi_patcher patcher = {.addr = PATCHER};
	char err[256] = "";

	assert_int_equal(tracer_set_patchers(x->tr, &patcher, 1), 0);
	assert_int_equal(tracer_attach(x->tr, err, sizeof(err)), 0);
}

/* vCPU 0 stops at @patcher with its stack at @sp: the patcher's instruction is to run in place. */
static void patcher_stop(struct fixture *x, struct arch_regs *regs, uint64_t patcher, uint64_t sp)
{
	regs->r[X86_RIP] = patcher;
	regs->r[X86_RSP] = sp;
	assert_int_equal(tracer_hit(x->tr, 0, patcher, regs, 0), TARGET_BP_IN_PLACE);
}

/* hvtrace first: every site a stub probe; the guest reaches its patcher, hvtrace hands every site
 * back (NOP5, a breakpoint on it) and stops once more at the patcher's return; the guest writes its
 * CALL at one, hits there are traced (the NOP emulated by the target only where it is one); at the
 * return every other site gets the stub's CALL back (no breakpoint); the next update hands those
 * back again; once the guest takes its CALL away, that site's stub returns too; the detach leaves
 * every site a NOP5, no breakpoint behind. */
static void test_patcher_hands_sites_back(void **state)
{
	const struct vmi_patcher patchers[2] = {{.addr = PATCHER}, {.addr = PATCHER2}};
	uint64_t site2 = TEXT + 2 * 0x40;
	struct tracer_stats st;
	struct arch_regs regs = {0};
	struct fixture x;
	uint8_t call[5];
	char err[256] = "";

	(void)state;
	fixture_init(&x, NR_SITES);
	assert_int_equal(tracer_set_patchers(x.tr, patchers, 2), 0);
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
	assert_int_equal(sites_calling_stub(&x), NR_SITES);
	assert_int_equal(x.nr_bps, 2);
	assert_true(bp_at(&x, PATCHER));

	/* the guest's ftrace_modify_all_code: its first instruction runs in place after the yield;
	 * a breakpoint waits at its return */
	regs.r[X86_RIP] = PATCHER;
	regs.r[X86_RSP] = STACK_SP;
	assert_int_equal(tracer_hit(x.tr, 0, PATCHER, &regs, 0), TARGET_BP_IN_PLACE);
	assert_int_equal(regs.r[X86_RIP], PATCHER);
	assert_int_equal(sites_calling_stub(&x), 0);
	for (unsigned i = 0; i < NR_SITES; i++) {
		assert_memory_equal(x.text + i * 0x40, NOP5, 5);
		assert_true(bp_at(&x, TEXT + i * 0x40));
		assert_true(x.tr->probes.v[i].yielded);
	}
	assert_true(bp_at(&x, RET));
	assert_int_equal(x.nr_bps, 2 + NR_SITES + 1);
	tracer_stats(x.tr, &st);
	assert_int_equal(st.yielded_sites, NR_SITES);
	assert_int_equal(st.yields, NR_SITES);
	assert_int_equal(st.shared_sites, NR_SITES);
	assert_int_equal(st.patcher_stops, 1);
	assert_int_equal(st.patchers, 2);

	/* the nested patcher (ftrace_replace_code, its own return elsewhere): no second return
	 * breakpoint */
	regs.r[X86_RIP] = PATCHER2;
	regs.r[X86_RSP] = STACK_SP - 0x40;
	assert_int_equal(tracer_hit(x.tr, 0, PATCHER2, &regs, 0), TARGET_BP_IN_PLACE);
	assert_int_equal(x.nr_bps, 2 + NR_SITES + 1);

	/* the guest's verify finds its NOP5 and writes its CALL; hvtrace's breakpoint traces the
	 * call there (NOP emulation asked, which the QEMU target refuses over a CALL) */
	guest_call(call, site2);
	memcpy(x.text + 2 * 0x40, call, 5);
	regs.r[X86_RIP] = site2;
	assert_int_equal(tracer_hit(x.tr, 0, site2, &regs, 0), 0);
	assert_int_equal(regs.r[X86_RIP], site2 + 5);

	/* the patcher returns: the sites the guest left as NOP5s are stub sites again, the guest's
	 * stays traced by its breakpoint; the return's breakpoint is gone, the vCPU goes on there */
	regs.r[X86_RIP] = RET;
	assert_int_equal(tracer_hit(x.tr, 0, RET, &regs, 0), 0);
	assert_int_equal(regs.r[X86_RIP], RET);
	assert_false(bp_at(&x, RET));
	assert_int_equal(sites_calling_stub(&x), NR_SITES - 1);
	assert_memory_equal(x.text + 2 * 0x40, call, 5);
	assert_true(bp_at(&x, site2));
	assert_int_equal(x.nr_bps, 2 + 1);
	tracer_stats(x.tr, &st);
	assert_int_equal(st.reclaims, NR_SITES - 1);

	/* its next update (the guest takes its CALL away): the stub sites go back again, and at
	 * the return every site is the stub's once more */
	regs.r[X86_RIP] = PATCHER;
	regs.r[X86_RSP] = STACK_SP;
	assert_int_equal(tracer_hit(x.tr, 0, PATCHER, &regs, 0), TARGET_BP_IN_PLACE);
	assert_int_equal(sites_calling_stub(&x), 0);
	memcpy(x.text + 2 * 0x40, NOP5, 5);
	assert_int_equal(tracer_hit(x.tr, 0, RET, &regs, 0), 0);
	assert_int_equal(sites_calling_stub(&x), NR_SITES);
	assert_int_equal(x.nr_bps, 2);
	tracer_stats(x.tr, &st);
	assert_int_equal(st.yielded_sites, NR_SITES);
	assert_int_equal(st.yields, 2 * NR_SITES - 1);
	assert_int_equal(st.reclaims, 2 * NR_SITES - 1);
	assert_int_equal(st.patcher_stops, 3);

	/* a last update the guest is inside when hvtrace detaches: its CALL stays, the rest NOP5s */
	regs.r[X86_RIP] = PATCHER;
	assert_int_equal(tracer_hit(x.tr, 0, PATCHER, &regs, 0), TARGET_BP_IN_PLACE);
	memcpy(x.text + 2 * 0x40, call, 5);
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_memory_equal(x.text + 2 * 0x40, call, 5);
	for (unsigned i = 0; i < NR_SITES; i++)
		if (i != 2)
			assert_memory_equal(x.text + i * 0x40, NOP5, 5);
	assert_int_equal(x.nr_bps, 0);
	assert_false(x.mapped);
	assert_int_equal(x.tr->text_rewritten, 0);
	fixture_free(&x);
}

/* A return address the guest's stack does not give (unmapped), or gives inside hvtrace's stub: the
 * sites stay handed back, traced by breakpoints; one line says so. */
static void test_patcher_return_unreadable(void **state)
{
	struct arch_regs regs = {0};
	struct fixture x;

	(void)state;
	fixture_init(&x, NR_SITES);
	attach_one_patcher(&x);
	patcher_stop(&x, &regs, PATCHER, 0xdead0000);
	assert_int_equal(sites_calling_stub(&x), 0);
	assert_int_equal(x.nr_bps, 1 + NR_SITES);
	/* a stack that names hvtrace's own stub code as the return: no breakpoint there either */
	{
		uint64_t into_stub = x.tr->stub.stub.entry[0];

		memcpy(x.stack + (STACK_SP - STACK), &into_stub, 8);
		patcher_stop(&x, &regs, PATCHER, STACK_SP);
		assert_false(bp_at(&x, into_stub));
		assert_int_equal(x.nr_bps, 1 + NR_SITES);
	}
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_int_equal(x.nr_bps, 0);
	for (unsigned i = 0; i < NR_SITES; i++)
		assert_memory_equal(x.text + i * 0x40, NOP5, 5);
	fixture_free(&x);
}

/* A hostile guest: between the hand-back and the patcher's return it writes its own bytes over a
 * handed-back site (not a NOP5, not a CALL), and over a stub site it never handed back; hvtrace
 * writes over neither, at the return nor at the detach, and says nothing false in --stats. */
static void test_guest_scribbles_over_sites(void **state)
{
	static const uint8_t junk[5] = {0xcc, 0x0f, 0x0b, 0xeb, 0xfe};
	struct arch_regs regs = {0};
	struct tracer_stats st;
	struct fixture x;

	(void)state;
	fixture_init(&x, NR_SITES);
	attach_one_patcher(&x);
	patcher_stop(&x, &regs, PATCHER, STACK_SP);
	memcpy(x.text + 4 * 0x40, junk, 5);
	assert_int_equal(tracer_hit(x.tr, 0, RET, &regs, 0), 0);
	assert_memory_equal(x.text + 4 * 0x40, junk, 5);
	assert_int_equal(sites_calling_stub(&x), NR_SITES - 1);
	tracer_stats(x.tr, &st);
	assert_int_equal(st.reclaims, NR_SITES - 1);
	/* and over a stub CALL of hvtrace's: left as written at the detach */
	memcpy(x.text + 5 * 0x40, junk, 5);
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_memory_equal(x.text + 4 * 0x40, junk, 5);
	assert_memory_equal(x.text + 5 * 0x40, junk, 5);
	for (unsigned i = 0; i < NR_SITES; i++)
		if (i != 4 && i != 5)
			assert_memory_equal(x.text + i * 0x40, NOP5, 5);
	assert_int_equal(x.nr_bps, 0);
	fixture_free(&x);
}

/* Nothing patched with the vCPUs running: a target whose hits do not stop every vCPU (the
 * embedded VMM's, where other vCPUs run during a hit) gets no patcher probe; too many are refused.
 */
static void test_patchers_need_all_stopped(void **state)
{
	const struct vmi_patcher a[5] = {
	    {.addr = PATCHER}, {.addr = PATCHER + 1}, {.addr = PATCHER + 2}, {.addr = PATCHER + 3},
	    {.addr = PATCHER + 4}};
	struct fixture x;

	(void)state;
	fixture_init(&x, NR_SITES);
	assert_int_equal(tracer_set_patchers(x.tr, a, 5), -EINVAL);
	x.f.t.hit_all_stopped = false;
	assert_int_equal(tracer_set_patchers(x.tr, a, 1), -ENOTSUP);
	assert_int_equal(tracer_set_patchers(x.tr, a, 0), 0);
	fixture_free(&x);
}

/* The guest first: one function's entry holds the guest's CALL at attach; it is traced by an entry
 * probe (its CALL runs in place), counted as shared, and left byte for byte as it was. */
static void test_guest_call_at_attach_shared(void **state)
{
	const struct vmi_patcher patcher = {.addr = PATCHER};
	uint64_t site3 = TEXT + 3 * 0x40;
	struct tracer_stats st;
	struct arch_regs regs = {0};
	struct fixture x;
	uint8_t call[5];
	char err[256] = "";

	(void)state;
	fixture_init(&x, 3);
	memcpy(call, x.text + 3 * 0x40, 5);
	assert_int_equal(tracer_set_patchers(x.tr, &patcher, 1), 0);
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), 0);
	assert_int_equal(sites_calling_stub(&x), NR_SITES - 1);
	assert_true(bp_at(&x, site3));
	tracer_stats(x.tr, &st);
	assert_int_equal(st.shared_sites, 1);
	assert_int_equal(st.yielded_sites, 0);
	regs.r[X86_RIP] = site3;
	assert_int_equal(tracer_hit(x.tr, 0, site3, &regs, 0), TARGET_BP_IN_PLACE);
	assert_int_equal(regs.r[X86_RIP], site3);
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_memory_equal(x.text + 3 * 0x40, call, 5);
	assert_int_equal(x.nr_bps, 0);
	fixture_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_patcher_hands_sites_back),
	    cmocka_unit_test(test_patcher_return_unreadable),
	    cmocka_unit_test(test_guest_scribbles_over_sites),
	    cmocka_unit_test(test_patchers_need_all_stopped),
	    cmocka_unit_test(test_guest_call_at_attach_shared),
	};

	return cmocka_run_group_tests_name("tracer_yield", tests, NULL, NULL);
}
