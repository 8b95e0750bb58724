#include "host/kvm/linux_boot.h"
#include "host/tracedat/le_bytes.h"
#include "host/util/msg_fmt.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

unsigned lboot_e820(uint64_t ram_size, uint64_t reserved_gpa, struct e820_entry *e, unsigned max)
{
	struct e820_entry all[] = {
		{0, LB_LOWMEM_END, E820_RAM},
		{LB_LOWMEM_END, LB_HIGH_GPA - LB_LOWMEM_END, E820_RESERVED},
		{LB_HIGH_GPA, reserved_gpa - LB_HIGH_GPA, E820_RAM},
		{reserved_gpa, ram_size - reserved_gpa, E820_RESERVED},
	};
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]) && n < max; i++)
		if (all[i].size && all[i].addr + all[i].size > all[i].addr)
			e[n++] = all[i];
	return n;
}

int lboot_load_elf(uint8_t *ram, uint64_t limit, const uint8_t *elf, size_t len, uint64_t *entry,
		   uint64_t *end, char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	uint64_t top = 0;

	if (len < sizeof(eh)) {
		msg_fmt(err, errlen, "decompressed kernel: %zu bytes, too short for an ELF header",
			len);
		return -EINVAL;
	}
	memcpy(&eh, elf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr)) {
		msg_fmt(err, errlen, "decompressed kernel: not an x86-64 ELF64 image");
		return -EINVAL;
	}
	if (eh.e_phoff > len || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff) {
		msg_fmt(err, errlen,
			"decompressed kernel: program headers at 0x%" PRIx64
			" (%u) outside the image",
			(uint64_t)eh.e_phoff, eh.e_phnum);
		return -EINVAL;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;

			memcpy(&ph, elf + eh.e_phoff + i * sizeof(ph), sizeof(ph));
			if (ph.p_type != PT_LOAD)
				continue;
			if (!pass) {
				if (ph.p_filesz > ph.p_memsz || ph.p_offset > len ||
				    ph.p_filesz > len - ph.p_offset) {
					msg_fmt(err, errlen,
						"decompressed kernel: segment %u (offset 0x%" PRIx64
						"+0x%" PRIx64 ") outside the image",
						i, (uint64_t)ph.p_offset, (uint64_t)ph.p_filesz);
					return -EINVAL;
				}
				if (ph.p_paddr < LB_HIGH_GPA || ph.p_paddr > limit ||
				    ph.p_memsz > limit - ph.p_paddr) {
					msg_fmt(err, errlen,
						"kernel segment %u at 0x%" PRIx64 "+0x%" PRIx64
						" does not fit in guest RAM between 1 MiB and "
						"0x%" PRIx64 " (raise --mem)",
						i, (uint64_t)ph.p_paddr, (uint64_t)ph.p_memsz,
						limit);
					return -ERANGE;
				}
				if (ph.p_paddr + ph.p_memsz > top)
					top = ph.p_paddr + ph.p_memsz;
				continue;
			}
			memcpy(ram + ph.p_paddr, elf + ph.p_offset, ph.p_filesz);
			memset(ram + ph.p_paddr + ph.p_filesz, 0, ph.p_memsz - ph.p_filesz);
		}
		if (!pass && !top) {
			msg_fmt(err, errlen, "decompressed kernel: no loadable segment");
			return -EINVAL;
		}
	}
	*entry = eh.e_entry;
	*end = top;
	return 0;
}

void lboot_zero_page(uint8_t zp[4096], const struct lboot_params *p)
{
	const struct bzimage *bz = p->bz;
	uint8_t *hdr = zp + BZ_HDR_OFFSET;
	unsigned n = p->nr_e820 < E820_MAX ? p->nr_e820 : E820_MAX;

	memset(zp, 0, 4096);
	memcpy(hdr, bz->hdr, bz->hdr_len);
	zp[0x210] = 0xff;		     /* type_of_loader: undefined */
	zp[0x211] = (zp[0x211] | 0x01) & ~0x02; /* loadflags: LOADED_HIGH, no KASLR_FLAG */
	le_put32(zp + 0x228, (uint32_t)p->cmdline_gpa);
	le_put32(zp + 0x0c8, (uint32_t)(p->cmdline_gpa >> 32));
	le_put32(zp + 0x218, (uint32_t)p->initrd_gpa);
	le_put32(zp + 0x21c, (uint32_t)p->initrd_size);
	le_put32(zp + 0x0c0, (uint32_t)(p->initrd_gpa >> 32));
	le_put32(zp + 0x0c4, (uint32_t)(p->initrd_size >> 32));
	le_put64(zp + 0x070, p->rsdp_gpa); /* boot_params.acpi_rsdp_addr: no scan of the BIOS area */
	zp[0x1e8] = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *e = zp + 0x2d0 + i * 20;

		le_put64(e, p->e820[i].addr);
		le_put64(e + 8, p->e820[i].size);
		le_put32(e + 16, p->e820[i].type);
	}
}

void lboot_gdt(uint64_t gdt[LB_GDT_ENTRIES])
{
	gdt[0] = 0;
	gdt[1] = 0;
	gdt[2] = 0x00af9b000000ffffull; /* 64-bit code, accessed */
	gdt[3] = 0x00cf93000000ffffull; /* data, accessed */
}

bool lboot_reboots_by_triple_fault(const char *cmdline)
{
	char type = 0;

	for (const char *p = cmdline; p && (p = strstr(p, "reboot=")); p += 7) {
		if (p != cmdline && p[-1] != ' ')
			continue; /* part of another parameter's name or value */
		for (const char *o = p + 7; *o && *o != ' ';) {
			if (strchr("baktep", *o))
				type = *o;
			o += strcspn(o, ", ");
			if (*o == ',')
				o++;
		}
	}
	return type == 't';
}
