#include "host/cli/kvm_linux_run.h"
#include "host/cli/cmd_common.h"
#include "host/cli/exitcode.h"
#include "host/cli/run.h"
#include "host/kvm/linux_vm.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (1ull << 30) /* a kernel or initrd larger than this is not one */
/* what the VMM always puts on the command line: the UART console, and a panic reboots at once (the
 * console line is the verdict). No KASLR needs turning off: it is the decompressor's, which does not run
 * here, so the kernel runs at its link address and System.map applies as it is. */
#define BASE_CMDLINE "console=ttyS0 panic=-1"

/* Reads @path whole into a new buffer. 0, or -errno with one line (naming @flag and @path) in @err. */
static int slurp(const char *path, const char *flag, uint8_t **buf, size_t *len, char *err,
		 size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;
	size_t got = 0;

	*buf = NULL;
	if (fd < 0 || fstat(fd, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "%s %s: %s", flag, path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (unsigned long long)st.st_size > FILE_MAX) {
		snprintf(err, errlen, "%s %s: %s", flag, path,
			 !S_ISREG(st.st_mode) ? "not a regular file"
			 : st.st_size <= 0    ? "empty"
					      : "larger than 1 GiB");
		close(fd);
		return -EINVAL;
	}
	*buf = malloc((size_t)st.st_size);
	if (!*buf) {
		close(fd);
		snprintf(err, errlen, "%s %s: out of memory", flag, path);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			snprintf(err, errlen, "%s %s: %s", flag, path, n < 0 ? strerror(e) : "shrank");
			free(*buf);
			*buf = NULL;
			close(fd);
			return -e;
		}
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return 0;
}

int cmd_run_kernel(const struct session *s)
{
	uint8_t *kernel = NULL, *initrd = NULL;
	size_t kernel_len = 0, initrd_len = 0;
	char err[512], *cmdline = NULL;
	FILE *con = NULL;
	struct vm vm;
	sigset_t old;
	int sfd = -1, sig, status = EXIT_BAD_INPUT, con_err = 0, ret;
	bool vm_made = false;

	if (vm_check_linux_host(err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		return EXIT_BAD_INPUT;
	}
	if (slurp(s->kernel, "--kernel", &kernel, &kernel_len, err, sizeof(err)) < 0 ||
	    (s->initrd && slurp(s->initrd, "--initrd", &initrd, &initrd_len, err, sizeof(err)) < 0)) {
		cmd_error("%s", err);
		goto out_files;
	}
	if (asprintf(&cmdline, "%s%s%s", BASE_CMDLINE, s->append ? " " : "",
		     s->append ? s->append : "") < 0) {
		cmdline = NULL;
		cmd_error("out of memory");
		status = EXIT_HOST_ERROR;
		goto out_files;
	}
	sfd = cmd_block_signals(&old);
	if (sfd < 0) {
		cmd_error("signalfd: %s", strerror(-sfd));
		status = EXIT_HOST_ERROR;
		goto out_files;
	}
	con = cmd_open_out(s->console, "--console");
	if (!con)
		goto out;

	struct vm_config cfg = {.smp = s->smp, .mem_mb = s->mem_mb, .console = con, .linux_pc = true};
	struct linux_image li = {
		.bzimage = kernel,
		.bzimage_len = kernel_len,
		.bzimage_name = s->kernel,
		.initrd = initrd,
		.initrd_len = initrd_len,
		.cmdline = cmdline,
	};

	status = EXIT_HOST_ERROR;
	if (vm_create(&vm, &cfg, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		goto out;
	}
	vm_made = true;
	ret = vm_load_linux(&vm, &li, err, sizeof(err));
	if (ret < 0) {
		cmd_error("%s", err);
		status = ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
		goto out;
	}
	if (vcpu_start_all(&vm, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		goto out;
	}
	sig = run_supervise(&vm, NULL, sfd, s);
	vcpu_join_all(&vm);
	status = run_end_status(&vm, sig, s);
out:
	if (vm_made) {
		vcpu_join_all(&vm);
		con_err = vm.console_err;
		vm_destroy(&vm);
	}
	close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (con && cmd_finish_out(con, s->console, "--console", con_err) && !status)
		status = EXIT_HOST_ERROR;
out_files:
	free(cmdline);
	free(kernel);
	free(initrd);
	return status;
}
