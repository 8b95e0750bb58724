#include "host/kvm/backend_elf.h"
#include "host/kvm/guest_image.h"
#include "host/kvm/kvm_run.h"
#include "host/kvm/target_kvm.h"
#include "host/kvm/vcpu.h"
#include "host/kvm/vm.h"
#include "host/session/cmd_out.h"
#include "host/session/cmd_probe.h"
#include "host/session/exitcode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct backend_elf {
	struct kvm_run_state k; /* first: the shared ops take the state as a struct kvm_run_state */
	struct guest_image g;
	bool have_g;
	struct target tgt;
};

static int elf_open(void *ctx, char *err, size_t errlen)
{
	struct backend_elf *b = ctx;
	int status;

	if (guest_image_open(&b->g, b->k.env.s->guest, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	b->have_g = true;
	status = pipeline_select(b->k.env.p, b->k.env.s, &b->g.sites, NULL, 0, err, errlen);
	return status;
}

static int elf_prepare(void *ctx, int sfd, FILE *out, FILE *con, char *err, size_t errlen)
{
	struct backend_elf *b = ctx;
	const struct session *s = b->k.env.s;
	struct vm_config cfg = {.smp = s->smp, .mem_mb = s->mem_mb, .console = con};
	bool no_trap;
	int status;

	(void)sfd;
	if (b->k.env.check_int3(s, false, &no_trap, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	if (vm_create(&b->k.vm, &cfg, err, errlen) < 0)
		return EXIT_HOST_ERROR;
	b->k.vm_made = true;
	if (vm_load_elf(&b->k.vm, &b->g.elf, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	target_kvm_init(&b->tgt, &b->k.vm);

	struct pipeline_guest pg = {
	    .tgt = &b->tgt,
	    .task = &b->g.task,
	    .funcs = &b->g.elf.funcs,
	    .no_trampoline = "this target has no return trampoline",
	    .backpressure = !s->no_backpressure,
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

static int elf_wait(void *ctx, int sfd)
{
	struct backend_elf *b = ctx;
	const struct session *s = b->k.env.s;
	struct pipeline *p = b->k.env.p;
	int sig = kvm_run_supervise(&b->k.vm, p, sfd, s), status = 0;

	/* From now on a signal cuts the rest of the trace short (it still ends with its trailer);
	 * without the watcher, a signal waits until the end */
	(void)pipeline_run_ended(p, sfd);
	/* a signal or --timeout is said now, not after the rest of the trace is written */
	if (sig)
		status = kvm_run_end_status(&b->k.vm, sig, s);
	/* Teardown: probes out with the vCPUs paused, then the VM stops. */
	if (pipeline_detach(p) < 0)
		cmd_error("restoring the patched sites failed");
	vcpu_join_all(&b->k.vm);
	if (!sig)
		status = kvm_run_end_status(&b->k.vm, sig, s);
	return status;
}

static int elf_close(void *ctx)
{
	struct backend_elf *b = ctx;
	int con_err = kvm_run_close_vm(&b->k);

	if (b->have_g)
		guest_image_close(&b->g);
	free(b);
	return con_err;
}

static const struct backend_ops elf_ops = {
    .open = elf_open,
    .prepare = elf_prepare,
    .start = kvm_run_start,
    .wait = elf_wait,
    .detach = kvm_run_detach,
    .stats = kvm_run_stats,
    .stats_alone = kvm_run_stats_alone,
    .close = elf_close,
};

int backend_elf_new(struct backend *b, const struct backend_env *env)
{
	struct backend_elf *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->k.env = *env;
	b->ops = &elf_ops;
	b->ctx = e;
	return 0;
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
	for (size_t i = 0; i < g.sites.nr && !werr; i++) {
		errno = 0;
		if (printf("%s\n", g.sites.v[i].func->name) < 0)
			werr = errno ? errno : EIO;
	}
	guest_image_close(&g);
	return cmd_finish_out(stdout, NULL, NULL, werr) < 0 ? EXIT_HOST_ERROR : 0;
}
