#include "host/trace/stub.h"
#include "guest-stub/stub_blob.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE	   4096ull

/* The detour slots' bytes, in whole pages. */
static uint64_t detours_bytes(unsigned nr)
{
	return ((uint64_t)nr * STUB_DETOUR_SIZE + PAGE - 1) & ~(PAGE - 1);
}

static uint64_t pow2_floor(uint64_t v)
{
	return v ? 1ull << (63 - __builtin_clzll(v)) : 0;
}

/* Where the rings start: past the detour slots, which follow the ring headers (so they sit in the
 * small pages of the region's first 2 MiB, where they can be mapped executable apart from the
 * rings). */
static uint64_t rings_off(const struct stub *s)
{
	return STUB_RINGS_OFF + detours_bytes(s->nr_detours);
}

static uint64_t rings_gpa(const struct stub *s)
{
	return s->reg.gpa + rings_off(s);
}

static uint64_t ringhdr_gpa(const struct stub *s, unsigned cpu)
{
	return s->reg.gpa + STUB_RINGHDR_OFF + (uint64_t)cpu * STUB_RINGHDR_SIZE;
}

static uint64_t stacks_off(const struct stub *s)
{
	uint64_t end = rings_off(s) + s->nr_cpus * s->ring_records * STUB_REC_SIZE;

	return (end + PAGE - 1) & ~(PAGE - 1);
}

static uint64_t agg_off(const struct stub *s)
{
	return stacks_off(s) + s->nr_stacks * STUB_STACK_SIZE;
}

uint64_t stub_agg_bytes(unsigned nr_cpus, uint64_t entries)
{
	return (uint64_t)nr_cpus * entries * STUB_AGG_SIZE;
}

static int put_header(struct stub *s, const struct stub_guest *g)
{
	uint64_t h[PAGE / 8];

	memset(h, 0, sizeof(h));
	h[H_MAGIC / 8] = STUB_MAGIC;
	h[H_NR_CPUS / 8] = s->nr_cpus;
	h[H_RING_MASK / 8] = s->ring_records - 1;
	h[H_CPU_GS_OFF / 8] = g->cpu_gs_off;
	h[H_AUX_MASK / 8] = g->cpu_aux_mask;
	h[H_CPUID / 8] = !g->cpu_aux_mask && g->cpu_cpuid;
	h[H_RINGS / 8] = s->reg.gva + rings_off(s);
	h[H_STACKS / 8] = s->reg.gva + stacks_off(s);
	h[H_STACKS_MASK / 8] = s->nr_stacks ? s->nr_stacks - 1 : 0;
	h[H_STACK_SHIFT / 8] = g->stack_shift;
	h[H_RET / 8] = s->ret;
	h[H_GRAPH / 8] = g->graph;
	h[H_WAIT_TSC / 8] = g->wait_tsc;
	h[H_MAX_DEPTH / 8] = s->max_depth;
	if (s->agg_entries) {
		h[H_AGG / 8] = s->reg.gva + agg_off(s);
		h[H_AGG_MASK / 8] = s->agg_entries - 1;
		/* ns = ticks * 10^6 / kHz, as (ticks * mult) >> 32 */
		h[H_NS_MULT / 8] = g->tsc_khz ? (1000000ull << 32) / g->tsc_khz : 1ull << 32;
		h[H_NS_SHIFT / 8] = 32;
	}
	if (g->task && g->task->valid && g->task->has_task_gs) {
		h[H_CUR_GS_ON / 8] = 1;
		h[H_CUR_GS_OFF / 8] = g->task->task_gs_off;
	}
	if (g->task && g->task->valid && g->task->has_preempt_gs) {
		h[H_PREEMPT_GS / 8] = g->task->preempt_gs_off;
		/* the profiler's short path: CPU-pinned by the preempt count, the CPU number from
		 * RDTSCP or %gs (not CPUID) */
		h[H_FAST / 8] = s->agg_entries && !h[H_CPUID / 8];
	}
	if (g->task && g->task->valid && g->task->comm_off) {
		h[H_PID_OFF / 8] = g->task->pid_off;
		h[H_COMM_OFF / 8] = g->task->comm_off;
	}
	for (unsigned c = 0; g->task && g->task->valid && c < s->nr_cpus && c < VMI_MAX_CPUS; c++)
		h[H_CUR_SLOTS / 8 + c] = g->task->current_slot[c];
	return s->tgt->ops->write_phys(s->tgt, s->reg.gpa + STUB_HDR_OFF, h, sizeof(h));
}

/* Zeroes guest-physical [gpa, gpa + len). */
static int zero_phys(struct target *tgt, uint64_t gpa, uint64_t len)
{
	static const uint8_t zero[PAGE];

	for (uint64_t off = 0; off < len; off += PAGE) {
		uint64_t n = len - off < PAGE ? len - off : PAGE;
		int ret = tgt->ops->write_phys(tgt, gpa + off, zero, n);

		if (ret < 0)
			return ret;
	}
	return 0;
}

bool stub_live_at(struct target *tgt, uint64_t gpa)
{
	uint64_t magic = 0;

	return tgt->ops->read_phys &&
	       tgt->ops->read_phys(tgt, gpa + STUB_HDR_OFF + H_MAGIC, &magic, 8) == 0 &&
	       magic == STUB_MAGIC;
}

uint64_t stub_ring_records_for(uint64_t want)
{
	uint64_t r = STUB_RING_RECORDS_MIN;

	if (!want)
		want = STUB_RING_RECORDS_DEFAULT;
	while (r < want && r < STUB_RING_RECORDS_MAX)
		r <<= 1;
	return r;
}

uint64_t stub_region_bytes(unsigned nr_cpus, uint64_t ring_records, uint64_t nr_stacks)
{
	uint64_t rings = STUB_RINGS_OFF + (uint64_t)nr_cpus * ring_records * STUB_REC_SIZE;

	return ((rings + PAGE - 1) & ~(PAGE - 1)) + nr_stacks * STUB_STACK_SIZE;
}

int stub_place(struct stub *s, struct target *tgt, unsigned nr_cpus, bool returns,
	       const struct stub_guest *g, uint64_t lo, uint64_t hi, char *err, size_t errlen)
{
	const struct stub_blob *b = stub_blob_of(target_arch(tgt)->elf_machine);
	uint64_t code = b ? (uint64_t)(b->end - b->start) : 0;
	uint64_t per_cpu = STUB_REC_SIZE * (uint64_t)nr_cpus;
	uint64_t records = stub_ring_records_for(g->max_records);
	uint64_t min_records = g->exact ? records : STUB_RING_RECORDS_MIN;
	uint64_t agg_entries = g->agg_entries ? stub_agg_entries_for(g->agg_entries) : 0;
	uint64_t agg_min = agg_entries ? STUB_AGG_ENTRIES_MIN : 0;
	uint64_t detours = detours_bytes(g->nr_detours);
	uint64_t min = stub_region_bytes(nr_cpus, min_records, returns ? STUB_STACKS_MIN : 0) +
		       detours + stub_agg_bytes(nr_cpus, agg_min);
	uint64_t want = stub_region_bytes(nr_cpus, records, returns ? STUB_STACKS_MAX : 0) +
			detours + stub_agg_bytes(nr_cpus, agg_entries);
	char why[160] = "";
	int ret;

	memset(s, 0, sizeof(*s));
	s->tgt = tgt;
	s->nr_cpus = nr_cpus;
	s->max_depth = g->max_depth < STUB_STACK_DEPTH ? g->max_depth : STUB_STACK_DEPTH;
	s->stack_shift = g->stack_shift;
	s->cpu_from = b && b->cpu_from_vmm ? "mpidr"
		      : g->cpu_aux_mask	   ? "rdtscp"
		      : g->cpu_cpuid	   ? "cpuid"
					   : "gs";
	s->blob = b;
	if (!b) {
		msg_fmt(err, errlen, "stub probes: hvtrace has no in-guest stub for %s guests",
			target_arch(tgt)->name);
		return -ENOTSUP;
	}
	if (!tgt->ops->stub_map || !tgt->ops->kernel_gpa) {
		msg_fmt(err, errlen, "the %s target cannot place stub probes", tgt->name);
		return -ENOTSUP;
	}
	if (g->nr_detours > STUB_DETOURS_MAX) {
		msg_fmt(err, errlen, "stub probes: %u functions at their entry (at most %u)",
			g->nr_detours, STUB_DETOURS_MAX);
		return -ENOTSUP;
	}
	if (nr_cpus > STUB_MAX_CPUS || code > STUB_CODE_SIZE) {
		msg_fmt(err, errlen, "stub probes: %u CPUs (at most %u)", nr_cpus, STUB_MAX_CPUS);
		return -ENOTSUP;
	}
	ret = tgt->ops->stub_map(tgt, lo, hi, min, want, &s->reg, why, sizeof(why));
	if (ret < 0) {
		/* one line: the size that did not fit, then where (the target's reason) */
		msg_fmt(err, errlen,
			"stub probes: rings of %" PRIu64 " KiB per CPU (%" PRIu64
			" KiB for %u CPUs with the stub) cannot be placed: %s",
			min_records * STUB_REC_SIZE >> 10, min >> 10, nr_cpus,
			strncmp(why, "stub probes: ", 13) ? why : why + 13);
		return ret;
	}
	if (s->reg.size < min || s->reg.size > want) {
		tgt->ops->stub_unmap(tgt, &s->reg);
		msg_fmt(err, errlen,
			"stub probes: the %s target placed %" PRIu64 " KiB (%" PRIu64 "-%" PRIu64
			" KiB asked)",
			tgt->name, s->reg.size >> 10, min >> 10, want >> 10);
		return -ERANGE;
	}
	/* The stub of an earlier hvtrace that died with its guardian keeps working there on its own
	 * (sites call it, return slots point into it): overwriting it would crash the guest. */
	if (stub_live_at(tgt, s->reg.gpa)) {
		tgt->ops->stub_unmap(tgt, &s->reg);
		msg_fmt(
		    err, errlen,
		    "stub probes: the stub of an earlier hvtrace is still live in this guest at "
		    "guest-physical 0x%" PRIx64
		    " (it was killed with its guardian); use --probe trap",
		    s->reg.gpa);
		return -EBUSY;
	}
	if (s->reg.size == want) {
		s->ring_records = records;
		s->nr_stacks = returns ? STUB_STACKS_MAX : 0;
		s->agg_entries = agg_entries;
	} else {
		/* less room than wanted: the counting tables get up to half of it, the rings what
		 * the shadow stacks leave, each a power of two, at least their minimum (the region
		 * holds min) */
		uint64_t room = s->reg.size - detours - stub_region_bytes(0, 0, 0) - PAGE;

		s->agg_entries = agg_min;
		while (agg_entries && s->agg_entries < agg_entries &&
		       stub_agg_bytes(nr_cpus, 2 * s->agg_entries) <= room / 2)
			s->agg_entries *= 2;
		room -= stub_agg_bytes(nr_cpus, s->agg_entries);

		if (returns) {
			s->nr_stacks = pow2_floor(room / 4 / STUB_STACK_SIZE);
			if (s->nr_stacks > STUB_STACKS_MAX)
				s->nr_stacks = STUB_STACKS_MAX;
			if (s->nr_stacks < STUB_STACKS_MIN)
				s->nr_stacks = STUB_STACKS_MIN;
			room -= s->nr_stacks * STUB_STACK_SIZE;
		}
		s->ring_records = pow2_floor(room / per_cpu);
		if (s->ring_records > records)
			s->ring_records = records;
		if (s->ring_records < min_records)
			s->ring_records = min_records;
		if (stub_region_bytes(nr_cpus, s->ring_records, s->nr_stacks) + detours +
			stub_agg_bytes(nr_cpus, s->agg_entries) >
		    s->reg.size) {
			s->nr_stacks = returns ? STUB_STACKS_MIN : 0;
			s->ring_records = min_records;
			s->agg_entries = agg_min;
		}
	}
	s->code_gva = s->reg.code_gva ? s->reg.code_gva : s->reg.gva;
	for (unsigned i = 0; i < 16; i++)
		if (b->entry[i])
			s->entry[i] = s->code_gva + (uint64_t)(b->entry[i] - b->start);
	for (unsigned i = 0; i < 8; i++)
		if (b->agg[i])
			s->agg[i] = s->code_gva + (uint64_t)(b->agg[i] - b->start);
	s->ret = s->code_gva + (uint64_t)(b->ret - b->start);
	s->nr_detours = g->nr_detours;
	s->detour_off = STUB_RINGS_OFF;
	s->detour_gva = s->reg.gva + s->detour_off;
	s->detour_gpa = s->reg.gpa + s->detour_off;
	/* a code block of its own (arm64: the region is never executable): the slots follow the
	 * code's page there, read-only and executable as it is (written by physical address) */
	if (s->reg.code_gva) {
		if (detours > STUB_CODE_DELTA - STUB_CODE_SIZE) {
			tgt->ops->stub_unmap(tgt, &s->reg);
			msg_fmt(err, errlen,
				"stub probes: %u functions at their entry (at most %llu here)",
				g->nr_detours,
				(unsigned long long)((STUB_CODE_DELTA - STUB_CODE_SIZE) / STUB_DETOUR_SIZE));
			return -ENOTSUP;
		}
		s->detour_gva = s->reg.code_gva + STUB_CODE_SIZE;
		s->detour_gpa = s->reg.code_gpa + STUB_CODE_SIZE;
	}
	ret = zero_phys(tgt, s->reg.gpa, agg_off(s) + stub_agg_bytes(nr_cpus, s->agg_entries));
	if (ret == 0)
		ret = tgt->ops->write_phys(tgt,
					   s->reg.code_gpa ? s->reg.code_gpa
							   : s->reg.gpa + STUB_CODE_OFF,
					   b->start, code);
	if (ret == 0)
		ret = put_header(s, g);
	/* no page both writable and executable (the kernel's W+X check, and plain hygiene): the
	 * mapping as it was when the target cannot, which changes nothing for the stub */
	if (ret == 0 && tgt->ops->stub_protect)
		tgt->ops->stub_protect(tgt, &s->reg, s->detour_off, detours);
	if (ret < 0) {
		tgt->ops->stub_unmap(tgt, &s->reg);
		msg_fmt(err, errlen, "stub region at guest-physical 0x%" PRIx64 ": cannot write it",
			s->reg.gpa);
		return ret;
	}
	s->placed = true;
	return 0;
}

int stub_patch(struct stub *s, uint64_t site, uint64_t gpa, const uint8_t *nop, bool hook,
	       bool args, bool root)
{
	const struct arch *a = target_arch(s->tgt);
	unsigned which = (hook || root) | args << 1 | root << 2;
	uint8_t call[ARCH_PATCH_MAX];

	if (!a->is_site_nop(nop))
		return -EILSEQ;
	if (!s->entry[which])
		return -EOPNOTSUPP;
	if (a->encode_branch(site, s->entry[which], true, call) < 0)
		return -ERANGE;
	return s->tgt->ops->write_text(s->tgt, gpa, nop, call, a->site_len);
}

int stub_patch_agg(struct stub *s, uint64_t site, uint64_t gpa, const uint8_t *nop, unsigned mode)
{
	const struct arch *a = target_arch(s->tgt);
	uint8_t call[ARCH_PATCH_MAX];

	if (mode >= 8 || !s->agg[mode] || !s->agg_entries)
		return -EINVAL;
	if (!a->is_site_nop(nop))
		return -EILSEQ;
	if (a->encode_branch(site, s->agg[mode], true, call) < 0)
		return -ERANGE;
	return s->tgt->ops->write_text(s->tgt, gpa, nop, call, a->site_len);
}

uint64_t stub_agg_entries_for(uint64_t want)
{
	uint64_t r = STUB_AGG_ENTRIES_MIN;

	while (r < want && r < STUB_AGG_ENTRIES_MAX)
		r <<= 1;
	return r;
}

int stub_agg_read(struct stub *s, unsigned cpu, uint64_t first, struct stub_agg_ent *buf,
		  uint64_t n)
{
	uint64_t off = agg_off(s) + ((uint64_t)cpu * s->agg_entries + first) * STUB_AGG_SIZE;

	if (!s->placed || cpu >= s->nr_cpus || first > s->agg_entries || n > s->agg_entries - first)
		return -EINVAL;
	return s->tgt->ops->read_phys(s->tgt, s->reg.gpa + off, buf, n * STUB_AGG_SIZE);
}

int stub_agg_dropped(struct stub *s, unsigned cpu, uint64_t *out)
{
	if (!s->placed || cpu >= s->nr_cpus)
		return -EINVAL;
	return s->tgt->ops->read_phys(s->tgt, ringhdr_gpa(s, cpu) + RH_AGG_DROP, out, 8);
}

/* Whether @b (site_len bytes), at @site, is a call into one of the stub's entry routines. */
static bool calls_stub(const struct stub *s, uint64_t site, const uint8_t *b)
{
	const struct arch *a = target_arch(s->tgt);
	uint64_t to;

	if (a->direct_branch(b, a->site_len, site, false, &to) != a->site_len)
		return false;
	for (unsigned k = 0; k < sizeof(s->entry) / sizeof(s->entry[0]); k++)
		if (s->entry[k] && to == s->entry[k])
			return true;
	for (unsigned k = 0; k < sizeof(s->agg) / sizeof(s->agg[0]); k++)
		if (s->agg[k] && to == s->agg[k])
			return true;
	return false;
}

bool stub_may_call(struct stub *s, uint64_t site, uint64_t gpa)
{
	uint8_t now[ARCH_PATCH_MAX];

	return s->tgt->ops->read_phys(s->tgt, gpa, now, target_arch(s->tgt)->site_len) < 0 ||
	       calls_stub(s, site, now);
}

int stub_unpatch(struct stub *s, uint64_t site, uint64_t gpa, const uint8_t *nop)
{
	size_t n = target_arch(s->tgt)->site_len;
	uint8_t now[ARCH_PATCH_MAX];

	if (s->tgt->ops->read_phys(s->tgt, gpa, now, n) < 0)
		return -EFAULT;
	if (!calls_stub(s, site, now))
		return -ESTALE;
	return s->tgt->ops->write_text(s->tgt, gpa, now, nop, n);
}

bool stub_owns_rip(const struct stub *s, uint64_t rip)
{
	uint64_t d = s->detour_gva;

	return s->placed && ((rip >= s->code_gva && rip < s->code_gva + STUB_CODE_SIZE) ||
			     (rip >= d && rip - d < (uint64_t)s->nr_detours * STUB_DETOUR_SIZE));
}

static bool at_offsets(uint64_t rip, uint64_t base, const uint8_t *off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rip == base + off[i])
			return true;
	return false;
}

bool stub_interruptible_at(const struct stub *s, uint64_t rip)
{
	uint64_t d = s->detour_gva;

	if (!s->placed)
		return false;
	const struct stub_blob *b = s->blob;

	if (rip >= d && rip - d < (uint64_t)s->nr_detours * STUB_DETOUR_SIZE) {
		uint64_t off = (rip - d) % STUB_DETOUR_SIZE;

		if (!b)
			return off == 0;
		for (unsigned k = 0; k < b->nr_slot_irq_on; k++)
			if (off == b->slot_irq_on[k])
				return true;
		return false;
	}
	if (!b)
		return false;
	if (at_offsets(rip, s->ret, b->ret_irq_on, b->nr_ret_irq_on))
		return true;
	if (b->irq_lo && rip >= s->code_gva + (uint64_t)(b->irq_lo - b->start) &&
	    rip < s->code_gva + (uint64_t)(b->irq_hi - b->start))
		return true;
	for (unsigned k = 0; k < b->nr_irq_at; k++)
		if (rip == s->code_gva + (uint64_t)(b->irq_at[k] - b->start))
			return true;
	for (unsigned k = 0; k < sizeof(s->entry) / sizeof(s->entry[0]); k++)
		if (s->entry[k] &&
		    at_offsets(rip, s->entry[k], b->entry_irq_on, b->nr_entry_irq_on))
			return true;
	for (unsigned k = 0; k < sizeof(s->agg) / sizeof(s->agg[0]); k++)
		if (s->agg[k] && at_offsets(rip, s->agg[k], b->entry_irq_on, b->nr_entry_irq_on))
			return true;
	return false;
}

/* ---- detours --------------------------------------------------------------------------------- */

uint64_t stub_detour_gva(const struct stub *s, unsigned idx)
{
	return s->detour_gva + (uint64_t)idx * STUB_DETOUR_SIZE;
}

long stub_detour_index(const struct stub *s, uint64_t ip)
{
	uint64_t off = ip - s->detour_gva;

	if (!s->nr_detours || off % STUB_DETOUR_SIZE ||
	    off / STUB_DETOUR_SIZE >= s->nr_detours)
		return -1;
	return (long)(off / STUB_DETOUR_SIZE);
}

int stub_detour_write(struct stub *s, unsigned idx, const struct arch_reloc_plan *plan, bool hook,
		      bool args, bool root, char *why, size_t whylen)
{
	const struct arch *a = target_arch(s->tgt);
	const struct arch_detour_slot slot = {.size = STUB_DETOUR_SIZE,
					      .sti_off = DT_STI,
					      .nosti_off = DT_NOSTI,
					      .scratch = STUB_DETOUR_SCRATCH,
					      .idx = idx};
	unsigned which = 8 | (hook || root) | args << 1 | root << 2;
	uint64_t at = stub_detour_gva(s, idx),
		 gpa = s->detour_gpa + (uint64_t)idx * STUB_DETOUR_SIZE;
	uint8_t code[STUB_DETOUR_SIZE], now[16];
	size_t len = 0;
	int ret;

	if (s->reg.text_guarded) {
		msg_fmt(why, whylen,
			"the kernel's text is BTI-guarded (GP): a B over its first word would fault "
			"on an indirect call (use --probe trap)");
		return -ENOTSUP;
	}
	if (idx >= s->nr_detours || a->encode_branch(at, s->entry[which], true, now) < 0) {
		msg_fmt(why, whylen, "no detour slot %u within reach of the stub", idx);
		return -ERANGE;
	}
	ret = a->detour_code(plan, &slot, at, s->entry[which], code, &len, why, whylen);
	if (ret < 0)
		return ret;
	/* in pieces of 16 bytes (QEMU's text writes), each over what is there now */
	for (size_t off = 0; off < len; off += sizeof(now)) {
		size_t n = len - off < sizeof(now) ? len - off : sizeof(now);

		ret = s->tgt->ops->read_phys(s->tgt, gpa + off, now, n);
		if (ret == 0)
			ret = s->tgt->ops->write_text(s->tgt, gpa + off, now, code + off, n);
		if (ret < 0) {
			msg_fmt(why, whylen,
				"cannot write detour slot %u at guest-physical 0x%" PRIx64, idx,
				gpa + off);
			return ret;
		}
	}
	return 0;
}

/* The jump at @site into detour slot @idx (jmp_len bytes): 0, or -ERANGE when out of reach. */
static int detour_jmp(const struct stub *s, unsigned idx, uint64_t site, uint8_t *jmp)
{
	return target_arch(s->tgt)->encode_branch(site, stub_detour_gva(s, idx), false, jmp);
}

int stub_detour_patch(struct stub *s, unsigned idx, uint64_t site, uint64_t gpa,
		      const uint8_t *orig)
{
	uint8_t jmp[ARCH_PATCH_MAX];

	if (idx >= s->nr_detours || detour_jmp(s, idx, site, jmp) < 0)
		return -ERANGE;
	return s->tgt->ops->write_text(s->tgt, gpa, orig, jmp, target_arch(s->tgt)->jmp_len);
}

bool stub_detour_may_jump(struct stub *s, unsigned idx, uint64_t site, uint64_t gpa)
{
	size_t n = target_arch(s->tgt)->jmp_len;
	uint8_t now[ARCH_PATCH_MAX], jmp[ARCH_PATCH_MAX];

	return s->tgt->ops->read_phys(s->tgt, gpa, now, n) < 0 ||
	       (detour_jmp(s, idx, site, jmp) == 0 && !memcmp(now, jmp, n));
}

int stub_detour_unpatch(struct stub *s, unsigned idx, uint64_t site, uint64_t gpa,
			const uint8_t *orig)
{
	size_t n = target_arch(s->tgt)->jmp_len;
	uint8_t now[ARCH_PATCH_MAX], jmp[ARCH_PATCH_MAX];

	if (s->tgt->ops->read_phys(s->tgt, gpa, now, n) < 0)
		return -EFAULT;
	if (detour_jmp(s, idx, site, jmp) < 0 || memcmp(now, jmp, n))
		return -ESTALE;
	return s->tgt->ops->write_text(s->tgt, gpa, now, orig, n);
}

/* The address a return through @slot resumes at: the oldest frame's saved address for that slot
 * that is not the return routine (tail calls stack several frames on one slot). */
static uint64_t resolve(const struct stub *s, const struct stub_frame *f, uint64_t nr,
			uint64_t slot)
{
	for (uint64_t i = 0; i < nr; i++)
		if (f[i].slot == slot && f[i].orig != s->ret)
			return f[i].orig;
	return 0;
}

/* Whether guest stack slot @slot (8-byte aligned) holds @want, read at its guest-physical address
 * through the page tables captured at attach (never a vCPU's current CR3); *@gpa says where. */
static bool slot_holds(struct stub *s, uint64_t slot, uint64_t want, uint64_t *gpa)
{
	struct target *tgt = s->tgt;
	uint64_t cur;

	return !(slot & 7) && tgt->ops->kernel_gpa(tgt, slot, gpa) == 0 &&
	       tgt->ops->read_phys(tgt, *gpa, &cur, 8) == 0 && cur == want;
}

int stub_restore_slots(struct stub *s, bool clear)
{
	struct target *tgt = s->tgt;
	uint64_t base = s->reg.gpa + stacks_off(s);
	int first = 0;
	uint8_t *buf;

	if (!s->placed || !s->nr_stacks)
		return 0;
	/* a return hooked in a register was signed into the guest's frame by the function itself:
	 * nothing in the guest's memory is the host's to write back (stub_hooked_frames says what is
	 * still out) */
	if (s->blob && s->blob->ret_in_register)
		return 0;
	buf = malloc(STUB_STACK_SIZE);
	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 0; i < s->nr_stacks; i++) {
		uint64_t gpa = base + i * STUB_STACK_SIZE, key, nr;
		const struct stub_frame *f = (const struct stub_frame *)(buf + S_E);

		if (tgt->ops->read_phys(tgt, gpa, buf, STUB_STACK_SIZE) < 0) {
			first = first ? first : -EFAULT;
			continue;
		}
		memcpy(&key, buf + S_KEY, 8);
		memcpy(&nr, buf + S_NR, 8);
		if (!key)
			continue;
		/* the guest may have written anything here: at most the frames the layout has room
		 * for, each written back only into a slot of the guest stack this shadow stack
		 * belongs to that still holds the return routine's address */
		if (nr > STUB_STACK_DEPTH)
			nr = STUB_STACK_DEPTH;
		/* every frame whose slot still points at the return routine is a return handed back
		 * (a tail call has several on one slot): which ones, before writing any */
		bool hooked[STUB_STACK_DEPTH];
		uint64_t slot_gpa[STUB_STACK_DEPTH];

		for (uint64_t k = 0; k < nr; k++)
			hooked[k] = (f[k].slot >> s->stack_shift) + 1 == key &&
				    slot_holds(s, f[k].slot, s->ret, &slot_gpa[k]) &&
				    resolve(s, f, nr, f[k].slot);
		for (uint64_t k = 0; k < nr; k++) {
			uint64_t orig = resolve(s, f, nr, f[k].slot);

			if (!hooked[k])
				continue;
			if (tgt->ops->write_phys(tgt, slot_gpa[k], &orig, 8) == 0)
				s->restored_slots++;
			else
				first = first ? first : -EFAULT;
		}
		if (clear && zero_phys(tgt, gpa, S_E) < 0)
			first = first ? first : -EFAULT;
	}
	free(buf);
	return first;
}

long stub_hooked_frames(struct stub *s)
{
	uint64_t base = s->reg.gpa + stacks_off(s);
	long n = 0;

	for (uint64_t i = 0; s->placed && i < s->nr_stacks; i++) {
		uint64_t h[3];

		if (s->tgt->ops->read_phys(s->tgt, base + i * STUB_STACK_SIZE, h, sizeof(h)) < 0)
			return -EFAULT;
		if (h[S_KEY / 8])
			n += h[S_NR / 8] > STUB_STACK_DEPTH ? STUB_STACK_DEPTH : (long)h[S_NR / 8];
	}
	return n;
}

void stub_unplace(struct stub *s)
{
	if (!s->placed)
		return;
	s->tgt->ops->stub_unmap(s->tgt, &s->reg);
	s->placed = false;
}

/* Reads up to @max records of CPU @cpu from index @idx on, as far as the guest says it has
 * reserved but at most one ring's worth from the host's own tail, into @buf. Returns how many (0 if
 * none or unreadable). */
static unsigned read_window(struct stub *s, unsigned cpu, uint64_t idx, struct stub_rec *buf,
			    unsigned max)
{
	uint64_t pos = idx & (s->ring_records - 1), h[5], n, first, done = idx - s->tail[cpu];
	uint64_t base = rings_gpa(s) + cpu * s->ring_records * STUB_REC_SIZE;

	if (s->tgt->ops->read_phys(s->tgt, ringhdr_gpa(s, cpu), h, sizeof(h)) < 0)
		return 0;
	s->lost[cpu] = h[RH_LOST / 8];
	s->head[cpu] = h[RH_HEAD / 8];
	s->gave_up[cpu] = h[RH_GAVE_UP / 8];
	s->waits[cpu] = h[RH_WAITS / 8];
	n = h[RH_HEAD / 8] - s->tail[cpu];
	if (n > s->ring_records)
		n = s->ring_records;
	n = n > done ? n - done : 0;
	if (n > max)
		n = max;
	if (!n)
		return 0;
	/* up to the end of the ring, then on from its start */
	first = s->ring_records - pos < n ? s->ring_records - pos : n;
	if (s->tgt->ops->read_phys(s->tgt, base + pos * STUB_REC_SIZE, buf, first * STUB_REC_SIZE) <
		0 ||
	    (n > first &&
	     s->tgt->ops->read_phys(s->tgt, base, buf + first, (n - first) * STUB_REC_SIZE) < 0))
		return 0;
	return (unsigned)n;
}

unsigned stub_read(struct stub *s, unsigned cpu, struct stub_rec *buf, unsigned max)
{
	uint64_t idx = s->tail[cpu];
	unsigned n = read_window(s, cpu, idx, buf, max), k = 0;

	while (k < n && buf[k].seq == (uint32_t)(idx + k + 1))
		k++;
	return k;
}

unsigned stub_skip_uncommitted(struct stub *s, unsigned cpu, struct stub_rec *buf, unsigned max)
{
	uint64_t idx = s->tail[cpu];
	unsigned n;

	while ((n = read_window(s, cpu, idx, buf, max)) > 0) {
		for (unsigned k = 0; k < n; k++, idx++)
			if (buf[k].seq == (uint32_t)(idx + 1)) {
				unsigned gap = (unsigned)(idx - s->tail[cpu]);

				if (gap && stub_consume(s, cpu, gap) < 0)
					return 0;
				return gap;
			}
	}
	return 0;
}

uint64_t stub_backlog(const struct stub *s, unsigned cpu)
{
	uint64_t n = s->head[cpu] - s->tail[cpu];

	return n > s->ring_records ? s->ring_records : n;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

uint64_t stub_guest_waits(const struct stub *s)
{
	uint64_t n = 0;

	for (unsigned c = 0; c < s->nr_cpus && c < STUB_MAX_CPUS; c++)
		n = sat_add(n, s->waits[c]);
	return n;
}

int stub_consume(struct stub *s, unsigned cpu, unsigned n)
{
	static const uint64_t zero;
	int ret;

	s->tail[cpu] += n;
	ret = s->tgt->ops->write_phys(s->tgt, ringhdr_gpa(s, cpu) + RH_TAIL, &s->tail[cpu], 8);
	if (ret == 0 && s->gave_up[cpu]) {
		/* the host is here again: the stub may wait for room on this ring again */
		ret = s->tgt->ops->write_phys(s->tgt, ringhdr_gpa(s, cpu) + RH_GAVE_UP, &zero, 8);
		s->gave_up[cpu] = 0;
		s->wait_timeouts++;
	}
	return ret;
}

void stub_counters(struct stub *s, struct stub_counters *out)
{
	uint64_t h[3];

	memset(out, 0, sizeof(*out));
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		if (s->placed &&
		    s->tgt->ops->read_phys(s->tgt, ringhdr_gpa(s, c), h, sizeof(h)) == 0)
			s->lost[c] = h[RH_LOST / 8];
		out->lost = sat_add(out->lost, s->lost[c]);
	}
	if (s->placed &&
	    s->tgt->ops->read_phys(s->tgt, s->reg.gpa + STUB_HDR_OFF + H_BAD_CPU, h, 16) == 0) {
		s->bad_cpu = h[0];
		s->no_stack = h[1];
	}
	out->bad_cpu = s->bad_cpu;
	out->no_stack = s->no_stack;
}
