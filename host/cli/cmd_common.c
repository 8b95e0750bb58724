#include "host/cli/cmd_common.h"
#include "host/session/agg_dump.h"
#include "host/kvm/kvm_int3_probe.h"
#include "host/sink/out_fail.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/signalfd.h>

/* SIGUSR2 that comes when no hist is there to show (or after the run): nothing. */
static void ignore_dump_signal(int sig)
{
	(void)sig;
}

int cmd_block_signals(sigset_t *old)
{
	struct sigaction sa = {.sa_handler = ignore_dump_signal, .sa_flags = SA_RESTART};
	sigset_t sigs;
	int fd;

	signal(SIGINT, SIG_DFL);
	/* SIGUSR2 (the hists so far): blocked in every thread but the one that waits for it
	 * (agg_dump), and harmless whenever it is let through */
	sigaction(AGG_DUMP_SIGNAL, &sa, NULL);
	agg_dump_block();
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, out_fail_signal()); /* an output failed: the run ends (out_fail.h) */
	pthread_sigmask(SIG_BLOCK, &sigs, old);
	fd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	out_fail_arm();
	return fd;
}

void cmd_hold_out_fail(void)
{
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, out_fail_signal());
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
}

int cmd_check_int3(const struct session *s, bool qemu, bool *no_trap, char *err, size_t errlen)
{
	const struct kvm_int3_check *c = kvm_int3_check();
	char why[256];

	*no_trap = !kvm_int3_exits(c->verdict, qemu);
	if (!*no_trap)
		return 0;
	if (!qemu && c->verdict == KVM_INT3_NO_CHECK) {
		/* no VM at all (no /dev/kvm, no permission): not a question of probes, whichever */
		msg_fmt(err, errlen,
			"the embedded VMM cannot make a VM (%s); a Linux guest runs without KVM "
			"under QEMU: run --qemu --kernel ...",
			c->detail);
		return -ENODEV;
	}
	kvm_int3_why(c, qemu, why, sizeof(why));
	if (s->probe == PROBE_TRAP) {
		msg_fmt(err, errlen,
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
