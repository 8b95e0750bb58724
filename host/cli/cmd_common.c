#include "host/cli/cmd_common.h"
#include "host/kvm/kvm_int3_probe.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/signalfd.h>

int cmd_block_signals(sigset_t *old)
{
	sigset_t sigs;
	int fd;

	signal(SIGINT, SIG_DFL);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, old);
	fd = signalfd(-1, &sigs, SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cmd_probe_mode(const struct session *s, const struct target *tgt,
		   const struct vmi_task_layout *task, const char *target_why, bool no_trap,
		   bool *stub, char *err, size_t errlen)
{
	const char *why =
	    !tgt->ops->stub_map ? "this target cannot place the stub"
	    : target_why	? target_why
	    : !task->has_cpu_gs && !task->cpu_aux_mask && !task->cpu_apic_id
		? "the guest's CPU has no RDTSCP with IA32_TSC_AUX set, its CPUID does not "
		  "give each vCPU's index, and the guest does not say where its CPU "
		  "number is (hvtrace_cpu_gs)"
		: NULL;

	*stub = false;
	if (s->probe == PROBE_TRAP)
		return 0;
	if (why && no_trap) {
		snprintf(err, errlen,
			 "trap probes: INT3 in a guest does not exit on this host's KVM, and stub "
			 "probes cannot work: %s",
			 why);
		return -ENOTSUP;
	}
	if (why && s->probe == PROBE_STUB) {
		snprintf(err, errlen, "--probe stub: %s", why);
		return -ENOTSUP;
	}
	*stub = !why;
	return 0;
}

int cmd_check_int3(const struct session *s, bool qemu, bool *no_trap, char *err, size_t errlen)
{
	const struct kvm_int3_check *c = kvm_int3_check();
	char why[256];

	*no_trap = !kvm_int3_exits(c->verdict, qemu);
	if (!*no_trap)
		return 0;
	kvm_int3_why(c, qemu, why, sizeof(why));
	if (s->probe == PROBE_TRAP) {
		snprintf(err, errlen,
			 "trap probes: INT3 in a guest does not exit on this host's KVM (%s); use "
			 "--probe stub",
			 why);
		return -ENOTSUP;
	}
	if (s->probe == PROBE_AUTO)
		fprintf(
		    stderr,
		    "hvtrace: --probe auto: stub probes for every site: INT3 in a guest does not "
		    "exit on this host's KVM (%s)\n",
		    why);
	return 0;
}
