/* A stub attach cut short (a SIGINT while QEMU's gdbstub writes the CALLs) must leave the guest as
 * it was found once the detach that follows has run: the target here refuses every text write from
 * the Nth on, as the QEMU target does once a stop is asked, either with that Nth write landed all
 * the same (its reply was what the stop cut short) or not sent at all. Whatever was patched, the
 * site in flight included, is put back by the detach, and the stub stays mapped for as long as a
 * site calls it. Guest memory is host buffers (GVA = GPA). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/x86_insn.h"
#include "host/session/text_verify.h"
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
#define REGION	 0x400000ull /* the stub's */
#define NOP5	 "\x0f\x1f\x44\x00\x00"

enum cut { CUT_LANDED, CUT_REFUSED };

struct fixture {
	struct fake_target f;
	uint8_t text[TEXT_LEN];
	uint8_t *region;
	struct vmi_symtab syms;
	struct vmi_sites sites;
	const struct vmi_site *sel[NR_SITES];
	struct tracer *tr;
	/* the stop: text write number cut_at (from 0) is the first one it cuts short */
	unsigned text_writes, cut_at;
	enum cut how;
	bool stop;		 /* a stop is asked: text writes are refused */
	bool mapped;		 /* the stub region is mapped */
	unsigned calls_at_unmap; /* sites still calling into the region when it was unmapped */
};

static struct fixture *fx(struct target *t)
{
	return (struct fixture *)fake_target_of(t);
}

/* The QEMU target's text write under a stop: refused (-EINTR, nothing written) while one is asked;
 * the write the stop comes in the middle of has either landed (CUT_LANDED) or not. */
static int write_text(struct target *t, uint64_t gpa, const void *expect, const void *buf,
		      size_t len)
{
	struct fixture *x = fx(t);
	int ret;

	if (x->stop)
		return -EINTR;
	if (x->text_writes++ != x->cut_at)
		return fake_target_write_text(t, gpa, expect, buf, len);
	x->stop = true;
	if (x->how == CUT_REFUSED)
		return -EINTR;
	ret = fake_target_write_text(t, gpa, expect, buf, len);
	return ret < 0 ? ret : -EINTR;
}

static unsigned sites_calling(struct fixture *x)
{
	unsigned n = 0;

	for (unsigned i = 0; i < NR_SITES; i++)
		n += x->text[i * 0x40] == X86_CALL_REL32;
	return n;
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
	struct fixture *x = fx(t);

	(void)r;
	x->calls_at_unmap += sites_calling(x);
	x->mapped = false;
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
    .insert_bp = fake_target_insert_bp,
    .remove_bp = fake_target_remove_bp,
    .write_text = write_text,
    .stub_map = map,
    .stub_unmap = unmap,
    .pause = fake_target_pause,
    .resume = fake_target_resume,
    .get_regs = get_regs,
    .set_bp_handler = set_bp_handler,
};

/* NR_SITES functions traced with stub probes, not attached yet. */
static void fixture_init(struct fixture *x, unsigned cut_at, enum cut how)
{
	struct tracer_opts opts = {.stub = true, .ring_records = 64};
	struct vmi_task_layout task = {.unknown = true};
	uint64_t addrs[NR_SITES];
	char name[NR_SITES][16];

	memset(x, 0, sizeof(*x));
	fake_target_init(&x->f, &ops, 1);
	x->cut_at = cut_at;
	x->how = how;
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
	vmi_symtab_sort(&x->syms);
	assert_int_equal(vmi_sites_build(&x->sites, addrs, NR_SITES, &x->syms), 0);
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

/* The attach, cut at text write @cut_at as @how says, fails; the stop is then over (the backend's
 * detach runs without it) and the detach puts every byte back: --verify-text finds none of ours,
 * no site is taken for one the guest rewrote, and the stub was unmapped only once no site called
 * it. */
static void cut_and_detach(unsigned cut_at, enum cut how)
{
	struct fixture x;
	struct text_verify v;
	struct text_verdict d;
	char err[256] = "";

	fixture_init(&x, cut_at, how);
	assert_int_equal(text_verify_begin(&v, fake_mem_read, &x.f.mem, TEXT, TEXT + TEXT_LEN), 0);
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), -EINTR);
	assert_non_null(strstr(err, "cannot write the CALL"));
	x.stop = false;
	assert_int_equal(tracer_detach(x.tr), 0);
	assert_int_equal(sites_calling(&x), 0);
	assert_false(x.mapped);
	assert_int_equal(x.calls_at_unmap, 0);
	assert_int_equal(x.tr->text_rewritten, 0);
	assert_int_equal(text_verify_end(&v, arch_default(), fake_mem_read, &x.f.mem, tracer_probes(x.tr), 0, &d),
			 0);
	assert_int_equal(d.ours, 0);
	assert_int_equal(d.kernel, 0);
	for (unsigned i = 0; i < NR_SITES; i++)
		assert_false(x.tr->probes.v[i].patched);
	text_verify_free(&v);
	fixture_free(&x);
}

/* The stop comes while a CALL is being written, and that write lands: the first, a middle and the
 * last site. */
static void test_cut_write_landed(void **state)
{
	(void)state;
	cut_and_detach(0, CUT_LANDED);
	cut_and_detach(3, CUT_LANDED);
	cut_and_detach(NR_SITES - 1, CUT_LANDED);
}

/* The stop comes before a CALL is written: the sites before it are patched, the rest not. */
static void test_cut_write_refused(void **state)
{
	(void)state;
	cut_and_detach(0, CUT_REFUSED);
	cut_and_detach(3, CUT_REFUSED);
	cut_and_detach(NR_SITES - 1, CUT_REFUSED);
}

/* A stop that never ends (the target refuses every text write from then on): the detach cannot put
 * the CALLs back and says so, and the stub they call stays mapped. */
static void test_cut_for_good_keeps_stub(void **state)
{
	struct fixture x;
	char err[256];

	(void)state;
	fixture_init(&x, 3, CUT_LANDED);
	assert_int_equal(tracer_attach(x.tr, err, sizeof(err)), -EINTR);
	assert_int_equal(sites_calling(&x), 4);
	assert_true(x.mapped);
	assert_int_equal(tracer_detach(x.tr), -EIO);
	assert_int_equal(sites_calling(&x), 4);
	assert_true(x.mapped);
	assert_int_equal(x.calls_at_unmap, 0);
	fixture_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cut_write_landed),
	    cmocka_unit_test(test_cut_write_refused),
	    cmocka_unit_test(test_cut_for_good_keeps_stub),
	};

	return cmocka_run_group_tests_name("stub_attach_cut", tests, NULL, NULL);
}
