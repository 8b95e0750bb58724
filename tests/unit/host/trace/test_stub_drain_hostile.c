/* Stub probes against a guest that writes anything into the stub's memory: forged ring records are
 * rejected by the drain (unknown type, another CPU, a depth past the host's own bound, a site that
 * is no stub probe's), a record never committed is a gap the host counts lost, the guest's lost
 * counters are reported as the guest's (saturating), and forged shadow-stack frames cannot make the
 * detach write outside the guest stack they claim. Guest memory is a host buffer (GVA = GPA). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/stub_drain.h"
#include "tests/common/fake_target.h"
#include "vmi/vmi_linux.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GUEST_MEM (8u << 20)
#define STUB_AT	  0x400000ull
#define F_HOOK	  0x1000ull /* a stub probe whose returns are hooked */
#define F_PLAIN	  0x2000ull /* a stub probe without return hook */
#define F_TRAP	  0x3000ull /* a trap probe */
#define RET_SLOT  0x7ff8ull /* a return-address slot on the guest stack [0, 64 KiB) */

static uint8_t *guest;
static struct fake_target ft;
static struct vmi_symtab syms;
static struct vmi_site sites[3];
static struct probe_table probes;
static struct ring rings[2];
static struct vmi_task_layout task = {.cpu_gs_off = 8,
				      .in_interrupt_mask = VMI_LINUX_IN_INTERRUPT_MASK};
static struct stub_drain d;
static struct fe_spec ret_spec;	   /* F_HOOK's typed return, when set by setup_typed */
static bool with_ret_spec;
static struct fe_spec ev_spec; /* F_HOOK's -e event, when set by setup_event (--max-depth 2) */
static bool with_ev_spec;

static int place(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
		 struct target_region *out, char *err, size_t errlen)
{
	(void)t, (void)lo, (void)hi, (void)min, (void)err, (void)errlen;
	*out = (struct target_region){
	    .gva = STUB_AT, .gpa = STUB_AT, .size = want < (2u << 20) ? want : (2u << 20)};
	return 0;
}

static void drop(struct target *t, const struct target_region *r)
{
	(void)t, (void)r;
}

/* One guest TSC tick is one nanosecond from 0 on. */
static int clock_1ghz(struct target *t, uint64_t *tsc, uint64_t *ns, uint64_t *khz)
{
	(void)t;
	*tsc = *ns = 0;
	*khz = 1000000;
	return 0;
}

/* vCPU registers: every vCPU outside the stub (RIP 0), unless a test makes them unreadable for the
 * next @regs_unreadable runs (-1: for good). */
static int regs_unreadable;

static int vcpu_regs(struct target *t, unsigned cpu, struct arch_regs *regs)
{
	(void)t, (void)cpu;
	if (regs_unreadable)
		return -EIO;
	memset(regs, 0, sizeof(*regs));
	return 0;
}

static int pause_nop(struct target *t)
{
	(void)t;
	return 0;
}

/* Set by a test: CPU 1's preempt count (Linux) is at PREEMPT_AT and says "in a hard interrupt"
 * until the guest has run @irq_runs more times. */
#define PREEMPT_AT 0x9000ull
static int irq_runs;
static unsigned resumes;

static void resume_nop(struct target *t)
{
	(void)t;
	resumes++;
	if (regs_unreadable > 0)
		regs_unreadable--;
	if (irq_runs > 0 && --irq_runs == 0)
		memset(guest + PREEMPT_AT, 0, 4);
}

static int kernel_read(struct target *t, uint64_t gva, void *buf, size_t len)
{
	return fake_target_read_phys(t, gva, buf, len);
}

/* Set by a test: vCPUs now run on page tables that map every address DECOY bytes higher (a guest
 * that switched CR3); the page tables captured at attach (kernel_gpa) still map it 1:1. */
#define DECOY 0x100000ull
static bool switched;

static int virt_read(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len)
{
	return fake_target_read_virt(t, cpu, gva + (switched ? DECOY : 0), buf, len);
}

static int virt_write(struct target *t, unsigned cpu, uint64_t gva, const void *buf, size_t len)
{
	return fake_target_write_virt(t, cpu, gva + (switched ? DECOY : 0), buf, len);
}

static const struct target_ops guest_ops = {
    .read_virt = virt_read,
    .write_virt = virt_write,
    .read_phys = fake_target_read_phys,
    .write_phys = fake_target_write_phys,
    .write_text = fake_target_write_text,
    .translate = fake_target_translate,
    .kernel_gpa = fake_target_kernel_gpa,
    .stub_map = place,
    .stub_unmap = drop,
    .tsc_sync = clock_1ghz,
    .get_regs = vcpu_regs,
    .pause = pause_nop,
    .resume = resume_nop,
    .read_kernel = kernel_read,
};

static uint64_t get64(uint64_t a)
{
	uint64_t v;

	memcpy(&v, fake_mem_at(&ft.mem, a, 8), 8);
	return v;
}

static void set64(uint64_t a, uint64_t v)
{
	memcpy(fake_mem_at(&ft.mem, a, 8), &v, 8);
}

/* Boots the drain over two CPUs with the three probes, F_HOOK's returns hooked. */
static int setup(void **state)
{
	struct stub_drain_cfg cfg = {.tgt = &ft.t,
				     .probes = &probes,
				     .rings = rings,
				     .nr_cpus = 2,
				     .task = &task,
				     .returns = true,
				     .max_records = 64};
	const struct vmi_site *sel[3] = {&sites[0], &sites[1], &sites[2]};
	char err[256];

	(void)state;
	guest = calloc(1, GUEST_MEM);
	fake_target_init(&ft, &guest_ops, 2);
	ft.t.stack_shift = 16;
	fake_mem_map(&ft.mem, 0, guest, GUEST_MEM);
	memset(&syms, 0, sizeof(syms));
	vmi_symtab_add(&syms, F_HOOK, 0x100, "f_hook");
	vmi_symtab_add(&syms, F_PLAIN, 0x100, "f_plain");
	vmi_symtab_add(&syms, F_TRAP, 0x100, "f_trap");
	vmi_symtab_sort(&syms);
	for (unsigned i = 0; i < 3; i++) {
		sites[i] = (struct vmi_site){.addr = F_HOOK + 0x1000 * i, .func = &syms.syms[i]};
		memcpy(guest + sites[i].addr, "\x0f\x1f\x44\x00\x00", 5);
	}
	assert_int_equal(probe_table_init(&probes, sel, 3), 0);
	assert_int_equal(probe_verify_all(&probes, &ft.t, err, sizeof(err)), 0);
	probes.v[0].stub = probes.v[1].stub = true;
	probes.v[0].hooks_return = true;
	if (with_ret_spec) {
		probes.v[0].ret_probe = true;
		probes.v[0].ret_event = &ret_spec;
		cfg.max_payload = fe_payload_size(&ret_spec);
		assert_true(stub_drain_capable(&probes.v[0]));
	}
	if (with_ev_spec) {
		probes.v[0].event = &ev_spec;
		cfg.max_payload = fe_payload_size(&ev_spec);
		cfg.graph = true;
		cfg.max_depth = 2;
		assert_true(stub_drain_capable(&probes.v[0]));
	}
	for (unsigned c = 0; c < 2; c++)
		assert_int_equal(ring_init(&rings[c], 64), 0);
	stub_drain_init(&d);
	assert_int_equal(stub_drain_attach(&d, &cfg, err, sizeof(err)), 0);
	assert_int_equal(d.stub.max_depth, 128);
	return 0;
}

/* setup, with F_HOOK a typed return probe "f_hook(long ret)". */
static int setup_typed(void **state)
{
	char err[128];
	size_t pos;

	assert_int_equal(fe_parse("f_hook(long ret)", &ret_spec, err, sizeof(err), &pos), 0);
	with_ret_spec = true;
	return setup(state);
}

/* setup, with F_HOOK an -e event "f_hook(u64 a, u64 b)", set_graph_function and --max-depth 2. */
static int setup_event(void **state)
{
	char err[128];
	size_t pos;

	assert_int_equal(fe_parse("f_hook(u64 a, u64 b)", &ev_spec, err, sizeof(err), &pos), 0);
	with_ev_spec = true;
	return setup(state);
}

static int teardown(void **state)
{
	(void)state;
	with_ret_spec = false;
	with_ev_spec = false;
	stub_drain_detach(&d);
	for (unsigned c = 0; c < 2; c++)
		ring_free(&rings[c]);
	probe_table_free(&probes);
	vmi_symtab_free(&syms);
	free(guest);
	return 0;
}

/* Appends @r at index @idx of CPU @cpu's guest ring, committed unless @uncommitted, as a guest
 * that writes the stub's memory itself would. */
static void forge(unsigned cpu, uint64_t idx, struct stub_rec r, bool uncommitted)
{
	uint64_t at =
	    STUB_AT + STUB_RINGS_OFF +
	    (cpu * d.stub.ring_records + (idx & (d.stub.ring_records - 1))) * STUB_REC_SIZE;

	r.seq = uncommitted ? 0 : (uint32_t)(idx + 1);
	r.tsc = 1000 * (idx + 1);
	memcpy(fake_mem_at(&ft.mem, at, STUB_REC_SIZE), &r, STUB_REC_SIZE);
}

static void set_head(unsigned cpu, uint64_t head)
{
	uint64_t *h = (uint64_t *)fake_mem_at(
	    &ft.mem, STUB_AT + STUB_RINGHDR_OFF + cpu * STUB_RINGHDR_SIZE + RH_HEAD, 8);

	__atomic_store_n(h, head, __ATOMIC_RELEASE);
}

/* What reached host ring @cpu: its records' "type:ip:depth:duration" joined by spaces. */
static void host_records(unsigned cpu, char *out, size_t len)
{
	const struct hvt_record *r;
	size_t n = 0;

	out[0] = 0;
	while ((r = ring_peek(&rings[cpu])) != NULL) {
		n += (size_t)snprintf(out + n, len - n, "%s%u:%#llx:%u:%llu", n ? " " : "", r->type,
				      (unsigned long long)r->ip, r->depth,
				      (unsigned long long)r->duration);
		ring_pop(&rings[cpu]);
	}
}

/* Every forged record is dropped and counted; the valid ones come through unchanged, on their own
 * CPU; the guest's rewritten depth bound in the header changes nothing. */
static void test_forged_records_rejected(void **state)
{
	uint64_t i = 0;
	char got[512];

	(void)state;
	set64(STUB_AT + STUB_HDR_OFF + H_MAX_DEPTH, 255);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_HOOK}, false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_RETURN, .ip = F_HOOK, .depth = 255},
	      false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_RETURN, .ip = F_HOOK, .depth = 128},
	      false);
	forge(0, i++, (struct stub_rec){.type = 0x77, .ip = F_HOOK}, false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_HOOK, .cpu = 1}, false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_HOOK, .cpu = 0xffff},
	      false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_ARGS, .ip = F_HOOK}, false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_RETURN, .ip = F_PLAIN}, false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_TRAP}, false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = 0x9999}, false);
	/* the deepest depth the stub can write, and an entry TSC after the return's */
	forge(0, i++,
	      (struct stub_rec){.type = STUB_REC_RETURN, .ip = F_HOOK, .depth = 127, .t0 = 1000000},
	      false);
	forge(0, i++, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_PLAIN}, false);
	set_head(0, i);
	stub_drain_stop(&d);
	host_records(0, got, sizeof(got));
	assert_string_equal(got, "1:0x1000:0:0 2:0x1000:127:0 1:0x2000:0:0");
	host_records(1, got, sizeof(got));
	assert_string_equal(got, "");
	assert_int_equal(d.rejected, 9);
	assert_int_equal(d.records, 12);
	assert_int_equal(d.lost, 0);
}

/* A typed return whose one field is RAX: the drain builds its payload from the RAX the stub
 * recorded, as the trap path does from the register, and no guest memory is read for it. */
static void test_typed_return_from_rax(void **state)
{
	const struct hvt_record *r, *payload;
	char out[64];

	(void)state;
	forge(0, 0, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_HOOK, .depth = 3}, false);
	forge(0, 1,
	      (struct stub_rec){.type = STUB_REC_RETURN,
				.ip = F_HOOK,
				.depth = 3,
				.rax = (uint64_t)-5,
				.parent = 0x1234,
				.t0 = 1000},
	      false);
	set_head(0, 2);
	stub_drain_stop(&d);
	r = ring_peek_at(&rings[0], 1);
	payload = ring_peek_at(&rings[0], 2);
	assert_non_null(r);
	assert_non_null(payload);
	assert_int_equal(r->type, HVT_REC_RETURN_EVENT);
	assert_int_equal(r->value, fe_payload_size(&ret_spec));
	assert_int_equal(r->ip, F_HOOK);
	assert_int_equal(r->parent, 0x1234);
	assert_int_equal(r->depth, 3);
	assert_int_equal(r->duration, 1000);
	fe_format(out, sizeof(out), &ret_spec, (const uint8_t *)payload, &syms);
	assert_string_equal(out, "ret=-5");
	assert_int_equal(d.rejected, 0);
}

/* Which return probes can be stub probes: RAX itself in any integer form, not a field read from
 * guest memory, a string, a dereference or another argument position. */
static void test_return_capability(void **state)
{
	static const char *const stub[] = {"f(long ret)", "f(x64 ret)", "f(u8 ret)", "f(symbol ret)",
					   "f()"};
	static const char *const trap[] = {"f(long ret+0)", "f(string ret)", "f(x64 ret+8[0]+0)",
					   "f(NULL, long b)", "f(int g=0x1000)", "f(char[4] ret)"};
	struct probe p = {0};
	struct fe_spec spec;
	char err[128];
	size_t pos;

	(void)state;
	p.ret_probe = true;
	p.ret_event = &spec;
	for (size_t i = 0; i < sizeof(stub) / sizeof(stub[0]); i++) {
		assert_int_equal(fe_parse(stub[i], &spec, err, sizeof(err), &pos), 0);
		if (!stub_drain_capable(&p))
			fail_msg("%s should be a stub probe", stub[i]);
	}
	for (size_t i = 0; i < sizeof(trap) / sizeof(trap[0]); i++) {
		assert_int_equal(fe_parse(trap[i], &spec, err, sizeof(err), &pos), 0);
		if (stub_drain_capable(&p))
			fail_msg("%s should stay a trap probe", trap[i]);
	}
}

/* A record reserved and never committed blocks nothing at the end: it is skipped and counted lost
 * by the host (a gap in the sequence numbers), the committed ones after it are drained; records
 * reserved after the last committed one are not counted; the gap is an HVT_REC_LOST record in the
 * host ring where it was, together with the 3 the guest's counter said it lost before (after the
 * records read with that count). The guest's own lost counters are reported as they are, summed
 * without wrapping; one with no record after it waits on its ring (lost_pending) for the writer. */
static void test_gap_counted_guest_lost_reported(void **state)
{
	struct stub_rec e = {.type = STUB_REC_ENTRY, .ip = F_PLAIN, .cpu = 1};
	char got[512];

	(void)state;
	forge(1, 0, e, false);
	forge(1, 1, e, true);
	forge(1, 2, e, true);
	forge(1, 3, e, false);
	forge(1, 4, e, true);
	set_head(1, 5);
	set64(STUB_AT + STUB_RINGHDR_OFF + RH_LOST, UINT64_MAX - 1);
	set64(STUB_AT + STUB_RINGHDR_OFF + STUB_RINGHDR_SIZE + RH_LOST, 3);
	stub_drain_stop(&d);
	{
		const struct hvt_record *l = ring_peek_at(&rings[1], 1);

		assert_non_null(l);
		assert_int_equal(l->type, HVT_REC_LOST);
		assert_int_equal(l->cpu, 1);
		assert_int_equal(l->value, 2 + 3);
	}
	host_records(1, got, sizeof(got));
	assert_string_equal(got, "1:0x2000:0:0 5:0:0:0 1:0x2000:0:0");
	assert_int_equal(rings[1].lost_pending, 0);
	assert_int_equal(rings[0].lost_pending, UINT64_MAX - 1);
	assert_int_equal(d.lost, 2);
	assert_int_equal(d.records, 2);
	assert_int_equal(d.guest_lost, UINT64_MAX);
	assert_int_equal(get64(STUB_AT + STUB_RINGHDR_OFF + STUB_RINGHDR_SIZE + RH_TAIL), 4);
}

/* Forged frames on a shadow stack whose count is huge: only the slot that lies in the guest stack
 * the shadow stack belongs to and still holds the return routine's address is written; a slot in
 * another stack region that holds it too, the guest's text, an unmapped address are left alone. */
static void test_forged_frames_restore(void **state)
{
	uint64_t st = get64(STUB_AT + STUB_HDR_OFF + H_STACKS) + 5 * STUB_STACK_SIZE;
	struct stub_frame f[4] = {
	    {.slot = RET_SLOT, .orig = 0x1111, .ip = F_HOOK},
	    {.slot = 0x30000, .orig = 0x4141, .ip = F_HOOK},
	    {.slot = F_HOOK, .orig = 0x4242, .ip = F_HOOK},
	    {.slot = 0xdead00000000ull, .orig = 0x4343, .ip = F_HOOK},
	};

	(void)state;
	set64(st + S_KEY, (RET_SLOT >> 16) + 1);
	set64(st + S_NR, UINT64_MAX);
	memcpy(fake_mem_at(&ft.mem, st + S_E, sizeof(f)), f, sizeof(f));
	set64(RET_SLOT, d.stub.ret);
	set64(0x30000, d.stub.ret);
	assert_int_equal(stub_restore_slots(&d.stub, false), 0);
	assert_int_equal(get64(RET_SLOT), 0x1111);
	assert_int_equal(get64(0x30000), d.stub.ret);
	assert_memory_equal(guest + F_HOOK, "\xe8", 1); /* still the CALL: not written */
	assert_int_equal(d.stub.restored_slots, 1);
}

/* A guest that switched its vCPUs' page tables before the detach: the slot is restored where it was
 * hooked (through the page tables of the attach), the decoy the current ones show is left alone. */
static void test_restore_ignores_current_cr3(void **state)
{
	uint64_t st = get64(STUB_AT + STUB_HDR_OFF + H_STACKS) + 5 * STUB_STACK_SIZE;
	struct stub_frame f = {.slot = RET_SLOT, .orig = 0x1111, .ip = F_HOOK};

	(void)state;
	set64(st + S_KEY, (RET_SLOT >> 16) + 1);
	set64(st + S_NR, 1);
	memcpy(fake_mem_at(&ft.mem, st + S_E, sizeof(f)), &f, sizeof(f));
	set64(RET_SLOT, d.stub.ret);
	set64(RET_SLOT + DECOY, d.stub.ret);
	switched = true;
	assert_int_equal(stub_restore_slots(&d.stub, false), 0);
	switched = false;
	assert_int_equal(get64(RET_SLOT), 0x1111);
	assert_int_equal(get64(RET_SLOT + DECOY), d.stub.ret);
	assert_int_equal(d.stub.restored_slots, 1);
}

/* A vCPU serving an interrupt may have interrupted the stub's code, and return into it by IRET: the
 * detach lets the guest run until it is out of the interrupt before it unmaps the stub; one that
 * never leaves it keeps the stub mapped. */
static void test_detach_waits_out_interrupts(void **state)
{
	static const uint32_t hardirq = 0x10000 | 0x80000000u; /* and no resched needed */

	(void)state;
	task.preempt_slot[1] = PREEMPT_AT;
	memcpy(guest + PREEMPT_AT, &hardirq, 4);
	irq_runs = 3;
	resumes = 0;
	assert_int_equal(stub_drain_detach(&d), 0);
	assert_int_equal(resumes, 3);
	assert_false(d.stub.placed);
	task.preempt_slot[1] = 0;
}

static void test_detach_keeps_stub_for_endless_interrupt(void **state)
{
	static const uint32_t nmi = 0x100000;

	(void)state;
	task.preempt_slot[1] = PREEMPT_AT;
	memcpy(guest + PREEMPT_AT, &nmi, 4);
	irq_runs = 0;
	assert_int_equal(stub_drain_detach(&d), -EBUSY);
	assert_true(d.stub.placed);
	memset(guest + PREEMPT_AT, 0, 4);
	task.preempt_slot[1] = 0;
	assert_int_equal(stub_drain_detach(&d), 0);
	assert_false(d.stub.placed);
}

/* A vCPU whose registers cannot be read (a stop that failed or has not finished) may be inside the
 * stub: the detach lets the guest run until they can be read, and keeps the stub mapped when they
 * never can. */
static void test_detach_waits_for_readable_registers(void **state)
{
	(void)state;
	regs_unreadable = 2;
	resumes = 0;
	assert_int_equal(stub_drain_detach(&d), 0);
	assert_int_equal(resumes, 2);
	assert_false(d.stub.placed);
}

static void test_detach_keeps_stub_when_registers_unreadable(void **state)
{
	(void)state;
	regs_unreadable = -1;
	assert_int_equal(stub_drain_detach(&d), -EBUSY);
	assert_true(d.stub.placed);
	regs_unreadable = 0;
	assert_int_equal(stub_drain_detach(&d), 0);
	assert_false(d.stub.placed);
}

/* ---- task names: the identity the stub records (R_TASK_ID) --------------------------------- */

#define TASK_AT	  0x9000ull /* a task struct in guest memory */
#define T_PID_OFF 0x10
#define T_COMM_OFF 0x40

/* Writes the task struct at TASK_AT as pid @pid named @comm, and returns its identity. */
static uint32_t set_task(int32_t pid, const char *comm)
{
	unsigned char c[16] = {0};

	strncpy((char *)c, comm, 15);
	memcpy(guest + TASK_AT + T_PID_OFF, &pid, 4);
	memcpy(guest + TASK_AT + T_COMM_OFF, c, 16);
	return stub_task_id(pid, c);
}

/* Commits record @idx of CPU 0 for task TASK_AT with identity @id, and waits until the drain thread
 * has taken it. */
static void commit_and_wait(uint64_t idx, uint32_t id)
{
	forge(0, idx, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_PLAIN, .task = TASK_AT,
					.task_id = id},
	      false);
	set_head(0, idx + 1);
	for (int i = 0; i < 5000 && __atomic_load_n(&d.records, __ATOMIC_ACQUIRE) <= idx; i++)
		usleep(1000);
	assert_true(__atomic_load_n(&d.records, __ATOMIC_ACQUIRE) > idx);
}

/* A task renamed by exec and a task struct reused by a new task are named as they were when the
 * event happened: a name read earlier for the same task struct is not handed to a record of another
 * identity, and one read for an identity still serves a late record of it. A record whose task
 * changed before the drain read it is named as it is now, and counted. */
static void test_task_named_as_at_the_event(void **state)
{
	uint32_t sh, dd, cat;
	const struct hvt_record *r;
	char got[256] = "";
	size_t n = 0;

	(void)state;
	task.valid = true;
	task.pid_off = T_PID_OFF;
	task.comm_off = T_COMM_OFF;
	sh = set_task(100, "sh");
	commit_and_wait(0, sh);
	dd = set_task(100, "dd"); /* the same pid after exec */
	commit_and_wait(1, dd);
	cat = set_task(200, "cat"); /* the struct reused by another task */
	commit_and_wait(2, cat);
	commit_and_wait(3, dd); /* late: that task is gone, its name was read at record 1 */
	commit_and_wait(4, sh); /* late, and its state was read at record 0: named from there */
	set_task(300, "init");
	commit_and_wait(5, cat);
	forge(0, 6, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_PLAIN, .task = TASK_AT,
				      .task_id = set_task(301, "ls") ^ 2},
	      false); /* an identity never seen: named as the task is now, counted */
	/* announced by the stub (STUB_REC_TASK): named as announced, whatever memory says by now;
	 * a comm without its NUL is cut; one on another CPU's ring is forged */
	forge(0, 7,
	      (struct stub_rec){.type = STUB_REC_TASK, .task = TASK_AT, .task_id = 0x4401,
				.ip = 400, .rax = 0x6464 /* "dd" */},
	      false);
	forge(0, 8, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_PLAIN, .task = TASK_AT,
				      .task_id = 0x4401},
	      false);
	forge(0, 9,
	      (struct stub_rec){.type = STUB_REC_TASK, .task = TASK_AT, .task_id = 0x4403,
				.ip = 401, .rax = 0x4141414141414141ull, .t0 = 0x4141414141414141ull},
	      false);
	forge(0, 10, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_PLAIN, .task = TASK_AT,
				       .task_id = 0x4403},
	      false);
	forge(0, 11, (struct stub_rec){.type = STUB_REC_TASK, .cpu = 1, .task = TASK_AT}, false);
	set_head(0, 12);
	stub_drain_stop(&d);
	while ((r = ring_peek(&rings[0])) != NULL) {
		n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%s-%d", n ? " " : "", r->comm,
				      r->pid);
		ring_pop(&rings[0]);
	}
	assert_string_equal(got, "sh-100 dd-100 cat-200 dd-100 sh-100 cat-200 ls-301 dd-400 "
				 "AAAAAAAAAAAAAAA-401");
	assert_int_equal(d.tasks_changed, 1);
	assert_int_equal(d.rejected, 1);
	task.valid = false;
	task.pid_off = task.comm_off = 0;
}

/* -e events where function_graph does not trace the call (issue 23): an entry the stub recorded
 * outside the graph for its event (STUB_F_ALONE) and one past --max-depth become events alone,
 * the depth that of the graph there; one inside is the graph's event entry; STUB_F_ALONE on a
 * probe without an event is forged. */
static void test_events_outside_graph(void **state)
{
	static const struct {
		uint8_t type, depth;
	} want[] = {{HVT_REC_EVENT_ALONE, 0}, {HVT_REC_EVENT, 1}, {HVT_REC_EVENT_ALONE, 2}};
	const struct hvt_record *r;
	unsigned n = 0;
	char out[128];

	(void)state;
	forge(0, 0,
	      (struct stub_rec){
		  .type = STUB_REC_ENTRY, .ip = F_HOOK, .flags = STUB_F_ARGS | STUB_F_ALONE},
	      false);
	forge(0, 1, (struct stub_rec){.type = STUB_REC_ARGS, .args = {0, 64}}, false);
	forge(0, 2,
	      (struct stub_rec){
		  .type = STUB_REC_ENTRY, .ip = F_HOOK, .depth = 1, .flags = STUB_F_ARGS},
	      false);
	forge(0, 3, (struct stub_rec){.type = STUB_REC_ARGS, .args = {0, 64}}, false);
	forge(0, 4,
	      (struct stub_rec){
		  .type = STUB_REC_ENTRY, .ip = F_HOOK, .depth = 3, .flags = STUB_F_ARGS},
	      false);
	forge(0, 5, (struct stub_rec){.type = STUB_REC_ARGS, .args = {0, 64}}, false);
	forge(0, 6, (struct stub_rec){.type = STUB_REC_ENTRY, .ip = F_PLAIN, .flags = STUB_F_ALONE},
	      false);
	set_head(0, 7);
	stub_drain_stop(&d);
	while ((r = ring_peek(&rings[0])) != NULL) {
		assert_true(n < 3);
		assert_int_equal(r->type, want[n].type);
		assert_int_equal(r->depth, want[n].depth);
		assert_int_equal(r->ip, F_HOOK);
		assert_int_equal(r->value, fe_payload_size(&ev_spec));
		ring_pop(&rings[0]);
		fe_format(out, sizeof(out), &ev_spec, (const uint8_t *)ring_peek(&rings[0]), &syms);
		assert_non_null(strstr(out, " b=64"));
		for (uint64_t k = 0; k < hvt_record_payload_slots(fe_payload_size(&ev_spec)); k++)
			ring_pop(&rings[0]);
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(d.rejected, 1);
	/* the stub hooked the returns of the calls in the graph (past --max-depth too), not the one
	 * outside */
	assert_int_equal(atomic_load(&probes.v[0].n.hooked), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_forged_records_rejected, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gap_counted_guest_lost_reported, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_forged_frames_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restore_ignores_current_cr3, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_typed_return_from_rax, setup_typed, teardown),
	    cmocka_unit_test(test_return_capability),
	    cmocka_unit_test_setup_teardown(test_task_named_as_at_the_event, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_events_outside_graph, setup_event, teardown),
	    cmocka_unit_test_setup_teardown(test_detach_waits_out_interrupts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_detach_keeps_stub_for_endless_interrupt, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_detach_waits_for_readable_registers, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_detach_keeps_stub_when_registers_unreadable, setup,
					    teardown),
	};

	return cmocka_run_group_tests_name("stub_hostile", tests, NULL, NULL);
}
