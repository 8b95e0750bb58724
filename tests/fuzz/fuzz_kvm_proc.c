/* libFuzzer harness for what a VMM process shows of itself in /proc (host/vmm/proc_maps.c,
 * host/vmm/kvm_proc.c): each line of the input as a /proc/PID/maps line (taken into a VMM's view
 * with two vCPUs), as an fd link and as a thread's syscall line. The view stays within its bounds:
 * at most KVM_PROC_MAX_RAM candidates, each writable and at least KVM_PROC_RAM_MIN bytes, run
 * mappings only for the vCPUs it has. */
#include "host/vmm/kvm_proc.h"
#include "host/vmm/proc_maps.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct kvm_proc kp;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	memset(&kp, 0, sizeof(kp));
	kp.nr_vcpus = 2;
	kp.vcpu[0].id = 0;
	kp.vcpu[1].id = 3;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct proc_maps_entry e;
		char link[128];
		unsigned id = 12345;
		long nr;
		uint64_t args[6];

		if (proc_maps_parse_line(p, len, &e) == 0) {
			if (e.lo >= e.hi || strlen(e.name) >= sizeof(e.name))
				abort();
			kvm_proc_take_map(&kp, &e);
		}
		if (len < sizeof(link)) {
			memcpy(link, p, len);
			link[len] = 0;
			if (kvm_proc_fd_kind(link, &id) == KVM_PROC_FD_VCPU &&
			    id > KVM_PROC_MAX_VCPU_ID)
				abort();
		}
		if (kvm_proc_parse_syscall(p, len, &nr, args) == 0 && (nr < 0 || nr > 4095))
			abort();
		p += len + 1;
	}
	if (kp.nr_ram > KVM_PROC_MAX_RAM)
		abort();
	for (unsigned i = 0; i < kp.nr_ram; i++)
		if (kp.ram[i].len < KVM_PROC_RAM_MIN)
			abort();
	return 0;
}
