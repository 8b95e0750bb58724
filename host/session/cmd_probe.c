#include "host/session/cmd_probe.h"
#include "guest-stub/stub_blob.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>

int cmd_probe_mode(const struct session *s, const struct target *tgt,
		   const struct vmi_task_layout *task, const char *target_why, bool no_trap,
		   bool *stub, char *err, size_t errlen)
{
	const struct stub_blob *blob = stub_blob_of(target_arch(tgt)->elf_machine);
	const char *why =
	    !tgt->ops->stub_map ? "this target cannot place the stub"
	    : target_why	? target_why
	    : !blob		? "hvtrace has no in-guest stub for this guest's ISA"
	    /* what the ISA's stub has no routine for (arm64's, so far) */
	    : s->nr_graph && !blob->entry[5]
		? "the in-guest stub of this ISA has no set_graph_function (-g) routine yet"
	    : (s->profile || s->nr_hists) && !blob->agg[0]
		? "the in-guest stub of this ISA keeps no counting tables yet (--profile, hist "
		  "triggers)"
	    : !blob->cpu_from_vmm && !task->has_cpu_gs && !task->cpu_aux_mask &&
		    !task->cpu_apic_id
		? "the guest's CPU has no RDTSCP with IA32_TSC_AUX set, its CPUID does not "
		  "give each vCPU's index, and the guest does not say where its CPU "
		  "number is (hvtrace_cpu_gs)"
		: NULL;

	*stub = false;
	if (s->probe == PROBE_TRAP)
		return 0;
	if (why && no_trap) {
		msg_fmt(err, errlen,
			"trap probes: INT3 in a guest does not exit on this host's KVM, and stub "
			"probes cannot work: %s",
			why);
		return -ENOTSUP;
	}
	if (why && s->probe == PROBE_STUB) {
		msg_fmt(err, errlen, "--probe stub: %s", why);
		return -ENOTSUP;
	}
	*stub = !why;
	return 0;
}
