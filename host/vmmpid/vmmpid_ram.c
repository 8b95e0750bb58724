#include "host/vmmpid/vmmpid_ram.h"
#include "host/util/msg_fmt.h"
#include "vmi/vmi_linux_e820.h"
#include "arch/arch.h"
#include "arch/arch_tlb.h"

#include <errno.h>
#include <string.h>

#define PTE_P	     (1ull << 0)
#define PTE_PS	     (1ull << 7)
#define E820_ACPI    3
#define E820_NVS     4
#define EFER_LMA     (1ull << 10)
#define CR4_LA57     (1ull << 12)
#define PTI_USER_BIT 0x1000ull /* PTI: the user PGD is the kernel PGD + 4 KiB */
#define KERNEL_HALF  0xffff800000000000ull

bool vmmpid_ram_pml4_plausible(const uint64_t pml4[512], uint64_t limit)
{
	unsigned kernel = 0;

	for (unsigned i = 0; i < 512; i++) {
		uint64_t e = pml4[i];

		if (!(e & PTE_P))
			continue;
		if (e & PTE_PS)
			return false; /* no large page at the root */
		if (i < 256)
			continue; /* user half: the process's, anything */
		if ((e & VMMPID_CR3_ADDR) >= limit)
			return false;
		kernel++;
	}
	return kernel > 0;
}

void vmmpid_ram_boot_map(const struct kvm_proc_ram *c, struct proc_mem_region *out)
{
	out->gpa = 0;
	out->len = c->len < VMMPID_RAM_LOW_MAX ? c->len : VMMPID_RAM_LOW_MAX;
	out->hva = c->hva;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int vmmpid_ram_layout(const uint8_t *e820, size_t len, const struct kvm_proc_ram *cand, unsigned nr,
		      unsigned boot, struct proc_mem_region *out, unsigned *nr_out, char *err,
		      size_t errlen)
{
	uint64_t low_need = 0, high_end = 0, high, low_have, L;
	size_t n;

	*nr_out = 0;
	if (boot >= nr || len < 4) {
		msg_fmt(err, errlen, "no E820 table to place the guest's RAM by");
		return -EINVAL;
	}
	n = get32(e820);
	if (n > (len - 4) / VMI_E820_ENTRY_SIZE)
		n = (len - 4) / VMI_E820_ENTRY_SIZE;
	if (n > VMI_E820_MAX)
		n = VMI_E820_MAX;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *e = e820 + 4 + i * VMI_E820_ENTRY_SIZE;
		uint64_t a = get64(e), sz = get64(e + 8), end = a + sz;
		uint32_t type = get32(e + 16);

		if (!sz || end < a || end > (1ull << 52))
			continue; /* empty, wrapping or past any guest-physical address: not RAM */
		if (type != VMI_E820_RAM && type != E820_ACPI && type != E820_NVS)
			continue;
		if (a >= VMMPID_RAM_LOW_MAX) {
			if (end > high_end)
				high_end = end;
		} else if (type == VMI_E820_RAM && end > low_need) {
			low_need = end;
		}
	}
	if (low_need > VMMPID_RAM_LOW_MAX) {
		msg_fmt(err, errlen,
			"the kernel's E820 table has RAM across the 4 GiB boundary (to 0x%llx)",
			(unsigned long long)low_need);
		return -EINVAL;
	}
	high = high_end ? ((high_end - VMMPID_RAM_LOW_MAX + 0xfff) & ~0xfffull) : 0;
	L = cand[boot].len;
	low_have = L < VMMPID_RAM_LOW_MAX ? L : VMMPID_RAM_LOW_MAX;
	if (!high) {
		if (low_need > low_have)
			goto short_low;
		out[0] = (struct proc_mem_region){0, low_have, cand[boot].hva};
		*nr_out = 1;
		return 0;
	}
	/* one mapping for all RAM: the part below 4 GiB, then the rest */
	if (L > high && L - high >= low_need && L - high <= VMMPID_RAM_LOW_MAX) {
		out[0] = (struct proc_mem_region){0, L - high, cand[boot].hva};
		out[1] =
		    (struct proc_mem_region){VMMPID_RAM_LOW_MAX, high, cand[boot].hva + L - high};
		*nr_out = 2;
		return 0;
	}
	/* a mapping per range: another candidate of exactly the high part's size */
	if (low_need > low_have)
		goto short_low;
	for (unsigned j = 0; j < nr; j++) {
		if (j == boot || cand[j].len != high)
			continue;
		out[0] = (struct proc_mem_region){0, low_have, cand[boot].hva};
		out[1] = (struct proc_mem_region){VMMPID_RAM_LOW_MAX, high, cand[j].hva};
		*nr_out = 2;
		return 0;
	}
	msg_fmt(err, errlen,
		"the kernel's E820 table has 0x%llx bytes of RAM above 4 GiB, and neither the "
		"mapping that holds guest-physical 0 (0x%llx bytes) nor another of the VMM's "
		"mappings holds them",
		(unsigned long long)high, (unsigned long long)L);
	return -EINVAL;
short_low:
	msg_fmt(err, errlen,
		"the kernel's E820 table has RAM up to 0x%llx, past the mapping that holds "
		"guest-physical 0 (0x%llx bytes)",
		(unsigned long long)low_need, (unsigned long long)L);
	return -EINVAL;
}

/* One hypothesis: guest-physical [0, map.len) at map.hva in the VMM, walked from @root. */
struct hyp {
	struct proc_mem_region map;
	vmmpid_host_read_fn host_read;
	void *hctx;
	uint64_t root;
	unsigned mode;
};

static int hyp_phys(void *ctx, uint64_t gpa, void *buf, size_t len, bool write)
{
	const struct hyp *h = ctx;

	if (write || gpa >= h->map.len || len > h->map.len - gpa)
		return -EFAULT;
	return h->host_read(h->hctx, h->map.hva + gpa, buf, len) < 0 ? -EFAULT : 0;
}

static int hyp_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	return hyp_phys(ctx, gpa, pte, 8, false);
}

static int hyp_translate(void *ctx, uint64_t gva, uint64_t *gpa)
{
	const struct hyp *h = ctx;
	const struct arch *a = arch_get(ARCH_X86_64);
	int ret;

	if (gva < KERNEL_HALF)
		return -EFAULT; /* the kernel's half only: a user mapping proves nothing */
	ret = a->translate(hyp_pte, ctx, h->root, h->mode, gva, gpa);
	if (ret < 0 && (h->root & PTI_USER_BIT))
		ret = a->translate(hyp_pte, ctx, h->root & ~PTI_USER_BIT, h->mode, gva, gpa);
	return ret;
}

static int hyp_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	return arch_copy_virt(gva, buf, len, false, hyp_translate, hyp_phys, ctx);
}

int vmmpid_ram_prove(const struct kvm_proc_ram *cand, unsigned nr, const struct vmmpid_ram_cpu *cpu,
		     unsigned nr_cpus, vmmpid_host_read_fn host_read, void *hctx,
		     vmmpid_find_kernel_fn find, void *fctx, struct vmmpid_ram_proof *out,
		     char *err, size_t errlen)
{
	char why[320];

	msg_fmt(err, errlen, nr ? "no vCPU in long mode" : "no RAM candidate among its mappings");
	for (unsigned c = 0; c < nr; c++) {
		struct hyp h = {.host_read = host_read, .hctx = hctx};
		bool plausible = false, said = false;

		vmmpid_ram_boot_map(&cand[c], &h.map);
		for (unsigned i = 0; i < nr_cpus; i++) {
			uint64_t root = cpu[i].cr3 & VMMPID_CR3_ADDR, pml4[512];
			bool seen = false;

			if (!(cpu[i].efer & EFER_LMA))
				continue;
			for (unsigned k = 0; k < i; k++)
				seen |= (cpu[k].cr3 & VMMPID_CR3_ADDR) == root;
			if (seen)
				continue;
			if (hyp_phys(&h, root, pml4, sizeof(pml4), false) < 0 ||
			    !vmmpid_ram_pml4_plausible(pml4, h.map.len)) {
				if (!plausible && !said)
					said = true, msg_fmt(err, errlen,
							     "the mapping at 0x%llx (0x%llx bytes) "
							     "holds no page-table "
							     "root at vCPU %u's CR3 0x%llx",
							     (unsigned long long)cand[c].hva,
							     (unsigned long long)cand[c].len, i,
							     (unsigned long long)cpu[i].cr3);
				continue;
			}
			plausible = true;
			h.root = root;
			h.mode = (cpu[i].cr4 & CR4_LA57) ? 1 : 0;
			if (find(fctx, hyp_read, &h, why, sizeof(why)) == 0) {
				*out = (struct vmmpid_ram_proof){c, i, h.mode, root};
				return 0;
			}
			msg_fmt(err, errlen,
				"vCPU %u's page tables (CR3 0x%llx) in the mapping at 0x%llx lead "
				"to no "
				"kernel: %s",
				i, (unsigned long long)cpu[i].cr3, (unsigned long long)cand[c].hva,
				why);
		}
	}
	return -ENOENT;
}
