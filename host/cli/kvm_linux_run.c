#include "host/cli/kvm_linux_run.h"
#include "host/cli/cmd_common.h"
#include "host/cli/exitcode.h"
#include "host/cli/run.h"
#include "host/cli/pipeline.h"
#include "host/kvm/bzimage.h"
#include "host/kvm/linux_vm.h"
#include "host/kvm/target_kvm.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"
#include "host/trace/clock.h"
#include "arch/x86/x86_longmode.h"
#include "vmi/vmi_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (1ull << 30) /* a kernel or initrd larger than this is not one */
/* what the VMM always puts on the command line: the UART console, and a panic reboots at once (the
 * console line is the verdict). No KASLR needs turning off: it is the decompressor's, which does
 * not run here, so the kernel runs at its link address and System.map applies as it is. */
#define BASE_CMDLINE "console=ttyS0 panic=-1"

#define MIN_SITES    1000 /* fewer NOP5 entries: ftrace has not converted the call sites yet */
#define BOOT_POLL_MS 200  /* how often the booting kernel is looked at until it can be traced */

struct klrun {
	const struct session *s;
	struct vm *vm;
	struct target tgt;
	struct vmi_linux l;
	bool have_l;
	struct vmi_sites sites;
	size_t last_nr; /* the site count the last look found */
	struct vmi_task_layout task;
	struct pipeline p;
	bool have_p;
	FILE *out;
};

/* Kernel memory through vCPU 0's page tables (the kernel's once it runs); the vCPUs paused. */
static int kread(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct klrun *r = ctx;

	return r->tgt.ops->read_kernel(&r->tgt, gva, buf, len);
}

/* A cheap look before the scan of the whole text: ftrace has turned vfs_read's call to __fentry__
 * into a NOP5 (it converts every site at once, early in start_kernel). True without that symbol. */
static bool ftrace_ready(struct klrun *r)
{
	static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	const struct vmi_sym *f = vmi_symtab_find(&r->l.funcs, "vfs_read");
	uint8_t b[9];

	if (!f)
		return true;
	if (kread(r, f->addr, b, sizeof(b)) < 0)
		return false;
	return !memcmp(b, nop5, 5) || !memcmp(b + 4, nop5, 5); /* after an endbr64 */
}

/* With the vCPUs paused: once the kernel runs on its own page tables with ftrace's NOP5s in place
 * (ftrace_ready), reads what the tracer needs and attaches it. Returns 1 when attached, 0
 * when the kernel is not that far yet, or an exit status (> 1) with @err. */
static int try_attach(struct klrun *r, char *err, size_t errlen)
{
	const struct session *s = r->s;
	struct pipeline_guest pg = {
	    .tgt = &r->tgt,
	    .task = &r->task,
	    .funcs = &r->l.funcs,
	    .no_trampoline = "no __fentry__ in the System.map",
	    .no_trap = true, /* INT3 belongs to the guest: no KVM_GUESTDBG on a linux_pc VM */
	};
	uint64_t lo, hi, va;
	char why[256] = "";
	int ret;

	if ((r->vm->vcpus[0].cr3 & X86_PTE_ADDR) == r->vm->cr3_boot)
		return 0; /* still on the VMM's identity map */
	if (!r->have_l) { /* no --system-map: the kernel's own kallsyms, once they are there */
		if (vmi_linux_open_kallsyms(&r->l, kread, r, err, errlen) < 0)
			return 0;
		r->have_l = true;
	}
	if (!r->l.slid) {
		ret = vmi_linux_find_slide(&r->l, kread, r, err, errlen);
		if (ret == -ESRCH)
			return 0;
		if (ret < 0)
			return EXIT_BAD_INPUT;
	}
	if (!ftrace_ready(r))
		return 0;
	vmi_sites_free(&r->sites);
	ret = vmi_linux_sites(&r->l, kread, r, &r->sites);
	if (ret < 0 || r->sites.nr < MIN_SITES) {
		r->last_nr = ret < 0 ? 0 : r->sites.nr;
		return 0;
	}
	if (vmi_linux_read_btf(&r->l, kread, r, err, errlen) < 0)
		fprintf(stderr, "hvtrace: %s: tasks show as <unknown>-0\n", err);
	if (vmi_linux_task_layout(&r->l, kread, r, r->vm->nr_vcpus, &r->task) < 0)
		r->task.unknown = true;
	r->task.has_cpu_gs = vmi_linux_cpu_gs(&r->l, &r->task.cpu_gs_off);
	vmi_linux_tsc_aux(&r->l, kread, r, &r->task.cpu_aux_mask);
	if (vmi_linux_stub_area(&r->l, kread, r, &lo, &hi, &va, why, sizeof(why)) == 0)
		r->vm->stub_va = va;
	pg.btf = r->l.btf;
	if (cmd_probe_mode(s, &r->tgt, &r->task, *why ? why : NULL, true, &pg.stub, err, errlen) <
	    0)
		return EXIT_BAD_INPUT;
	ret = pipeline_select(&r->p, s, &r->sites, NULL, 0, err, errlen);
	r->have_p = true;
	if (ret)
		return ret;
	r->tgt.trampoline = r->l.fentry;
	ret = pipeline_build(&r->p, &pg, r->out, err, errlen);
	if (!ret)
		ret = pipeline_start(&r->p, EXIT_BAD_INPUT, err, errlen);
	return ret ? ret : 1;
}

/* Lets the kernel boot until it can be traced (try_attach), the VM ends, a signal or @deadline (0:
 * none). Returns 0 (attached or the VM ended: see r->have_p / vm->end), a signal number, -1
 * (deadline), or an exit status + 1000 with @err. */
static int boot_and_attach(struct klrun *r, int sfd, double deadline, char *err, size_t errlen)
{
	for (;;) {
		double tick = clock_now_s() + BOOT_POLL_MS / 1000.0;
		int ret;

		if (deadline && clock_now_s() >= deadline)
			return -1;
		ret = run_wait_for_end(r->vm, sfd, deadline && deadline < tick ? deadline : tick);
		if (ret != -1)
			return ret;
		vcpu_pause_all(r->vm);
		ret = try_attach(r, err, errlen);
		vcpu_resume_all(r->vm);
		if (ret == 1)
			return 0;
		if (ret)
			return 1000 + ret;
	}
}

/* Reads @path whole into a new buffer. 0, or -errno with one line (naming @flag and @path) in @err.
 */
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
			snprintf(err, errlen, "%s %s: %s", flag, path,
				 n < 0 ? strerror(e) : "shrank");
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
	FILE *con = NULL, *out = NULL;
	struct vm vm;
	sigset_t old;
	int sfd = -1, sig, status = EXIT_BAD_INPUT, con_err = 0, out_err = 0, ret;
	bool vm_made = false, detached = false;
	static struct klrun r; /* large (sites, symbols); one run per process */
	struct session left;
	struct bzimage bz;
	double start;

	memset(&r, 0, sizeof(r));
	r.s = s;
	r.vm = &vm;

	if (slurp(s->kernel, "--kernel", &kernel, &kernel_len, err, sizeof(err)) < 0 ||
	    (s->initrd &&
	     slurp(s->initrd, "--initrd", &initrd, &initrd_len, err, sizeof(err)) < 0)) {
		cmd_error("%s", err);
		goto out_files;
	}
	/* a file that is no bzImage is named as such on any host */
	if (bzimage_parse(kernel, kernel_len, &bz, err, sizeof(err)) < 0) {
		cmd_error("%s: %s", s->kernel, err);
		goto out_files;
	}
	if (vm_check_linux_host(err, sizeof(err)) < 0) {
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
	if (s->system_map) {
		ret = vmi_linux_open(&r.l, s->system_map, err, sizeof(err));
		if (ret < 0) {
			cmd_error("%s", err);
			goto out;
		}
		r.have_l = true;
	}
	out = cmd_open_out(s->output, "-o");
	con = cmd_open_out(s->console, "--console");
	if (!out || !con)
		goto out;
	r.out = out;

	struct vm_config cfg = {
	    .smp = s->smp, .mem_mb = s->mem_mb, .console = con, .linux_pc = true};
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
	target_kvm_linux_init(&r.tgt, &vm, 0);
	if (vcpu_start_all(&vm, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		goto out;
	}
	start = clock_now_s();
	sig = boot_and_attach(&r, sfd, s->timeout > 0 ? start + s->timeout : 0, err, sizeof(err));
	if (sig >= 1000) {
		cmd_error("%s", err);
		status = sig - 1000;
		goto out;
	}
	if (!sig && vm.end == VM_END_NONE) {
		/* the rest of --timeout and --duration from now on */
		left = *s;
		if (s->timeout > 0)
			left.timeout = s->timeout - (clock_now_s() - start) > 0.001
					   ? s->timeout - (clock_now_s() - start)
					   : 0.001;
		sig = run_supervise(&vm, r.have_p ? &r.p : NULL, sfd, &left);
	}
	if (r.have_p) {
		if (vm.end == VM_END_POWEROFF || vm.end == VM_END_REBOOT ||
		    vm.end == VM_END_PANIC) {
			vcpu_join_all(&vm);
			if (r.p.have_tr) /* nothing left to restore in a guest that is gone */
				tracer_stop_drain(&r.p.tr);
		} else if (pipeline_detach(&r.p) < 0) { /* the vCPUs still run out of the stub */
			cmd_error("restoring the patched sites failed");
		}
		detached = true;
	}
	vcpu_join_all(&vm);
	status = run_end_status(&vm, sig, s);
	if (!status && !r.have_p && s->nr_expects) {
		/* a guest that ended before it could be traced met no expectation */
		cmd_error("--expect-*: the guest ended before its kernel could be traced");
		status = EXIT_EXPECT;
	}
out:
	if (r.have_p && !detached)
		pipeline_detach(&r.p);
	if (vm_made)
		vcpu_join_all(&vm);
	if (r.have_p) {
		status = pipeline_finish(&r.p, status, run_print_stats, &vm);
		out_err = r.p.sink.err;
		pipeline_free(&r.p);
	}
	if (vm_made) {
		con_err = vm.console_err;
		vm_destroy(&vm);
	}
	vmi_sites_free(&r.sites);
	if (r.have_l)
		vmi_linux_close(&r.l);
	close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!out_err && out == con)
		out_err = con_err;
	if (out && cmd_finish_out(out, s->output, "-o", out_err) && !status)
		status = EXIT_HOST_ERROR;
	if (con && con != out && cmd_finish_out(con, s->console, "--console", con_err) && !status)
		status = EXIT_HOST_ERROR;
out_files:
	free(cmdline);
	free(kernel);
	free(initrd);
	return status;
}
