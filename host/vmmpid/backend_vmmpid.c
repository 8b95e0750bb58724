#include "host/vmmpid/backend_vmmpid.h"
#include "host/vmmpid/vmmpid_ram.h"
#include "host/vmmpid/vmmpid_vm.h"
#include "host/vmm/proc_mem.h"
#include "host/session/exitcode.h"
#include "host/util/msg_fmt.h"
#include "arch/arch.h"
#include "arch/arch_tlb.h"
#include "vmi/vmi_linux.h"
#include "vmi/vmi_linux_e820.h"
#include "vmi/vmi_linux_find.h"
#include "vmi/vmi_sites.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SITES    1000		    /* fewer NOP5 entries: ftrace has not converted them */
#define PTI_USER_BIT 0x1000ull		    /* PTI: the user PGD is the kernel PGD + 4 KiB */
#define CR4_LA57     (1ull << 12)

struct vmmpid_run {
	struct backend_env env;
	const struct session *s;
	FILE *out;
	struct vmmpid_vm *vm; /* large */
	struct proc_mem mem;
	uint64_t kcr3; /* the kernel's page-table root (a vCPU's CR3, address bits) */
	unsigned kmode; /* 1: 5-level */
	struct vmi_linux l;
	struct vmi_sites sites;
};

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

	return write ? proc_mem_write(&r->mem, gpa, buf, len) : proc_mem_read(&r->mem, gpa, buf, len);
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
	if (vmmpid_ram_prove(kp->ram, kp->nr_ram, cpu, r->vm->nr_cpus, host_read, r, find_kernel,
			     r, &pr, why, sizeof(why)) == 0) {
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
				"pid %d (%s): its kernel is in the mapping at 0x%llx, but its E820 table "
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
	msg_fmt(err, errlen,
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
		msg_fmt(err, errlen,
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

static int vmmpid_open(void *ctx, char *err, size_t errlen)
{
	struct vmmpid_run *r = ctx;

	if (r->s->system_map) {
		msg_fmt(err, errlen,
			"--system-map with --vmm generic: the generic backend reads the guest's own "
			"kallsyms");
		return EXIT_BAD_INPUT;
	}
	return 0;
}

static int vmmpid_prepare(void *ctx, int sfd, FILE *out, FILE *con, char *err, size_t errlen)
{
	struct vmmpid_run *r = ctx;
	int ret, status;

	(void)sfd, (void)con;
	r->out = out;
	ret = vmmpid_vm_open(r->vm, r->s->attach.pid, err, errlen);
	if (ret < 0)
		return vmm_status(ret);
	if (r->s->cmd == CMD_ATTACH) {
		msg_fmt(err, errlen,
			"pid %d (%s): attach with the generic backend (--vmm generic, issue 41) is not "
			"built yet; list-functions --pid is",
			(int)r->vm->kp.pid, r->vm->kp.comm);
		return EXIT_BAD_INPUT;
	}
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
	(void)ctx, (void)err, (void)errlen;
	return 0;
}

static int vmmpid_wait(void *ctx, int sfd)
{
	(void)ctx, (void)sfd;
	return 0;
}

/* Nothing of the VMM is held past prepare, and nothing of the guest changed. */
static int vmmpid_detach(void *ctx, int status)
{
	struct vmmpid_run *r = ctx;

	vmmpid_vm_release(r->vm);
	return status;
}

static int vmmpid_close(void *ctx)
{
	struct vmmpid_run *r = ctx;

	vmmpid_vm_release(r->vm);
	proc_mem_close(&r->mem);
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
	r->s = env->s;
	r->mem.fd = -1;
	r->vm->pi.mem_fd = -1;
	b->ops = &vmmpid_ops;
	b->ctx = r;
	return 0;
}
