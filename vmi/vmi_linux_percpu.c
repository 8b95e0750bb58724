#include "vmi/vmi_linux.h"
#include "vmi/vmi_btf.h"
#include "host/util/msg_fmt.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BANNER "Linux version " /* what linux_banner starts with */

/* THREAD_SIZE from the init task's stack (init_stack up to __end_init_task, __end_init_stack in
 * newer kernels) when its symbols give a power of two from 4 KiB to 64 KiB, else x86_64's. */
static uint32_t thread_size(const struct vmi_linux *l)
{
	const struct vmi_sym *lo = vmi_symtab_find(&l->objects, "init_stack");
	const struct vmi_sym *hi = vmi_symtab_find(&l->objects, "__end_init_task");
	uint64_t n;

	if (!hi)
		hi = vmi_symtab_find(&l->objects, "__end_init_stack");
	n = lo && hi && hi->addr > lo->addr ? hi->addr - lo->addr : 0;
	if (n >= 4096 && n <= 65536 && !(n & (n - 1)))
		return (uint32_t)n;
	return 1u << VMI_LINUX_THREAD_SHIFT;
}

/* The task list from BTF and init_task (list->valid stays false when any part is missing). */
static void task_list(const struct vmi_linux *l, struct vmi_task_list *list)
{
	const struct vmi_sym *init = vmi_symtab_find(&l->objects, "init_task");
	int off[7];

	memset(list, 0, sizeof(*list));
	if (!l->btf || !init)
		return;
	off[0] = vmi_btf_struct_offset(l->btf, "task_struct", "tasks");
	off[1] = vmi_btf_struct_offset(l->btf, "task_struct", "signal");
	off[2] = vmi_btf_struct_offset(l->btf, "signal_struct", "thread_head");
	off[3] = vmi_btf_struct_offset(l->btf, "task_struct", "thread_node");
	off[4] = vmi_btf_struct_offset(l->btf, "task_struct", "stack");
	off[5] = vmi_btf_struct_offset(l->btf, "task_struct", "thread");
	off[6] = vmi_btf_struct_offset(l->btf, "thread_struct", "sp");
	for (int i = 0; i < 7; i++)
		if (off[i] < 0)
			return;
	*list = (struct vmi_task_list){
	    .valid = true,
	    .init_task = init->addr,
	    .tasks_off = (unsigned)off[0],
	    .signal_off = (unsigned)off[1],
	    .thread_head_off = (unsigned)off[2],
	    .thread_node_off = (unsigned)off[3],
	    .stack_off = (unsigned)off[4],
	    .sp_off = (unsigned)(off[5] + off[6]),
	    .stack_size = thread_size(l),
	};
}

int vmi_linux_task_layout(struct vmi_linux *l, vmi_read_fn read, void *ctx, unsigned nr_cpus,
			  struct vmi_task_layout *out)
{
	/* arm64: `current` is a register's (SP_EL0), which the tracer reads at each hit */
	bool in_reg = vmi_linux_arch(l)->current_task != NULL;

	memset(out, 0, sizeof(*out));
	if (l->pid_off < 0 || l->comm_off < 0 ||
	    (!in_reg && (!l->per_cpu_offset || !l->current_task)))
		return -ENOENT;
	for (unsigned c = 0; c < nr_cpus && c < VMI_MAX_CPUS && !in_reg; c++) {
		uint64_t off;
		int ret = read(ctx, l->per_cpu_offset + 8ull * c, &off, 8);

		if (ret < 0)
			return ret;
		out->current_slot[c] = off + l->current_task;
		out->preempt_slot[c] = l->preempt_count ? off + l->preempt_count : 0;
	}
	out->in_interrupt_mask = VMI_LINUX_IN_INTERRUPT_MASK;
	out->pid_off = (unsigned)l->pid_off;
	out->comm_off = (unsigned)l->comm_off;
	task_list(l, &out->list);
	out->valid = true;
	return 0;
}

#define LOW_LO	 0x10000ull /* below: the BIOS data areas */
#define LOW_HI	 0x9f000ull /* above: the EBDA, then no RAM up to 1 MiB */
#define PMD_SIZE 0x200000ull

/* "MAJOR.MINOR" after "Linux version " in @banner (guest memory, NUL-terminated): each 1 to 3
 * digits (sscanf's %u overflowed on a forged banner). */
static bool banner_version(const char *banner, unsigned *major, unsigned *minor)
{
	const char *s = banner + sizeof(BANNER) - 1;
	unsigned *v[2] = {major, minor};

	if (strncmp(banner, BANNER, sizeof(BANNER) - 1))
		return false;
	for (int k = 0; k < 2; k++) {
		unsigned n = 0;

		for (*v[k] = 0; isdigit((unsigned char)*s) && n < 3; s++, n++)
			*v[k] = *v[k] * 10 + (unsigned)(*s - '0');
		if (!n || isdigit((unsigned char)*s) || (k == 0 && *s++ != '.')) {
			*major = *minor = 0;
			return false;
		}
	}
	return true;
}

int vmi_linux_stub_area(struct vmi_linux *l, vmi_read_fn read, void *ctx, uint64_t *phys_lo,
			uint64_t *phys_hi, uint64_t *va, char *err, size_t errlen)
{
	const struct vmi_sym *end = vmi_symtab_find(&l->objects, "_end");
	const struct vmi_sym *rmh = vmi_symtab_find(&l->objects, "real_mode_header");
	const struct vmi_sym *pob = vmi_symtab_find(&l->objects, "page_offset_base");
	const struct vmi_sym *rb = vmi_symtab_find(&l->objects, "real_mode_blob");
	const struct vmi_sym *rbe = vmi_symtab_find(&l->objects, "real_mode_blob_end");
	char banner[64] = "";
	unsigned major = 0, minor = 0;
	uint64_t hdr, base, t_lo, t_hi, lo = LOW_LO, hi = LOW_HI;

	if (!end || !rmh || !pob || !rb || !rbe) {
		msg_fmt(err, errlen,
			"stub probes: the System.map lacks _end, real_mode_header, "
			"page_offset_base or real_mode_blob");
		return -ENOTSUP;
	}
	if (read(ctx, l->banner, banner, sizeof(banner) - 1) < 0 ||
	    !banner_version(banner, &major, &minor) || major * 1000 + minor < 5013) {
		msg_fmt(err, errlen,
			"stub probes: kernel %u.%u reserves only part of the first MiB "
			"(5.13 or later needed)",
			major, minor);
		return -ENOTSUP;
	}
	if (read(ctx, rmh->addr, &hdr, 8) < 0 || read(ctx, pob->addr, &base, 8) < 0 || hdr < base) {
		msg_fmt(err, errlen,
			"stub probes: cannot read real_mode_header / page_offset_base");
		return -ENOTSUP;
	}
	/* the trampoline (real_mode_header points at its start) is the one thing Linux keeps there
	 */
	t_lo = (hdr - base) & ~0xfffull;
	t_hi = (hdr - base + (rbe->addr - rb->addr) + 0xfff) & ~0xfffull;
	if (t_lo < hi && t_hi > lo) {
		if (t_lo - lo >= (t_hi < hi ? hi - t_hi : 0))
			hi = t_lo > lo ? t_lo : lo;
		else
			lo = t_hi;
	}
	if (hi <= lo) {
		msg_fmt(err, errlen, "stub probes: no free memory left in the first MiB");
		return -ENOTSUP;
	}
	*phys_lo = lo;
	*phys_hi = hi;
	*va = ((end->addr + PMD_SIZE - 1) & ~(PMD_SIZE - 1)) + PMD_SIZE;
	return 0;
}

bool vmi_linux_cpu_gs(const struct vmi_linux *l, uint64_t *off)
{
	const struct vmi_sym *cn = vmi_symtab_find(&l->objects, "cpu_number");
	const struct vmi_sym *hot = vmi_symtab_find(&l->objects, "pcpu_hot");
	int in_hot = hot && l->btf ? vmi_btf_struct_offset(l->btf, "pcpu_hot", "cpu_number") : -1;

	/* an offset in zero-based per-CPU data, or (6.15+) a kernel address: %gs wraps to it */
	if (cn) {
		*off = cn->addr;
		return true;
	}
	/* 6.2-6.14: no cpu_number symbol, the member of the per-CPU struct pcpu_hot (a cache line
	 * of the kernel's; an offset past a page is a BTF that lies, never read through %gs) */
	if (in_hot < 0 || in_hot > 4096 - 4)
		return false;
	*off = hot->addr + (uint64_t)in_hot;
	return true;
}

bool vmi_linux_preempt_gs(const struct vmi_linux *l, uint64_t *off)
{
	if (vmi_linux_arch(l)->current_task || !l->preempt_count)
		return false;
	*off = l->preempt_count;
	return true;
}

#define X86_CAP_WORD_8000_0001_EDX 1 /* Linux's x86_capability word of CPUID 0x80000001 EDX */
#define X86_CAP_RDTSCP_BIT	   27

int vmi_linux_tsc_aux(const struct vmi_linux *l, vmi_read_fn read, void *ctx, uint32_t *mask)
{
	const struct vmi_sym *bcd = vmi_symtab_find(&l->objects, "boot_cpu_data");
	int off = l->btf ? vmi_btf_struct_offset(l->btf, "cpuinfo_x86", "x86_capability") : -1;
	uint32_t word = 0;

	*mask = 0;
	if (!bcd || off < 0 || off > 4096)
		return -ENOENT;
	if (read(ctx, bcd->addr + (uint64_t)off + 4 * X86_CAP_WORD_8000_0001_EDX, &word, 4) < 0)
		return -EFAULT;
	if (!(word >> X86_CAP_RDTSCP_BIT & 1))
		return -ENOTSUP;
	*mask = VMI_LINUX_TSC_AUX_CPU_MASK;
	return 0;
}
