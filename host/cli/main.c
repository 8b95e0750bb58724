/* hvtrace: ftrace for a guest kernel, driven from the host over KVM. */
#include "host/cli/cmd_common.h"
#include "host/session/exitcode.h"
#include "host/cli/driver.h"
#include "host/cli/help.h"
#include "host/cli/input_check.h"
#include "host/cli/report.h"
#include "host/cli/session_args.h"
#include "host/kvm/backend_elf.h"
#include "host/kvm/backend_linux.h"
#include "host/qemu/backend_qemu.h"
#include "host/qemu/qemu_attach.h"
#include "host/vmmpid/backend_vmmpid.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>

#ifndef HVT_VERSION
#define HVT_VERSION "0.1"
#endif

/* Under LeakSanitizer (make check-asan): libtraceevent leaks on its error paths for some malformed
 * event formats of a trace.dat (`report`), which turned a refused file's exit 2 into 1. Those leaks
 * are the library's, not ours: suppressed by library, ours still counted (issue 37). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\nleak:libtracecmd.so\n";
}

/* ... and suppressed quietly: a report file under check-asan's log_path fails the check. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
	return "print_suppressions=0";
}

/* attach / list-functions --pid: the generic backend (any KVM VMM, issue 41) with --vmm generic,
 * or without --vmm for a KVM VMM QEMU's channels cannot reach; else the QEMU backend. */
static driver_backend_new attach_backend(const struct session *s)
{
	if (!s->attach.pid)
		return backend_qemu_new;
	if (s->attach.vmm_given)
		return s->attach.generic ? backend_vmmpid_new : backend_qemu_new;
	return qemu_attach_pid_generic(s->attach.pid) ? backend_vmmpid_new : backend_qemu_new;
}

int main(int argc, char **argv)
{
	struct session s;
	char err[512];
	int status;

	cmd_hold_out_fail();
	session_init(&s);
	if (session_parse_args(&s, argc, argv, err, sizeof(err)) < 0 ||
	    input_check(&s, err, sizeof(err)) < 0) {
		fprintf(stderr, "hvtrace: %s\n", err);
		session_free(&s);
		return EXIT_BAD_INPUT;
	}
	/* A closed output (`hvtrace run ... | head`) is a write error like any other: it ends the
	 * run at once (host/sink/out_fail.h), reported in one line, exit 4, the guest detached as
	 * after any error, never a death by signal halfway through a detach; `report` the same.
	 * --help and --version: a closed pipe ends them quietly. */
	if (s.cmd == CMD_RUN || s.cmd == CMD_ATTACH || s.cmd == CMD_LIST_FUNCTIONS ||
	    s.cmd == CMD_REPORT)
		signal(SIGPIPE, SIG_IGN);
	switch (s.cmd) {
	case CMD_HELP:
	case CMD_VERSION:
		errno = 0;
		if (s.cmd == CMD_HELP ? help_print(stdout, session_usage, s.help_cmd) < 0
				      : printf("hvtrace %s\n", HVT_VERSION) < 0)
			status = errno ? errno : EIO;
		else
			status = 0;
		status = cmd_finish_out(stdout, NULL, NULL, status) < 0 ? EXIT_HOST_ERROR : 0;
		break;
	case CMD_LIST_FUNCTIONS:
		status = s.list_running ? driver_run(&s, attach_backend(&s))
					: backend_elf_list_functions(&s);
		break;
	case CMD_RUN:
		status = s.vmm == VMM_QEMU ? driver_run(&s, backend_qemu_new)
			 : s.kernel	   ? driver_run(&s, backend_linux_new)
					   : driver_run(&s, backend_elf_new);
		break;
	case CMD_ATTACH:
		status = driver_run(&s, attach_backend(&s));
		break;
	case CMD_REPORT:
		status = cmd_report(&s);
		break;
	default:
		status = EXIT_BAD_INPUT;
		break;
	}
	session_free(&s);
	return status;
}
