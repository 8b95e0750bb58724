/* KVM integration: the embedded VMM's promise that a guest can tell which vCPU runs it without any
 * help from the guest (the stub's CPU number, docs/how-it-works.md), checked by guest code on this
 * host's /dev/kvm: CPUID leaf 1's APIC ID is the vCPU's index on every host, and RDTSCP's ECX
 * (IA32_TSC_AUX) is too wherever the VMM says so (vm.tsc_aux: KVM offers RDTSCP). This machine's
 * PVM offers no RDTSCP (docs/pvm-cpu.md), so there the stub takes CPUID. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"

#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#define CODE_GPA 0x100000
#define SMP	 3

/* cpuid(1); out %al, $0x80; rdtscp; out %al, $0x81; hlt */
static const uint8_t code[] = {
    0xb8, 0x01, 0x00, 0x00, 0x00, /* mov $1, %eax */
    0x31, 0xc9,			  /* xor %ecx, %ecx */
    0x0f, 0xa2,			  /* cpuid */
    0xe6, 0x80,			  /* out %al, $0x80 */
    0x0f, 0x01, 0xf9,		  /* rdtscp */
    0xe6, 0x81,			  /* out %al, $0x81 */
    0xf4,			  /* hlt */
};

/* Runs vCPU @c to its next exit, which must be a write to @port; its registers in @regs. */
static void run_to_port(struct vcpu *c, uint16_t port, struct kvm_regs *regs)
{
	assert_int_equal(ioctl(c->fd, KVM_RUN, 0), 0);
	assert_int_equal(c->run->exit_reason, KVM_EXIT_IO);
	assert_int_equal(c->run->io.port, port);
	assert_int_equal(ioctl(c->fd, KVM_GET_REGS, regs), 0);
}

static void test_guest_knows_its_vcpu(void **state)
{
	FILE *devnull = fopen("/dev/null", "w");
	struct vm_config cfg = {.smp = SMP, .mem_mb = 64, .console = devnull};
	struct vm vm;
	char err[256];

	(void)state;
	assert_int_equal(vm_create(&vm, &cfg, err, sizeof(err)), 0);
	printf("KVM offers RDTSCP: %s; IA32_TSC_AUX set: %s; APIC IDs set: %s\n",
	       kvm_offers_rdtscp() ? "yes" : "no", vm.tsc_aux ? "yes" : "no",
	       vm.cpuid_apic_id ? "yes" : "no");
	assert_true(vm.cpuid_apic_id);
	/* IA32_TSC_AUX is there exactly where KVM offers RDTSCP (KVM_SET_MSRS takes it) */
	assert_int_equal(vm.tsc_aux, kvm_offers_rdtscp());
	memcpy(vm.ram + CODE_GPA, code, sizeof(code));
	assert_int_equal(vm_boot_at(&vm, CODE_GPA, err, sizeof(err)), 0);
	for (unsigned i = 0; i < SMP; i++) {
		struct vcpu *c = &vm.vcpus[i];
		struct kvm_guest_debug nodebug = {0};
		struct kvm_regs regs;

		assert_int_equal(ioctl(c->fd, KVM_SET_GUEST_DEBUG, &nodebug), 0);
		run_to_port(c, 0x80, &regs);
		assert_int_equal(regs.rbx >> 24 & 0xff, i);
		if (!vm.tsc_aux)
			continue; /* RDTSCP is not there to run */
		run_to_port(c, 0x81, &regs);
		assert_int_equal(regs.rcx & 0xffffffff, i);
	}
	vm_destroy(&vm);
	fclose(devnull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_guest_knows_its_vcpu),
	};

	kvm_require();
	return cmocka_run_group_tests_name("kvm_cpu_number", tests, NULL, NULL);
}
