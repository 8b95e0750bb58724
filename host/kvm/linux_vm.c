#include "host/kvm/linux_vm.h"
#include "host/kvm/acpi.h"
#include "host/kvm/bzimage.h"
#include "host/kvm/linux_boot.h"
#include "arch/arch.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

/* vCPU 0 at @entry in long mode per the 64-bit boot protocol: __BOOT_CS/__BOOT_DS of the boot GDT,
 * the VMM's identity map, interrupts off, RSI = boot_params. */
static int enter_64(struct vm *vm, uint64_t entry)
{
	const struct vm_long_mode m = {
	    .cs = LB_BOOT_CS,
	    .ds = LB_BOOT_DS,
	    .gdt_base = LB_GDT_GPA,
	    .gdt_limit = LB_GDT_ENTRIES * 8 - 1,
	    .cr3 = vm->cr3_boot,
	    .cr4 = X86_CR4_PAE,
	    .efer = X86_EFER_LME | X86_EFER_LMA,
	};
	struct kvm_regs regs;
	int ret;

	memset(&regs, 0, sizeof(regs));
	regs.rip = entry;
	regs.rsi = LB_ZERO_PAGE_GPA;
	regs.rflags = 2;
	ret = vm_vcpu_long_mode(&vm->vcpus[0], &m, &regs);
	if (ret < 0)
		return ret;
	vm->entry = entry;
	return 0;
}

int vm_load_linux(struct vm *vm, const struct linux_image *li, char *err, size_t errlen)
{
	struct bzimage bz;
	struct e820_entry e820[8];
	uint8_t *vmlinux = NULL;
	size_t vmlinux_len, cmd_len = strlen(li->cmdline);
	uint64_t entry, end, initrd_gpa = 0, top;
	char why[384];
	int ret;

	ret = bzimage_parse(li->bzimage, li->bzimage_len, &bz, why, sizeof(why));
	if (!ret)
		ret = bzimage_decompress(&bz, &vmlinux, &vmlinux_len, why, sizeof(why));
	if (!ret)
		ret = lboot_load_elf(vm->ram, vm->reserved_gpa, vmlinux, vmlinux_len, &entry, &end,
				     why, sizeof(why));
	free(vmlinux);
	if (ret < 0) {
		msg_fmt(err, errlen, "%s: %s", li->bzimage_name, why);
		return ret;
	}
	/* the kernel's early boot uses init_size bytes from its load address (brk, page tables) */
	if (bz.pref_address + bz.init_size > end)
		end = bz.pref_address + bz.init_size;
	if (end > vm->reserved_gpa) {
		msg_fmt(err, errlen,
			"%s: the kernel needs RAM up to 0x%" PRIx64 ", the guest has 0x%" PRIx64
			" (raise --mem)",
			li->bzimage_name, end, vm->reserved_gpa);
		return -ERANGE;
	}
	if (cmd_len >= LB_CMDLINE_MAX || (bz.cmdline_size && cmd_len > bz.cmdline_size)) {
		msg_fmt(err, errlen, "kernel command line: %zu bytes, the kernel takes %u", cmd_len,
			bz.cmdline_size);
		return -EINVAL;
	}
	memcpy(vm->ram + LB_CMDLINE_GPA, li->cmdline, cmd_len + 1);
	vm->triple_fault_reboots = lboot_reboots_by_triple_fault(li->cmdline);
	if (li->initrd) {
		/* as high as the kernel allows (initrd_addr_max), page-aligned, above the kernel */
		uint32_t addr_max = (uint32_t)bz.hdr[0x22c - BZ_HDR_OFFSET] |
				    (uint32_t)bz.hdr[0x22d - BZ_HDR_OFFSET] << 8 |
				    (uint32_t)bz.hdr[0x22e - BZ_HDR_OFFSET] << 16 |
				    (uint32_t)bz.hdr[0x22f - BZ_HDR_OFFSET] << 24;

		top = vm->reserved_gpa;
		if (addr_max && (uint64_t)addr_max + 1 < top)
			top = (uint64_t)addr_max + 1;
		if (li->initrd_len > top || ((top - li->initrd_len) & ~0xfffull) < end) {
			msg_fmt(err, errlen,
				"--initrd: %zu bytes do not fit between the kernel's end 0x%" PRIx64
				" and 0x%" PRIx64 " (raise --mem)",
				li->initrd_len, end, top);
			return -ERANGE;
		}
		initrd_gpa = (top - li->initrd_len) & ~0xfffull;
		memcpy(vm->ram + initrd_gpa, li->initrd, li->initrd_len);
	}
	acpi_build(vm->ram + LB_ACPI_GPA, LB_ACPI_GPA, vm->nr_vcpus);
	lboot_gdt((uint64_t *)(vm->ram + LB_GDT_GPA));

	struct lboot_params bp = {
		.bz = &bz,
		.cmdline_gpa = LB_CMDLINE_GPA,
		.initrd_gpa = initrd_gpa,
		.initrd_size = li->initrd ? li->initrd_len : 0,
		.rsdp_gpa = LB_ACPI_GPA,
		.e820 = e820,
		.nr_e820 = lboot_e820(vm->ram_size, vm->reserved_gpa, e820, 8),
	};
	lboot_zero_page(vm->ram + LB_ZERO_PAGE_GPA, &bp);
	ret = enter_64(vm, entry);
	if (ret < 0) {
		msg_fmt(err, errlen, "setting vCPU 0's registers: %s", strerror(-ret));
		return ret;
	}
	return 0;
}
