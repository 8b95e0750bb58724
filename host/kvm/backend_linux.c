#include "host/kvm/backend_linux.h"
#include "host/kvm/bzimage.h"
#include "host/kvm/kvm_int3_probe.h"
#include "host/kvm/kvm_run.h"
#include "host/kvm/linux_vm.h"
#include "host/kvm/target_kvm.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"
#include "host/session/cmd_out.h"
#include "host/session/cmd_probe.h"
#include "host/session/exitcode.h"
#include "host/session/kernel_isa.h"
#include "vmi/vmi_file.h"
#include "vmi/vmi_linux.h"
#include "vmi/vmi_linux_boot.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (1ull << 30) /* a kernel or initrd larger than this is not one */
/* what the VMM always puts on the command line: the UART console, and a panic reboots at once (the
 * console line is the verdict). No KASLR needs turning off: it is the decompressor's, which does
 * not run here, so the kernel runs at its link address and System.map applies as it is. */
#define BASE_CMDLINE "console=ttyS0 panic=-1"

struct klrun {
	struct kvm_run_state k; /* first: kvm_run's ops take the state as a struct kvm_run_state */
	struct target tgt;
	struct vmi_linux l;
	bool have_l;
	struct vmi_sites sites;
	struct vmi_boot boot;
	struct vmi_task_layout task;
	FILE *out;
	struct vmi_file_map kernel, initrd; /* mapped read-only */
	char *cmdline;
};

/* Kernel memory: the image linearly (before the first instruction too), the rest through the
 * kernel's page tables (target_kvm_linux_init). */
static int kread(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct klrun *r = ctx;

	return r->tgt.ops->read_kernel(&r->tgt, gva, buf, len);
}

/* Takes every selected site from ftrace before the kernel runs (vmi_linux_boot_can_take says which
 * may be taken and what they become). Those functions are then not in the guest's own
 * available_filter_functions. 0, or an exit status with @err. */
static int take_from_ftrace(struct klrun *r, char *err, size_t errlen)
{
	static const uint64_t zero;
	size_t nr_sel;
	const struct vmi_site *const *sel = pipeline_selection(r->k.env.p, &nr_sel);

	for (size_t i = 0; i < nr_sel; i++) {
		const struct vmi_site *site = sel[i];
		uint64_t loc = vmi_linux_boot_loc(&r->boot, site->addr), gpa, lgpa, entry = 0;
		uint8_t b[5];

		if (!loc || r->tgt.ops->kernel_gpa(&r->tgt, site->addr, &gpa) < 0 ||
		    r->tgt.ops->kernel_gpa(&r->tgt, loc, &lgpa) < 0 ||
		    r->tgt.ops->read_phys(&r->tgt, gpa, b, 5) < 0 ||
		    r->tgt.ops->read_phys(&r->tgt, lgpa, &entry, 8) < 0 ||
		    !vmi_linux_boot_can_take(site->addr, loc, entry, b, r->l.fentry) ||
		    r->tgt.ops->write_phys(&r->tgt, gpa, vmi_linux_boot_nop5, 5) < 0 ||
		    r->tgt.ops->write_phys(&r->tgt, lgpa, &zero, 8) < 0) {
			msg_fmt(err, errlen,
				"boot tracing: %s: site 0x%" PRIx64
				" is not a `call __fentry__` listed "
				"in __mcount_loc",
				site->func->name, site->addr);
			return EXIT_BAD_INPUT;
		}
	}
	return 0;
}

/* tracer_detach's before_detach, with the VM still there and its vCPUs paused: probes in .init.text
 * are forgotten once the kernel may have freed it (their memory is the kernel's again), and the
 * per-CPU slots of the current task and preempt count are read again (they moved after boot). */
static void before_detach(void *ctx)
{
	struct klrun *r = ctx;
	struct vmi_task_layout now;
	size_t n = 0;

	if (vmi_linux_init_freed(&r->l, kread, r) != 0)
		n = pipeline_forget_range(r->k.env.p, r->boot.init_lo, r->boot.init_hi);
	if (n && r->k.env.s->stats)
		fprintf(stderr,
			"hvtrace: stats: init-text-probes-left %zu (the kernel freed .init.text)\n",
			n);
	if (r->task.valid && vmi_linux_task_layout(&r->l, kread, r, r->k.vm.nr_vcpus, &now) == 0) {
		/* the tracer's own copy is the one the stub's detach looks at */
		pipeline_set_task_slots(r->k.env.p, now.current_slot, now.preempt_slot);
	}
}

/* Before any vCPU runs: reads the kernel's symbols (kallsyms in the loaded image, or --system-map),
 * its fentry sites (vmi_linux_boot_sites, .init.text's included), places the stub and patches
 * every selected site, so the kernel is traced from its first traced function (start_kernel) on.
 * 0, or an exit status with @err. */
static int attach_at_boot(struct klrun *r, char *err, size_t errlen)
{
	const struct session *s = r->k.env.s;
	/* INT3 is the guest's own (text_poke_bp, kprobes): hvtrace takes it (KVM_GUESTDBG) only for
	 * --probe trap, where it exits as KVM_EXIT_DEBUG, and gives back what is not its own */
	bool trap = s->probe == PROBE_TRAP;
	struct pipeline_guest pg = {
	    .tgt = &r->tgt,
	    .task = &r->task,
	    .funcs = &r->l.funcs,
	    /* trap probes: the trampoline is a page of hvtrace's own (tgt.trampoline_page), not
	     * __fentry__'s RET, which the kernel rewrites at boot (apply_returns: an INT3 there
	     * makes it warn of a missing return thunk) */
	    .no_trampoline = trap ? "--probe trap: no page for the return trampoline (the "
				    "kernel maps the top of [-3 GiB, -2 GiB) itself, or no room "
				    "above guest RAM)"
				  : "no __fentry__ in the kernel's symbols",
	    .no_trap = !trap,
	    .backpressure = !s->no_backpressure, /* kvm_run_supervise holds the vCPUs when asked */
	};
	const struct vmi_sym *top, *pud;
	char release[64] = "";
	unsigned major = 0, minor = 0;
	int ret;

	if (!r->have_l) { /* no --system-map: the kallsyms tables in the loaded image */
		if (vmi_linux_open_kallsyms(&r->l, kread, r, err, errlen) < 0)
			return EXIT_BAD_INPUT;
		r->have_l = true;
	}
	if (!r->l.slid && vmi_linux_find_slide(&r->l, kread, r, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	if (r->l.slide) { /* the kernel runs at its link address here */
		msg_fmt(err, errlen,
			"--system-map %s is not this kernel's: its linux_banner is 0x%" PRIx64
			" bytes away",
			s->system_map ? s->system_map : "", (uint64_t)r->l.slide);
		return EXIT_BAD_INPUT;
	}
	vmi_linux_release(&r->l, kread, r, release, sizeof(release));
	if (sscanf(release, "%u.%u", &major, &minor) != 2 || major > 99 || minor > 999 ||
	    major * 1000 + minor < 5013) {
		snprintf(
		    err, errlen,
		    "boot tracing: kernel \"%s\": 5.13 or later needed (the first MiB reserved "
		    "whole, system_state's SYSTEM_FREEING_INITMEM)",
		    release);
		return EXIT_BAD_INPUT;
	}
	top = vmi_symtab_find(&r->l.objects, "init_top_pgt");
	pud = vmi_symtab_find(&r->l.objects, "level3_kernel_pgt");
	if (!top || !pud || target_kvm_linux_tables(&r->tgt, top->addr, pud->addr) < 0) {
		snprintf(
		    err, errlen,
		    "boot tracing: the kernel's symbols lack init_top_pgt / level3_kernel_pgt in "
		    "its image");
		return EXIT_BAD_INPUT;
	}
	ret = vmi_linux_boot_sites(&r->l, kread, r, &r->boot, &r->sites, err, errlen);
	if (ret < 0)
		return ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	if (vmi_linux_read_btf(&r->l, kread, r, err, errlen) < 0)
		fprintf(stderr, "hvtrace: %s: tasks show as <unknown>-0\n", err);
	if (vmi_linux_task_layout(&r->l, kread, r, r->k.vm.nr_vcpus, &r->task) < 0) {
		r->task.unknown = true;
	} else {
		/* the per-CPU areas move once the kernel sets them up: the stub reads %gs */
		r->task.has_task_gs = true;
		r->task.task_gs_off = r->l.current_task;
	}
	r->task.has_cpu_gs = vmi_linux_cpu_gs(&r->l, &r->task.cpu_gs_off);
	r->task.has_preempt_gs = vmi_linux_preempt_gs(&r->l, &r->task.preempt_gs_off);
	if (trap) {
		const struct kvm_int3_check *c = kvm_int3_check();
		char why[160];

		if (!kvm_int3_exits(c->verdict, true)) {
			msg_fmt(err, errlen,
				"--probe trap: INT3 in a guest does not exit on this host's KVM "
				"(%s)",
				kvm_int3_why(c, true, why, sizeof(why)));
			return EXIT_BAD_INPUT;
		}
	}
	if (cmd_probe_mode(s, &r->tgt, &r->task, NULL, !trap, &pg.stub, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	ret = kvm_run_refuse_entry_probes(s, &r->sites, &r->l.funcs, err, errlen);
	if (ret)
		return ret;
	ret = pipeline_select(r->k.env.p, s, &r->sites, NULL, NULL, 0, err, errlen);
	if (ret)
		return ret;
	ret = take_from_ftrace(r, err, errlen);
	if (ret)
		return ret;
	r->tgt.trampoline = trap ? 0 : r->l.fentry;
	r->tgt.trampoline_page = trap;
	pg.btf = r->l.btf;
	if (trap && vm_guest_debug(&r->k.vm, err, errlen) < 0)
		return EXIT_HOST_ERROR;
	ret = pipeline_build(r->k.env.p, &pg, r->out, err, errlen);
	if (ret)
		return ret;
	pipeline_set_before_detach(r->k.env.p, before_detach, r);
	return pipeline_start(r->k.env.p, EXIT_BAD_INPUT, err, errlen);
}

/* Maps --kernel / --initrd @path (named @flag) read-only: a non-empty regular file of at most
 * FILE_MAX bytes, opened without blocking (vmi_file.h). 0, or -errno with one line in @err. */
static int map_input(const char *path, const char *flag, struct vmi_file_map *m, char *err,
		     size_t errlen)
{
	int ret = vmi_file_map(flag, path, FILE_MAX, m, err, errlen);

	if (ret == 0 && !m->size) {
		msg_fmt(err, errlen, "%s %s: empty", flag, path);
		return -EINVAL;
	}
	return ret;
}

static int linux_open(void *ctx, char *err, size_t errlen)
{
	struct klrun *r = ctx;
	const struct session *s = r->k.env.s;
	struct bzimage bz;
	char why[512];

	if (kernel_isa_check(s->kernel, "--kernel", err, errlen) < 0)
		return EXIT_BAD_INPUT;
	if (map_input(s->kernel, "--kernel", &r->kernel, err, errlen) < 0 ||
	    (s->initrd && map_input(s->initrd, "--initrd", &r->initrd, err, errlen) < 0))
		return EXIT_BAD_INPUT;
	/* a file that is no bzImage is named as such on any host */
	if (bzimage_parse(r->kernel.data, r->kernel.size, &bz, why, sizeof(why)) < 0) {
		msg_fmt(err, errlen, "%s: %s", s->kernel, why);
		return EXIT_BAD_INPUT;
	}
	if (vm_check_linux_host(err, errlen) < 0)
		return EXIT_BAD_INPUT;
	if (asprintf(&r->cmdline, "%s%s%s", BASE_CMDLINE, s->append ? " " : "",
		     s->append ? s->append : "") < 0) {
		r->cmdline = NULL;
		msg_fmt(err, errlen, "out of memory");
		return EXIT_HOST_ERROR;
	}
	if (s->system_map) {
		if (vmi_linux_open(&r->l, s->system_map, err, errlen) < 0)
			return EXIT_BAD_INPUT;
		r->have_l = true;
	}
	return 0;
}

static int linux_prepare(void *ctx, FILE *out, FILE *con, char *err, size_t errlen)
{
	struct klrun *r = ctx;
	const struct session *s = r->k.env.s;
	struct vm_config cfg = {
	    .smp = s->smp, .mem_mb = s->mem_mb, .console = con, .linux_pc = true};
	struct linux_image li = {
	    .bzimage = r->kernel.data,
	    .bzimage_len = r->kernel.size,
	    .bzimage_name = s->kernel,
	    .initrd = r->initrd.data,
	    .initrd_len = r->initrd.size,
	    .cmdline = r->cmdline,
	};
	int ret;

	r->out = out;
	if (vm_create(&r->k.vm, &cfg, err, errlen) < 0)
		return EXIT_HOST_ERROR;
	r->k.vm_made = true;
	ret = vm_load_linux(&r->k.vm, &li, err, errlen);
	if (ret < 0)
		return ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	target_kvm_linux_init(&r->tgt, &r->k.vm);
	/* nothing to probe (-p nop, no -e, -r or --expect-*): the kernel is not read at all */
	if (s->tracer == TRACER_NOP && !s->nr_events && !s->nr_rprobes && !s->nr_expects)
		return 0;
	return attach_at_boot(r, err, errlen);
}

/* The run ended (kvm_run's wait): a guest that powered off, reset or panicked is gone, nothing
 * left to restore in it: its vCPUs joined, the stub drained; otherwise the vCPUs still run out of
 * the stub and the probes come out. */
static void linux_ran(void *ctx)
{
	struct klrun *r = ctx;
	struct pipeline *p = r->k.env.p;

	if (r->k.vm.end == VM_END_POWEROFF || r->k.vm.end == VM_END_REBOOT ||
	    r->k.vm.end == VM_END_PANIC) {
		vcpu_join_all(&r->k.vm);
		pipeline_stop_drain(p);
	} else if (pipeline_detach(p) < 0) {
		cmd_error("restoring the patched sites failed");
	}
	r->k.detached = true;
}

static void linux_close(void *ctx)
{
	struct klrun *r = ctx;

	vmi_sites_free(&r->sites);
	vmi_linux_boot_free(&r->boot);
	if (r->have_l)
		vmi_linux_close(&r->l);
	free(r->cmdline);
	vmi_file_unmap(&r->kernel);
	vmi_file_unmap(&r->initrd);
}

static const struct kvm_guest_ops linux_guest = {
    .open = linux_open,
    .prepare = linux_prepare,
    .ran = linux_ran,
    .close = linux_close,
};

int backend_linux_new(struct backend *b, const struct backend_env *env)
{
	return kvm_run_new(b, env, &linux_guest, sizeof(struct klrun));
}
