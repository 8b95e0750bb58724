#include "host/qemu/qemu_stub_place.h"
#include "vmi/vmi_linux_e820.h"
#include "host/trace/stub.h"
#include "host/util/msg_fmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* run --qemu with stub probes: QEMU's nice above hvtrace's. The vCPUs never wait for the drain (no
 * exit), so on a busy host only the scheduler can keep the guest from outrunning it. */
#define QEMU_STUB_NICE 10

void qemu_stub_place_reserve(struct qemu_stub_place *sp, const struct session *s,
			     struct qemu_launch_cfg *q)
{
	uint64_t region = stub_region_bytes(
	    s->smp, stub_ring_records_for((uint64_t)s->buffer_size_kb * 1024 / STUB_REC_SIZE),
	    STUB_STACKS_MAX);

	/* the stub's counting tables (-p nop with --profile or a hist trigger), at their largest */
	if (s->tracer == TRACER_NOP && (s->profile || s->nr_hists))
		region += stub_agg_bytes(s->smp, STUB_AGG_ENTRIES_MAX);

	/* arm64: the stub's code in a level-2 block of its own below the region's blocks (2 MiB with
	 * 4 KiB pages, 32 MiB with 16 KiB: stub_map_arm64.h) */
	if (q->isa == arch_get(ARCH_ARM64)) {
		uint64_t span = qemu_launch_block_span(q);

		region = ((region + span - 1) & ~(span - 1)) + span;
	}
	sp->resv_size = target_qemu_stub_reserve(region);
	if (qemu_launch_reserve(q, sp->resv_size, &sp->resv_gpa, sp->resv_why,
				sizeof(sp->resv_why)) < 0)
		sp->resv_size = 0;
	q->reserve_gpa = sp->resv_gpa;
	q->nice = QEMU_STUB_NICE;
	q->reserve_size = sp->resv_size;
}

/* Whether the kernel keeps the RAM memmap= asked for reserved: its own E820 table says so (the
 * kernel neither allocates nor maps an E820 reserved range). Otherwise the reason in resv_why. */
static bool stub_reserved(struct qemu_stub_place *sp, struct target_qemu *tq,
			  const struct vmi_linux *l)
{
	const struct vmi_sym *e = vmi_symtab_find(&l->objects, "e820_table");
	uint8_t tbl[4 + VMI_E820_MAX * VMI_E820_ENTRY_SIZE];
	long n = e ? vmi_linux_e820_read(target_qemu_read_kernel, tq, e->addr, tbl, sizeof(tbl)) : -1;

	if (n >= 4 &&
	    vmi_linux_e820_covers(tbl, (size_t)n, sp->resv_gpa, sp->resv_size, VMI_E820_RESERVED))
		return true;
	snprintf(sp->resv_why, sizeof(sp->resv_why),
		 "the kernel's e820_table %s guest-physical 0x%llx-0x%llx (memmap=) reserved",
		 !e	 ? "(not in the System.map) does not show"
		 : n < 4 ? "(unreadable) does not show"
			 : "does not have",
		 (unsigned long long)sp->resv_gpa,
		 (unsigned long long)(sp->resv_gpa + sp->resv_size - 1));
	return false;
}

/* attach: a RAM range the guest's own command line reserved (memmap=SIZE$ADDR), found in its E820
 * tables; the stub uses it instead of low memory. */
static void stub_find_reserved(struct qemu_stub_place *sp, struct target_qemu *tq,
			       const struct vmi_linux *l)
{
	const struct vmi_sym *e = vmi_symtab_find(&l->objects, "e820_table");
	const struct vmi_sym *f = vmi_symtab_find(&l->objects, "e820_table_firmware");
	static uint8_t cur[4 + VMI_E820_MAX * VMI_E820_ENTRY_SIZE],
	    fw[4 + VMI_E820_MAX * VMI_E820_ENTRY_SIZE];
	long nc, nf;

	if (!e || !f)
		return;
	nc = vmi_linux_e820_read(target_qemu_read_kernel, tq, e->addr, cur, sizeof(cur));
	nf = vmi_linux_e820_read(target_qemu_read_kernel, tq, f->addr, fw, sizeof(fw));
	if (nc < 4 || nf < 4 ||
	    !vmi_linux_e820_user_reserved(cur, (size_t)nc, fw, (size_t)nf, &sp->resv_gpa,
				     &sp->resv_size))
		sp->resv_gpa = sp->resv_size = 0;
}

/* memparse's number: digits (0x for hex), then K, M, G or T. */
static uint64_t mem_size(const char *p)
{
	char *end;
	uint64_t v = strtoull(p, &end, 0);

	switch (*end) {
	case 'T': case 't': v <<= 10; /* fall through */
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10;
	}
	return v;
}

/* attach to an arm64 guest: the RAM its own command line (saved_command_line, read from vCPU 0's
 * view) keeps out of the kernel's use with mem=, from there to the end of the RAM region QEMU maps
 * at QEMU_VIRT_RAM_BASE, 2 MiB aligned; resv_why says why when there is none. (A guest that lies
 * about its own command line only hands hvtrace RAM it uses itself: its own trace breaks.) */
static void stub_find_mem_limit(struct qemu_stub_place *sp, struct target_qemu *tq,
				const struct vmi_linux *l)
{
	const struct vmi_sym *c = vmi_symtab_find(&l->objects, "saved_command_line");
	struct target *t = &tq->t;
	char line[2048 + 1] = "";
	uint64_t ptr = 0, limit, lo, hi = 0;
	const char *m = NULL;
	size_t n = 0;

	sp->resv_gpa = sp->resv_size = 0;
	if (!c || t->ops->read_virt(t, 0, c->addr, &ptr, 8) < 0) {
		msg_fmt(sp->resv_why, sizeof(sp->resv_why),
			"the guest's command line (saved_command_line) cannot be read");
		return;
	}
	/* 64 bytes at a time up to its NUL, at most 2048 (COMMAND_LINE_SIZE) */
	while (n < sizeof(line) - 1 &&
	       t->ops->read_virt(t, 0, ptr + n, line + n,
				 sizeof(line) - 1 - n < 64 ? sizeof(line) - 1 - n : 64) == 0) {
		size_t k = strnlen(line + n, 64);

		if (k < 64 || n + k >= sizeof(line) - 1) {
			line[n + k] = 0;
			break;
		}
		n += 64;
	}
	line[sizeof(line) - 1] = 0;
	for (const char *p = line; (p = strstr(p, "mem=")); p += 4)
		if (p == line || p[-1] == ' ')
			m = p + 4; /* the last one counts, as the kernel's */
	for (unsigned i = 0; i < tq->mem.nr; i++)
		if (tq->mem.region[i].gpa <= QEMU_VIRT_RAM_BASE &&
		    QEMU_VIRT_RAM_BASE - tq->mem.region[i].gpa < tq->mem.region[i].len)
			hi = tq->mem.region[i].gpa + tq->mem.region[i].len;
	limit = m ? mem_size(m) : 0;
	lo = (QEMU_VIRT_RAM_BASE + limit + (2ull << 20) - 1) & ~((2ull << 20) - 1);
	hi &= ~((2ull << 20) - 1);
	if (!m || !limit || lo + (4ull << 20) > hi) {
		msg_fmt(sp->resv_why, sizeof(sp->resv_why),
			"its command line keeps no RAM out of the kernel's use (boot it with mem= "
			"below the VM's RAM, e.g. mem=%lluM)",
			hi > QEMU_VIRT_RAM_BASE + (64ull << 20)
			    ? (unsigned long long)((hi - QEMU_VIRT_RAM_BASE) >> 20) - 32
			    : 0ull);
		return;
	}
	sp->resv_gpa = lo;
	sp->resv_size = hi - lo;
}

/* arm64: whether an earlier hvtrace's stub is live in the reserved range, its region one level-2
 * block above the range's start (2 MiB, 32 MiB or 512 MiB: the kernel's page size). */
static bool stub_live_arm64(struct target_qemu *tq, const struct qemu_stub_place *sp)
{
	for (unsigned shift = 21; shift <= 29; shift += 4)
		if ((1ull << shift) < sp->resv_size &&
		    stub_live_at(&tq->t, sp->resv_gpa + (1ull << shift)))
			return true;
	return false;
}

void qemu_stub_place(struct qemu_stub_place *sp, struct target_qemu *tq, struct vmi_linux *l,
		     bool launched, char *why, size_t whylen)
{
	uint64_t lo, hi, va;

	*why = 0;
	if (target_arch(&tq->t) == arch_get(ARCH_ARM64)) {
		/* no low memory, no E820: the range mem= keeps out of the kernel's use (run --qemu
		 * puts it on the command line; attach reads it there) */
		if (!launched)
			stub_find_mem_limit(sp, tq, l);
		if (!sp->resv_size)
			msg_fmt(why, whylen,
				"stub probes: an arm64 guest needs RAM its kernel keeps out of use%s%s",
				sp->resv_why[0] ? ": " : "", sp->resv_why);
		else if (target_qemu_stub_arm64_perm(tq, why, whylen) < 0)
			; /* what the kernel enabled that the stub cannot follow: why says */
		else if (stub_live_arm64(tq, sp))
			msg_fmt(why, whylen,
				"the stub of an earlier hvtrace is still live in this guest (it was "
				"killed with its guardian)");
		else
			target_qemu_set_stub_area(tq, 0, 0, 0, sp->resv_gpa, sp->resv_size);
	} else if (vmi_linux_stub_area(l, target_qemu_read_kernel, tq, &lo, &hi, &va, why, whylen) == 0) {
		bool resv;

		if (!launched)
			stub_find_reserved(sp, tq, l);
		resv = sp->resv_size && (!launched || stub_reserved(sp, tq, l));
		tq->stub_low_why = sp->resv_why;

		target_qemu_set_stub_area(tq, lo, hi, va, resv ? sp->resv_gpa : 0,
					  resv ? sp->resv_size : 0);
		if (stub_live_at(&tq->t, target_qemu_stub_gpa(tq))) {
			target_qemu_set_stub_area(tq, 0, 0, 0, 0, 0);
			msg_fmt(why, whylen,
				"the stub of an earlier hvtrace is still live in "
				"this guest (it was killed with its guardian)");
		}
	}
	if (tq->mem.fd < 0 && !*why)
		msg_fmt(why, whylen,
			"stub probes need guest memory through the QEMU "
			"process (not --gdb-memory)");
}
