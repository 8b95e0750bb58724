#include "host/kvm/backend_elf.h"
#include "host/kvm/guest_image.h"
#include "host/kvm/kvm_run.h"
#include "host/kvm/step_slots.h"
#include "host/session/entry_sites.h"
#include "host/kvm/target_kvm.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"
#include "host/session/cmd_out.h"
#include "host/session/cmd_probe.h"
#include "host/session/exitcode.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct backend_elf {
	struct kvm_run_state k; /* first: kvm_run's ops take the state as a struct kvm_run_state */
	struct guest_image g;
	bool have_g;
	struct inside_sites inside; /* -e FUNC+OFFSET's sites */
	struct target tgt;
};

/* Entry probes (functions without an fentry site: those named exactly, --entry's, or every one of a
 * guest built without -pg) added to the guest's sites, the ones a breakpoint cannot serve exactly
 * left out (step_slots_check). 0 or an exit status with @err. */
static int add_entry_sites(const struct session *s, struct guest_image *g, FILE *note, char *err,
			   size_t errlen)
{
	long n = entry_sites_add(g->arch, s, &g->sites, &g->elf.funcs, guest_image_read, g, NULL, 0,
				 g->no_fentry, err, errlen);

	if (n > 0)
		n = step_slots_check(s, &g->sites, &g->elf.funcs, guest_image_read, g, note, err,
				     errlen);
	if (n == -ENOMEM)
		msg_fmt(err, errlen, "out of memory");
	return n == -ENOMEM ? EXIT_HOST_ERROR : n < 0 ? EXIT_BAD_INPUT : 0;
}

static int elf_open(void *ctx, char *err, size_t errlen)
{
	struct backend_elf *b = ctx;
	int status;

	if (guest_image_open(&b->g, b->k.env.s->guest, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	b->have_g = true;
	status = add_entry_sites(b->k.env.s, &b->g, stderr, err, errlen);
	if (status)
		return status;
	if (!b->g.sites.nr) {
		msg_fmt(err, errlen, "%s: no function can be traced", b->k.env.s->guest);
		return EXIT_BAD_INPUT;
	}
	long n = inside_sites_build(b->g.arch, b->k.env.s, &b->g.sites, &b->g.elf.funcs,
				    guest_image_read, &b->g, NULL, &b->inside, err, errlen);

	if (n < 0)
		return n == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	status = pipeline_select(b->k.env.p, b->k.env.s, &b->g.sites, &b->inside.sites, NULL, 0,
				 err, errlen);
	return status;
}

/* The out-of-line copies of every entry site and every -e FUNC+OFFSET site, written into the VM.
 * 0 or -errno with @err. */
static int write_step_slots(struct backend_elf *b, char *err, size_t errlen)
{
	struct vmi_sites all = {.v = malloc((b->g.sites.nr + 1) * sizeof(*all.v))};
	int ret;

	if (!all.v) {
		msg_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(all.v, b->g.sites.v, b->g.sites.nr * sizeof(*all.v));
	all.nr = b->g.sites.nr;
	ret = vmi_sites_add(&all, b->inside.sites.v, b->inside.sites.nr);
	if (ret < 0)
		msg_fmt(err, errlen, "out of memory");
	else
		ret = vm_write_step_slots(&b->k.vm, &all, err, errlen);
	vmi_sites_free(&all);
	return ret;
}

static int elf_prepare(void *ctx, FILE *out, FILE *con, char *err, size_t errlen)
{
	struct backend_elf *b = ctx;
	const struct session *s = b->k.env.s;
	struct vm_config cfg = {.smp = s->smp,
				.mem_mb = s->mem_mb,
				.console = con,
				.step_slots = step_slots_count(&b->g.sites) +
					      step_slots_count(&b->inside.sites)};
	bool no_trap;
	int status;

	status = b->k.env.check_int3(s, false, &no_trap, err, errlen);
	if (status < 0)
		return status == -ENODEV ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	if (vm_create(&b->k.vm, &cfg, err, errlen) < 0)
		return EXIT_HOST_ERROR;
	b->k.vm_made = true;
	if (vm_load_elf(&b->k.vm, &b->g.elf, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	if (write_step_slots(b, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	target_kvm_init(&b->tgt, &b->k.vm);

	struct pipeline_guest pg = {
	    .tgt = &b->tgt,
	    .task = &b->g.task,
	    .funcs = &b->g.elf.funcs,
	    .no_trampoline = "this target has no return trampoline",
	    .backpressure = !s->no_backpressure,
	    .c_funcs = &b->g.c_funcs,
	    .text_read = guest_image_read, /* stub detours are planned from the image as loaded */
	    .text_ctx = &b->g,
	    .no_user = true,
	};

	pg.no_trap = no_trap;
	/* the stub's CPU number: RDTSCP's IA32_TSC_AUX, which the VMM set to each vCPU's index,
	 * else CPUID's APIC ID, also the vCPU's index (this host's PVM has no RDTSCP:
	 * docs/pvm-cpu.md) */
	b->g.task.cpu_aux_mask = b->k.vm.tsc_aux ? ~0u : 0;
	b->g.task.cpu_apic_id = b->k.vm.cpuid_apic_id;
	if (cmd_probe_mode(s, &b->tgt, &b->g.task, NULL, no_trap, &pg.stub, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	status = pipeline_build(b->k.env.p, &pg, out, err, errlen);
	if (!status)
		status = pipeline_start(b->k.env.p, EXIT_BAD_INPUT, err, errlen);
	return status;
}

/* The run ended: the probes out with the vCPUs paused, then the VM stops (kvm_run's wait). */
static void elf_ran(void *ctx)
{
	struct backend_elf *b = ctx;

	if (pipeline_detach(b->k.env.p) < 0)
		cmd_error("restoring the patched sites failed");
}

static void elf_close(void *ctx)
{
	struct backend_elf *b = ctx;

	inside_sites_free(&b->inside);
	if (b->have_g)
		guest_image_close(&b->g);
}

static const struct kvm_guest_ops elf_guest = {
    .open = elf_open,
    .prepare = elf_prepare,
    .ran = elf_ran,
    .close = elf_close,
};

int backend_elf_new(struct backend *b, const struct backend_env *env)
{
	return kvm_run_new(b, env, &elf_guest, sizeof(struct backend_elf));
}

int backend_elf_list_functions(const struct session *s)
{
	struct guest_image g;
	char err[512];
	int werr = 0;

	if (guest_image_open(&g, s->guest, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		return EXIT_BAD_INPUT;
	}
	if (g.no_fentry || s->entry_all) {
		int status = add_entry_sites(s, &g, NULL, err, sizeof(err));

		if (status) {
			cmd_error("%s", err);
			guest_image_close(&g);
			return status;
		}
	}
	for (size_t i = 0; i < g.sites.nr && !werr; i++) {
		errno = 0;
		if (printf("%s%s\n", g.sites.v[i].func->name, g.sites.v[i].entry ? " (entry)" : "") <
		    0)
			werr = errno ? errno : EIO;
	}
	guest_image_close(&g);
	return cmd_finish_out(stdout, NULL, NULL, werr) < 0 ? EXIT_HOST_ERROR : 0;
}
