#include "host/vmmpid/backend_vmmpid.h"
#include "host/vmmpid/vmmpid_ram.h"
#include "host/vmmpid/vmmpid_vm.h"
#include "host/vmmpid/target_vmmpid.h"
#include "host/session/cmd_out.h"
#include "host/session/cmd_probe.h"
#include "host/session/end_status.h"
#include "host/session/entry_sites.h"
#include "host/session/pipeline_guest.h"
#include "host/session/text_verify.h"
#include "host/sink/out_fail.h"
#include "host/trace/clock.h"
#include "host/trace/probe.h"
#include "host/trace/rec_filter.h"
#include "host/trace/tracer.h"
#include "host/vmm/guardian.h"
#include "host/vmm/proc_mem.h"
#include "host/vmm/write_journal.h"
#include "host/session/exitcode.h"
#include "host/util/msg_fmt.h"
#include "host/util/proc_state.h"
#include "arch/arch.h"
#include "arch/arch_tlb.h"
#include "vmi/vmi_linux.h"
#include "vmi/vmi_linux_e820.h"
#include "vmi/vmi_linux_find.h"
#include "vmi/vmi_sites.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define MIN_SITES    1000      /* fewer NOP5 entries: ftrace has not converted them */
#define PTI_USER_BIT 0x1000ull /* PTI: the user PGD is the kernel PGD + 4 KiB */
#define CR4_LA57     (1ull << 12)
#define JOURNAL_SIZE (64ull << 20) /* the patch hold's undo log (mapped lazily): ~2M sites */

struct vmmpid_run {
	struct backend_env env;
	const struct session *s; /* &sess */
	/* the session, with stub probes where no --probe was given (trap probes, hvtrace's default
	 * elsewhere, are not to be had here) */
	struct session sess;
	FILE *out;
	struct vmmpid_vm *vm; /* large */
	struct proc_mem mem;
	uint64_t kcr3;	/* the kernel's page-table root (a vCPU's CR3, address bits) */
	unsigned kmode; /* 1: 5-level */
	struct vmi_linux l;
	struct vmi_sites sites;
	struct inside_sites inside;
	struct vmi_task_layout task;
	/* attach */
	struct pipeline *p;
	struct target_vmmpid tq;
	bool have_tq, detached, restore_failed, text_changed, gone;
	struct text_verify text;
	struct guardian guard; /* restores the guest if hvtrace dies while it is traced */
	/* the patch hold's: undoes the journal's writes if hvtrace dies while it patches */
	struct guardian patch_guard;
	struct write_journal journal;
	int sfd, sig;
	double detach_at, timeout_at;
};

/* Why no trap probe: what cmd_probe_mode and the probe set-up say of a KVM where INT3 does not
 * exit is said of the VMM here. */
#define NO_TRAP_KVM "trap probes: INT3 in a guest does not exit on this host's KVM"
#define NO_TRAP_VMM                                                                                \
	"trap probes: a VMM attached by pid (--vmm generic) does not hand hvtrace its "            \
	"KVM_EXIT_DEBUG (stub probes only; -e events that read guest memory need a trap probe)"

static int read_pte(void *ctx, uint64_t gpa, uint64_t *pte)
{
	struct vmmpid_run *r = ctx;

	return proc_mem_read(&r->mem, gpa, pte, 8);
}

static int kernel_gpa(void *ctx, uint64_t gva, uint64_t *gpa)
{
	struct vmmpid_run *r = ctx;
	const struct arch *a = arch_get(ARCH_X86_64);
	int ret = a->translate(read_pte, r, r->kcr3, r->kmode, gva, gpa);

	/* a vCPU held in user mode under PTI shows the user half of the pair */
	if (ret < 0 && (r->kcr3 & PTI_USER_BIT))
		ret = a->translate(read_pte, r, r->kcr3 & ~PTI_USER_BIT, r->kmode, gva, gpa);
	return ret;
}

static int copy_phys(void *ctx, uint64_t gpa, void *buf, size_t len, bool write)
{
	struct vmmpid_run *r = ctx;

	return write ? proc_mem_write(&r->mem, gpa, buf, len)
		     : proc_mem_read(&r->mem, gpa, buf, len);
}

/* Kernel-half reads for vmi (a vmi_read_fn) through the captured page tables. */
static int read_kernel(void *ctx, uint64_t gva, void *buf, size_t len)
{
	return arch_copy_virt(gva, buf, len, false, kernel_gpa, copy_phys, ctx);
}

/* The one line for a refusal of the process itself: status 2 for what the user named wrongly (no
 * such process, not a KVM VMM, not allowed, a VMM that exits), else 4. */
static int vmm_status(int ret)
{
	return ret == -ESRCH || ret == -ENODEV || ret == -EACCES || ret == -EPERM ||
		       ret == -E2BIG || ret == -ENOENT
		   ? EXIT_BAD_INPUT
		   : EXIT_HOST_ERROR;
}

static int host_read(void *ctx, uint64_t hva, void *buf, size_t len)
{
	struct vmmpid_run *r = ctx;

	return proc_mem_host_read(&r->mem, hva, buf, len);
}

/* The proof's kernel finder: the guest's kallsyms through the hypothesis' reader. */
static int find_kernel(void *ctx, vmi_read_fn read, void *rctx, char *why, size_t whylen)
{
	struct vmmpid_run *r = ctx;

	vmi_linux_close(&r->l);
	memset(&r->l, 0, sizeof(r->l));
	r->l.arch = arch_get(ARCH_X86_64);
	return vmi_linux_find_symbols(&r->l, NULL, false, read, rctx, why, whylen);
}

/* Which mapping holds which guest RAM, proved through the kernel found in it; the map in r->mem.
 * 0, or an exit status with one line in @err (nothing was changed in the VMM). */
static int prove_ram(struct vmmpid_run *r, char *err, size_t errlen)
{
	const struct kvm_proc *kp = &r->vm->kp;
	char why[400] = "no RAM candidate", lay[256];
	const struct vmi_sym *e, *f;
	uint8_t tbl[4 + VMI_E820_ENTRY_SIZE * 128];
	long n = -1;

	struct vmmpid_ram_cpu cpu[VMI_MAX_CPUS];
	struct vmmpid_ram_proof pr;

	for (unsigned i = 0; i < r->vm->nr_cpus; i++)
		cpu[i] = (struct vmmpid_ram_cpu){r->vm->cpu[i].cr3, r->vm->cpu[i].cr4,
						 r->vm->cpu[i].efer};
	if (vmmpid_ram_prove(kp->ram, kp->nr_ram, cpu, r->vm->nr_cpus, host_read, r, find_kernel, r,
			     &pr, why, sizeof(why)) == 0) {
		unsigned c = pr.cand;

		r->kcr3 = pr.root;
		r->kmode = pr.mode;
		vmmpid_ram_boot_map(&kp->ram[c], &r->mem.region[0]);
		r->mem.nr = 1;
		/* the rest of RAM from the kernel's own E820 table (the firmware's, as passed at
		 * boot, where the kernel keeps it) */
		f = vmi_symtab_find(&r->l.objects, "e820_table_firmware");
		e = vmi_symtab_find(&r->l.objects, "e820_table");
		if (f)
			n = vmi_linux_e820_read(read_kernel, r, f->addr, tbl, sizeof(tbl));
		if (n < 0 && e)
			n = vmi_linux_e820_read(read_kernel, r, e->addr, tbl, sizeof(tbl));
		if (n < 0) {
			msg_fmt(err, errlen,
				"pid %d (%s): its kernel is in the mapping at 0x%llx, but its E820 "
				"table "
				"(e820_table) cannot be read: the rest of its RAM is not placed",
				(int)kp->pid, kp->comm, (unsigned long long)kp->ram[c].hva);
			return EXIT_BAD_INPUT;
		}
		struct proc_mem_region reg[PROC_MEM_MAX_REGIONS];
		unsigned nr;

		if (vmmpid_ram_layout(tbl, (size_t)n, kp->ram, kp->nr_ram, c, reg, &nr, lay,
				      sizeof(lay)) < 0) {
			msg_fmt(err, errlen, "pid %d (%s): %s", (int)kp->pid, kp->comm, lay);
			return EXIT_BAD_INPUT;
		}
		memcpy(r->mem.region, reg, nr * sizeof(reg[0]));
		r->mem.nr = nr;
		return 0;
	}
	r->mem.nr = 0;
	msg_fmt(
	    err, errlen,
	    "pid %d (%s): none of its %u RAM mappings is proved to hold the guest's kernel (%s)",
	    (int)kp->pid, kp->comm, kp->nr_ram, why);
	return EXIT_BAD_INPUT;
}

/* The kernel's traceable functions (and its modules'), read through the proved map. */
static int learn_kernel(struct vmmpid_run *r, char *err, size_t errlen)
{
	char rel[64], line[4400];
	int ret;

	if (vmi_linux_read_btf(&r->l, read_kernel, r, err, errlen) < 0)
		fprintf(stderr, "hvtrace: %s: tasks show as <unknown>-0\n", err);
	else if (vmi_linux_modules(&r->l, read_kernel, r, err, errlen) < 0)
		fprintf(stderr, "hvtrace: %s: module functions are not traceable\n", err);
	ret = vmi_linux_sites(&r->l, read_kernel, r, &r->sites);
	if (ret < 0) {
		msg_fmt(err, errlen, "reading the kernel text: %s", strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	if (r->sites.nr < MIN_SITES) {
		msg_fmt(
		    err, errlen,
		    "pid %d (%s): its kernel has only %zu NOP5 function entries (ftrace has not "
		    "converted its call sites, or it is not built with ftrace)",
		    (int)r->vm->kp.pid, r->vm->kp.comm, r->sites.nr);
		return EXIT_BAD_INPUT;
	}
	vmi_linux_release(&r->l, read_kernel, r, rel, sizeof(rel));
	vmi_linux_describe_symbols(&r->l, NULL, rel, line, sizeof(line));
	fprintf(stderr, "hvtrace: %s\n", line);
	return 0;
}

/* Whether a signal came (taken from the signalfd once, kept in r->sig). */
static bool signalled(struct vmmpid_run *r)
{
	struct pollfd pf = {.fd = r->sfd, .events = POLLIN};
	struct signalfd_siginfo si;

	if (r->sig)
		return true;
	if (r->sfd >= 0 && poll(&pf, 1, 0) == 1 && read(r->sfd, &si, sizeof(si)) == sizeof(si))
		r->sig = (int)si.ssi_signo;
	return r->sig != 0;
}

/* The run cannot go on: a pending signal is why, or @err is (@status). */
static int failed(struct vmmpid_run *r, int status, const char *when, char *err, size_t errlen)
{
	if (signalled(r)) {
		if (out_fail_is(r->sig)) {
			msg_fmt(err, errlen, "stopped %s: an output could not be written", when);
			return EXIT_HOST_ERROR;
		}
		msg_fmt(err, errlen, "stopped %s", when);
		return EXIT_SIGNAL_BASE + r->sig;
	}
	return status;
}

/* A refusal worded for a KVM whose INT3 does not exit, said of the VMM instead. */
static void say_vmm(char *err, size_t errlen)
{
	size_t n = strlen(NO_TRAP_KVM);
	char rest[512];

	if (strncmp(err, NO_TRAP_KVM, n))
		return;
	msg_fmt(rest, sizeof(rest), "%s", err + n);
	msg_fmt(err, errlen, "%s%s", NO_TRAP_VMM, rest);
}

/* Entry probes for the functions named without an fentry site: stub detours, or refused. */
static int add_entry_sites(struct vmmpid_run *r, char *err, size_t errlen)
{
	const struct session *s = r->s;
	long n = entry_sites_add(vmi_linux_arch(&r->l), s, &r->sites, &r->l.funcs, read_kernel, r,
				 NO_TRAP_VMM, r->l.fentry, r->sites.nr == 0, err, errlen);

	if (n >= 0) {
		inside_sites_free(&r->inside);
		n = inside_sites_build(vmi_linux_arch(&r->l), s, &r->sites, &r->l.funcs,
				       read_kernel, r, NO_TRAP_VMM, &r->inside, err, errlen);
	}
	if (n == -ENOMEM) {
		msg_fmt(err, errlen, "out of memory");
		return EXIT_HOST_ERROR;
	}
	return n < 0 ? EXIT_BAD_INPUT : 0;
}

/* The guardian's takeover after hvtrace died (@ctx: the struct vmmpid_run, as at the fork): the
 * kernel let the VMM's threads go with hvtrace's ptrace links; they are seized again, the guest
 * restored as the detach does (the shadow stacks are shared memory), and let go. In the guardian
 * process. */
static void guardian_takeover(void *ctx)
{
	struct vmmpid_run *r = ctx;

	r->vm->held = false; /* what hvtrace held died with it */
	r->tq.paused = 0;
	if (pipeline_has_tracer(r->p) && pipeline_takeover_detach(r->p) < 0)
		dprintf(2, "hvtrace guardian: restoring the guest failed: %s\n", r->tq.err);
	else
		dprintf(2, "hvtrace guardian: hvtrace died; stub probes removed, return slots "
			   "restored, the VMM let go\n");
	vmmpid_vm_release(r->vm);
}

static int journal_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	return proc_mem_read(ctx, gpa, buf, len);
}

static int journal_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	return proc_mem_write(ctx, gpa, buf, len);
}

/* The patch hold's guardian, after hvtrace died while it patched (@ctx: the struct vmmpid_run, as
 * at the fork; the journal shared): the kernel let the VMM's threads go with hvtrace's ptrace
 * links; they are seized again (no call injected), every logged write that still holds what
 * hvtrace wrote is put back, newest first, and they are let go. In the guardian process. */
static void patch_guardian_takeover(void *ctx)
{
	struct vmmpid_run *r = ctx;
	char err[320], path[64];
	size_t undone, left;
	int fd;

	r->vm->held = false;
	/* the VMM's memory through a /proc/PID/mem of the guardian's own: through hvtrace's, inherited,
	 * every read failed in the lane once hvtrace was dead */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)r->vm->kp.pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		close(r->mem.fd);
		r->mem.fd = fd;
	}
	if (write_journal_takeover(&r->journal, &r->vm->pi, r->vm->kp.pid, journal_read,
				   journal_write, &r->mem, &undone, &left, err, sizeof(err)) < 0) {
		dprintf(2,
			"hvtrace guardian: hvtrace died while it patched, and the VMM cannot be "
			"held again: %s\n",
			err);
		return;
	}
	dprintf(2,
		"hvtrace guardian: hvtrace died while it patched; %zu writes undone, %zu left "
		"(changed since)%s%s, the VMM let go\n",
		undone, left, left ? ": newest " : "", left ? err : "");
}

/* Stub probes in (the VMM held by ptrace while the tracer patches), the drain and writer
 * running, the VMM let go. 0 or an exit status with @err. */
static int start_tracing(struct vmmpid_run *r, char *err, size_t errlen)
{
	const struct session *s = r->s;
	struct vmi_task_layout tl;
	struct pipeline_guest pg = {
	    .task = &tl,
	    .funcs = &r->l.funcs,
	    .no_trampoline = "no __fentry__ in the kernel's symbols",
	    .btf = r->l.btf,
	    .no_trap = true,
	    /* the drain never asks the VMM to be held: a full ring counts its events lost */
	    .backpressure = false,
	    .text_read = read_kernel,
	    .text_ctx = r,
	};
	uint64_t lo, hi, va;
	char why[256] = "";
	int ret;

	target_vmmpid_init(&r->tq, r->vm, &r->mem, r->kcr3, r->kmode);
	r->have_tq = true;
	pg.tgt = &r->tq.t;
	if (vmi_linux_task_layout(&r->l, read_kernel, r, r->vm->nr_cpus, &r->task) < 0)
		r->task.unknown = true;
	tl = r->task;
	tl.has_cpu_gs = vmi_linux_cpu_gs(&r->l, &tl.cpu_gs_off);
	tl.has_preempt_gs = vmi_linux_preempt_gs(&r->l, &tl.preempt_gs_off);
	vmi_linux_tsc_aux(&r->l, read_kernel, r, &tl.cpu_aux_mask);
	if (vmi_linux_stub_area(&r->l, read_kernel, r, &lo, &hi, &va, why, sizeof(why)) == 0)
		target_vmmpid_set_stub_area(&r->tq, lo, hi, va);
	ret = cmd_probe_mode(s, &r->tq.t, &tl,
			     *why ? why + (strncmp(why, "stub probes: ", 13) ? 0 : 13) : NULL, true,
			     &pg.stub, err, errlen);
	if (ret < 0) {
		say_vmm(err, errlen);
		return EXIT_BAD_INPUT;
	}
	ret = add_entry_sites(r, err, errlen);
	if (ret)
		return ret;
	ret = pipeline_select(r->p, s, &r->sites, &r->inside.sites, NULL, 0, err, errlen);
	if (ret)
		return ret;
	r->tq.t.trampoline = r->l.fentry;
	r->tq.t.stack_shift = VMI_LINUX_THREAD_SHIFT;
	ret = pipeline_build(r->p, &pg, r->out, err, errlen);
	if (ret) {
		say_vmm(err, errlen);
		return ret;
	}
	if (s->verify_text &&
	    text_verify_begin(&r->text, read_kernel, r, r->l.stext, r->l.etext) < 0) {
		msg_fmt(err, errlen, "--verify-text: cannot read the kernel text");
		return EXIT_HOST_ERROR;
	}
	/* the patch hold's guardian: every text and page-table write logged first in memory it
	 * shares, undone by it if hvtrace dies before the tracer's own guardian is up */
	if (write_journal_open(&r->journal, JOURNAL_SIZE) == 0 &&
	    guardian_start(&r->patch_guard, patch_guardian_takeover, r) == 0)
		r->tq.journal = &r->journal;
	else
		fprintf(stderr, "hvtrace: no guardian for the patch hold (mmap or fork failed): if "
				"hvtrace dies while it patches, the patched sites stay\n");
	ret = pipeline_start(r->p, EXIT_HOST_ERROR, err, errlen);
	if (ret) {
		if (r->tq.err[0] && !err[0])
			msg_fmt(err, errlen, "%s", r->tq.err);
		return ret; /* the detach restores with the journal's guardian still up */
	}
	/* a guardian that knows the tracer (and shares its shadow stacks), then the patch hold's
	 * let go (were hvtrace to die between the two, both restore: each write checks the bytes)
	 */
	if (guardian_start(&r->guard, guardian_takeover, r) < 0)
		fprintf(stderr,
			"hvtrace: no guardian (fork failed): if hvtrace dies, the stub stays "
			"in the guest\n");
	guardian_stop(&r->patch_guard);
	r->tq.journal = NULL;
	write_journal_close(&r->journal);
	fprintf(
	    stderr,
	    "hvtrace: pid %d (%s): %zu stub probes in, the VMM held %.1f ms by ptrace; its guest "
	    "runs on, exit-free. The guest's own text patchers are not watched: its ftrace, "
	    "kprobes and BPF must not be turned on while hvtrace holds these sites\n",
	    (int)r->vm->kp.pid, r->vm->kp.comm, probe_count(tracer_probes(pipeline_tracer(r->p))),
	    r->vm->held_ns / 1e6);
	return 0;
}

/* --verify-text: the kernel text after the detach against the copy from before the first patch. */
static void verify_text(struct vmmpid_run *r)
{
	const struct tracer *t = pipeline_tracer(r->p);
	struct text_verdict v;

	if (text_verify_end(&r->text, tracer_arch(t), read_kernel, r, tracer_probes(t),
			    tracer_trampoline(t), &v) < 0) {
		cmd_error("--verify-text: cannot read the kernel text after detach");
		r->text_changed = true;
	} else if (v.ours) {
		cmd_error(
		    "--verify-text: kernel text differs after detach at 0x%llx: %02x, was %02x, "
		    "a byte hvtrace patched (%zu such bytes)",
		    (unsigned long long)v.ours_at, v.ours_now, v.ours_was, v.ours);
		r->text_changed = true;
	} else if (v.kernel) {
		fprintf(stderr,
			"hvtrace: --verify-text: kernel text unchanged where hvtrace patched; the "
			"kernel itself changed %zu bytes in %zu places since attach\n",
			v.kernel, v.kernel_runs);
	} else {
		fprintf(stderr, "hvtrace: --verify-text: kernel text unchanged (%zu bytes)\n",
			v.len);
	}
}

static bool vmm_gone(pid_t pid);

/* Every probe out, every hooked return handed back, with the VMM held; then let go. */
static void detach_guest(struct vmmpid_run *r)
{
	int ret;

	guardian_stop(&r->guard);
	if (r->detached || !r->have_tq) {
		guardian_stop(&r->patch_guard);
		return;
	}
	r->detached = true;
	if (vmm_gone(r->vm->kp.pid)) { /* nothing left to restore in a VMM that is gone */
		pipeline_stop_drain(r->p);
		vmmpid_vm_release(r->vm);
		return;
	}
	ret = pipeline_selected(r->p) ? pipeline_detach(r->p) : 0;
	if (ret < 0 && ret != -EBUSY) {
		cmd_error("restoring the guest failed%s%s: some probes or return slots may remain",
			  r->tq.err[0] ? ": " : "", r->tq.err);
		r->restore_failed = true;
	}
	if (r->text.before)
		verify_text(r);
	vmmpid_vm_release(r->vm);
	/* a failed start's restore is made: its journal's guardian goes */
	guardian_stop(&r->patch_guard);
	r->tq.journal = NULL;
	write_journal_close(&r->journal);
}

static int vmmpid_open(void *ctx, char *err, size_t errlen)
{
	struct vmmpid_run *r = ctx;

	if (r->s->host) {
		msg_fmt(err, errlen,
			"--host with the generic backend (--vmm generic): not built yet (the vCPU "
			"threads' host events)");
		return EXIT_BAD_INPUT;
	}
	if (r->s->system_map) {
		msg_fmt(
		    err, errlen,
		    "--system-map with --vmm generic: the generic backend reads the guest's own "
		    "kallsyms");
		return EXIT_BAD_INPUT;
	}
	return 0;
}

/* Whether the VMM process is gone (or a zombie): a step that failed then failed for that. */
static bool vmm_gone(pid_t pid)
{
	char state;

	return proc_state(pid, 0, &state) < 0 || PROC_STATE_EXITED(state);
}

static int prepare_steps(struct vmmpid_run *r, int sfd, char *err, size_t errlen);

static int vmmpid_prepare(void *ctx, int sfd, FILE *out, FILE *con, char *err, size_t errlen)
{
	struct vmmpid_run *r = ctx;
	int status;

	(void)con;
	r->out = out;
	r->sfd = sfd;
	status = prepare_steps(r, sfd, err, errlen);
	/* whatever a step said after the VM was found, a VMM that went meanwhile is why */
	if (status && status != BACKEND_DONE && r->vm->nr_cpus && vmm_gone(r->vm->kp.pid)) {
		msg_fmt(err, errlen, "pid %d (%s) exited during the attach", (int)r->vm->kp.pid,
			r->vm->kp.comm);
		status = EXIT_BAD_INPUT;
	}
	return status;
}

static int prepare_steps(struct vmmpid_run *r, int sfd, char *err, size_t errlen)
{
	int ret, status;

	ret = vmmpid_vm_open(r->vm, r->s->attach.pid, err, errlen);
	if (ret < 0)
		return vmm_status(ret);
	if (r->s->cmd == CMD_ATTACH && r->s->probe == PROBE_TRAP) {
		msg_fmt(err, errlen, "--probe trap: %s",
			&NO_TRAP_VMM[13]); /* past "trap probes: " */
		return EXIT_BAD_INPUT;
	}
	if (rec_filter_check_cpus(&r->s->tasks, r->vm->nr_cpus, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	/* the registers: the VMM held only as long as the injected ioctls take */
	ret = vmmpid_vm_hold(r->vm, err, errlen);
	vmmpid_vm_release(r->vm);
	if (ret < 0)
		return vmm_status(ret);
	ret = proc_mem_open(&r->mem, r->vm->kp.pid, err, errlen);
	if (ret < 0)
		return vmm_status(ret);
	status = prove_ram(r, err, errlen);
	if (status)
		return status;
	status = learn_kernel(r, err, errlen);
	if (status)
		return status;
	if (r->s->cmd == CMD_ATTACH) {
		r->sfd = sfd;
		status = start_tracing(r, err, errlen);
		return status ? failed(r, status, "while attaching", err, errlen) : 0;
	}
	for (size_t i = 0; i < r->sites.nr && !ferror(r->out); i++) {
		const struct vmi_site *site = &r->sites.v[i];
		const struct vmi_module *m = vmi_modules_find(&r->l.mods, site->addr);

		fprintf(r->out, "%s%s%s%s\n", site->func->name, m ? " [" : "", m ? m->name : "",
			m ? "]" : "");
	}
	return BACKEND_DONE;
}

static int vmmpid_start(void *ctx, char *err, size_t errlen)
{
	struct vmmpid_run *r = ctx;

	(void)err, (void)errlen;
	r->detach_at = r->s->duration > 0 ? clock_now_s() + r->s->duration : 0;
	r->timeout_at = r->s->timeout > 0 ? clock_now_s() + r->s->timeout : 0;
	return 0;
}

/* The guest runs on its own (exit-free: the drain reads its rings through /proc/PID/mem): waits
 * for a signal, --duration, --timeout, or the VMM's end, then detaches. */
static int vmmpid_wait(void *ctx, int sfd)
{
	struct vmmpid_run *r = ctx;
	char path[64];

	r->sfd = sfd;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)r->vm->kp.pid);
	for (;;) {
		struct pollfd pf = {.fd = sfd, .events = POLLIN};
		double t = clock_now_s();

		if (signalled(r) || (r->detach_at && t >= r->detach_at) ||
		    (r->timeout_at && t >= r->timeout_at))
			break;
		if (access(path, F_OK) < 0 || kill(r->vm->kp.pid, 0) < 0) {
			r->gone = true;
			break;
		}
		poll(&pf, 1, 100);
	}
	(void)pipeline_run_ended(r->p, sfd);
	if (r->gone) {
		guardian_stop(&r->guard);
		guardian_stop(&r->patch_guard);
		pipeline_stop_drain(r->p);
		r->detached = true;
		/* as an attached QEMU that goes: the trace so far is written, status 0 */
		cmd_error("pid %d (%s): the VMM went away", (int)r->vm->kp.pid, r->vm->kp.comm);
		return 0;
	}
	detach_guest(r);
	return 0;
}

/* After any step: whatever is still patched restored and the VMM let go. */
static int vmmpid_detach(void *ctx, int status)
{
	struct vmmpid_run *r = ctx;

	detach_guest(r);
	vmmpid_vm_release(r->vm);
	if (pipeline_selected(r->p) && (r->text_changed || r->restore_failed) && status == 0)
		status = EXIT_HOST_ERROR;
	return status;
}

/* --stats of the generic backend: how the VMM was reached and held. */
static void vmmpid_stats(void *ctx, const struct pipeline *p)
{
	struct vmmpid_run *r = ctx;

	fprintf(stderr,
		"hvtrace: stats: vmm pid %d (%s) vcpus %u guest-memory process regions %u holds %u "
		"held-us %llu set-regs %llu\n",
		(int)r->vm->kp.pid, r->vm->kp.comm, r->vm->nr_cpus, r->mem.nr, r->vm->holds,
		(unsigned long long)(r->vm->held_ns / 1000), (unsigned long long)r->tq.set_regs);
	pipeline_print_stub_stats(p);
}

static int vmmpid_close(void *ctx)
{
	struct vmmpid_run *r = ctx;

	guardian_stop(&r->guard);
	guardian_stop(&r->patch_guard);
	write_journal_close(&r->journal);
	vmmpid_vm_release(r->vm);
	proc_mem_close(&r->mem);
	text_verify_free(&r->text);
	inside_sites_free(&r->inside);
	vmi_sites_free(&r->sites);
	vmi_linux_close(&r->l);
	free(r->vm);
	free(r);
	return 0;
}

static const struct backend_ops vmmpid_ops = {
    .open = vmmpid_open,
    .prepare = vmmpid_prepare,
    .start = vmmpid_start,
    .wait = vmmpid_wait,
    .detach = vmmpid_detach,
    .stats = vmmpid_stats,
    .close = vmmpid_close,
};

int backend_vmmpid_new(struct backend *b, const struct backend_env *env)
{
	struct vmmpid_run *r = calloc(1, sizeof(*r));

	if (!r || !(r->vm = calloc(1, sizeof(*r->vm)))) {
		free(r);
		return -ENOMEM;
	}
	r->env = *env;
	r->sess = *env->s;
	if (!r->sess.probe_given)
		r->sess.probe = PROBE_STUB;
	r->s = &r->sess;
	r->p = env->p;
	r->sfd = -1;
	r->guard.pid = -1;
	r->guard.fd = -1;
	r->patch_guard.pid = -1;
	r->patch_guard.fd = -1;
	r->mem.fd = -1;
	r->vm->pi.mem_fd = -1;
	b->ops = &vmmpid_ops;
	b->ctx = r;
	return 0;
}
