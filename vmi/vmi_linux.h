/* Knowledge of a Linux guest kernel: symbols from System.map or kallsyms, the KASLR slide found in
 * guest memory, BTF and modules (vmi_linux.c); the patchable function entries (vmi_site_entry's
 * shapes) and the callees of functions (vmi_linux_sites.c); the current task of each CPU through
 * BTF-derived offsets and what stub probes need per CPU (vmi_linux_percpu.c). Memory is read
 * through a reader (vmi_read_fn, through some CPU's kernel page tables); this module knows nothing
 * of how. */
#ifndef HVT_VMI_LINUX_H
#define HVT_VMI_LINUX_H

#include "vmi/vmi_btf.h"
#include "vmi/vmi_modules.h"
#include "vmi/vmi_patcher.h"
#include "vmi/vmi_read.h"
#include "vmi/vmi_sites.h"
#include "vmi/vmi_symtab.h"
#include "vmi/vmi_task.h"

#include "vmi/vmi_patcher.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define VMI_LINUX_TEXT_BASE    0xffffffff80000000ull /* __START_KERNEL_map */
#define VMI_LINUX_THREAD_SHIFT 14		     /* x86_64 THREAD_SIZE = 16 KiB */

/* Linux's preempt count: its bits for an NMI, a hard interrupt and a softirq being served. */
#define VMI_LINUX_IN_INTERRUPT_MASK (0xf00000u | 0xf0000u | 0x100u)

struct vmi_linux {
	const struct arch *arch;   /* the kernel's ISA; NULL: arch_default() */
	/* arm64: an address inside the kernel's text (a vCPU's PC in the kernel), where its image is
	 * looked for; kept, with arch, by vmi_linux_open_kallsyms */
	uint64_t image_hint;
	uint64_t image_lo, image_hi; /* the image's range once found (0: x86's fixed 1 GiB) */
	struct vmi_symtab funcs;   /* text symbols (t, T, w, W) */
	struct vmi_symtab objects; /* data symbols, per-CPU ones at their section offsets */
	int64_t slide;		   /* applied to funcs and kernel-image objects once found */
	bool slid;
	uint64_t banner, fentry, per_cpu_offset, current_task, btf_start, btf_stop;
	uint64_t preempt_count; /* per-CPU offset of __preempt_count (0: none) */
	uint64_t stext, etext;
	int pid_off, comm_off; /* task_struct offsets from BTF; -1 when unknown */
	struct vmi_btf *btf;   /* the kernel's BTF once read (vmi_linux_read_btf), else NULL */
	void *btf_raw; /* ... and its raw bytes, for vmi_linux_modules' struct module layout */
	size_t btf_raw_size;
	size_t nr_kallsyms;	 /* symbols read from the guest's kallsyms (0: from a file) */
	struct vmi_modules mods; /* loaded modules (vmi_linux_modules); their functions in funcs */
};

/* The ISA of @l's kernel. Pure. */
static inline const struct arch *vmi_linux_arch(const struct vmi_linux *l)
{
	return l->arch ? l->arch : arch_default();
}

#define VMI_LINUX_NAME_MAX 511	      /* longest symbol name (the kernel's KSYM_NAME_LEN - 1) */
#define VMI_LINUX_MAX_SYMS (1u << 22) /* text and data symbols (a distribution kernel has ~200k)   \
				       */

/* Parses System.map at @path. Returns 0, or a negative errno with a reason in @err (-ENOENT
 * missing, -EINVAL not a System.map, -ENODATA without linux_banner or _stext/_etext). Caller frees.
 */
int vmi_linux_open(struct vmi_linux *l, const char *path, char *err, size_t errlen);

/* The System.map part of vmi_linux_open, on the text stream @f (named @path in messages): every
 * line
 * "<hex address> <type> <name>", at most VMI_LINUX_MAX_SYMS kept symbols. Same returns; -EINVAL
 * names the line. Does not close @f. Any thread. */
int vmi_linux_open_map(struct vmi_linux *l, FILE *f, const char *path, char *err, size_t errlen);

/* Fills @l from the guest's own kallsyms tables (vmi_kallsyms_read through @read): the same tables
 * as from a System.map, at their runtime addresses, so l->slid is set and l->slide is the runtime
 * _text minus its link address 0xffffffff81000000. Returns 0, or a negative errno with a reason in
 * @err (vmi_kallsyms_read's; -ENODATA without linux_banner, _stext or _etext; -EINVAL for a text
 * range vmi_linux_find_slide would refuse). Caller frees. */
int vmi_linux_open_kallsyms(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err,
			    size_t errlen);

/* vmi_linux_open_kallsyms for a kernel of ISA @arch (NULL: arch_default()); an arm64 kernel's image
 * is found from @hint, an address inside its text (a vCPU's PC in the kernel): vmi_linux_arm64_image,
 * -ESRCH without one. */
int vmi_linux_open_kallsyms_of(struct vmi_linux *l, const struct arch *arch, uint64_t hint,
			       vmi_read_fn read, void *ctx, char *err, size_t errlen);

/* The kernel release after "Linux version " at linux_banner (e.g. "6.1.0-57-cloud-amd64"),
 * printable bytes only, into @buf; "" when unreadable. */
void vmi_linux_release(const struct vmi_linux *l, vmi_read_fn read, void *ctx, char *buf,
		       size_t len);

/* Finds the KASLR slide by looking for "Linux version " at linux_banner in every 2 MiB-aligned
 * place the kernel image can be (its 1 GiB: at most 520 reads), and rebases the symbols. Returns 0,
 * -ESRCH with a reason, -EINVAL (with the values) when _stext.._etext is empty, inverted or not
 * within the image's 1 GiB, or -EINTR as soon as @read fails so (a reader can stop the scan that
 * way). */
int vmi_linux_find_slide(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err,
			 size_t errlen);

/* Reads the kernel's own BTF (__start_BTF..__stop_BTF in guest memory, parsed with libbpf) into
 * l->btf, kept until vmi_linux_close, and the struct offsets of task_struct.pid and .comm from it.
 * Returns 0, or -ENOENT when the kernel has no BTF (offsets stay -1), -EINVAL when it is refused.
 */
int vmi_linux_read_btf(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err, size_t errlen);

/* Offsets of @member in struct @type of the raw BTF @data (exposed for tests). Returns the byte
 * offset or a negative errno. */
int vmi_btf_member_offset(const void *data, size_t size, const char *type, const char *member);

/* Loaded modules: walks the guest's `modules` list (struct layouts from the BTF vmi_linux_read_btf
 * kept) and adds each module's functions to l->funcs, re-sorted: sites built before are stale
 * (build them again). Returns the number of module functions, or a negative errno with @err
 * (-ENOENT without BTF or a `modules` symbol; vmi_modules_read's). */
long vmi_linux_modules(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err, size_t errlen);

/* Checks that _stext.._etext is a non-empty range inside the kernel image's 1 GiB. 0, or -EINVAL
 * with @err naming the values. Pure. */
int vmi_linux_check_text(const struct vmi_linux *l, char *err, size_t errlen);

/* The traceable functions: every text symbol in _stext.._etext whose first bytes are a site
 * (vmi_site_entry: NOP5, after ENDBR64 or a sealed one) in guest memory, read in bulk, and those of
 * the module functions (vmi_linux_modules) in their module's text. Returns 0, -EINVAL for a text
 * range vmi_linux_find_slide would refuse, or a negative errno (@read's). */
int vmi_linux_sites(struct vmi_linux *l, vmi_read_fn read, void *ctx, struct vmi_sites *sites);

/* Whether the kernel's ftrace has converted its call sites at boot, as the kernel itself counts
 * them: 1 once its ftrace_update_tot_cnt (sites made NOPs by ftrace_update_code, set when a whole
 * batch is done) is nonzero, 0 while it is 0, -ENOENT when the kernel has no such symbol (no ftrace,
 * or another layout: the caller cannot tell from it), or @read's negative errno. */
int vmi_linux_ftrace_converted(const struct vmi_linux *l, vmi_read_fn read, void *ctx);

/* The guest's text patchers found in its symbols, at most @max, into @out; returns how many (none
 * of a kind: the guest's patching of that kind cannot be seen coming). Pure. */
size_t vmi_linux_text_patchers(const struct vmi_linux *l, struct vmi_patcher *out, size_t max);
/* The names of the patchers of a kind, for a message ("a, b"). Pure. */
const char *vmi_linux_patcher_names(bool detours);

/* Marks in @selected (one flag per site of @sites) the sites of @roots and of every function
 * reachable from them through direct calls and jumps (e8/e9 rel32 to a site) in guest memory, at
 * most @depth calls deep. Indirect calls are not followed. Returns the number of sites marked or a
 * negative errno. */
long vmi_linux_callees(struct vmi_linux *l, vmi_read_fn read, void *ctx,
		       const struct vmi_sites *sites, const size_t *roots, size_t nr_roots,
		       unsigned depth, bool *selected);

/* Task layout for vmi_task_current: the GVA of CPU @cpu's current_task pointer is
 * __per_cpu_offset[cpu] + &current_task. Fills @out for @nr_cpus CPUs; without BTF, no task info.
 */
int vmi_linux_task_layout(struct vmi_linux *l, vmi_read_fn read, void *ctx, unsigned nr_cpus,
			  struct vmi_task_layout *out);

/* Where stub probes can live in this kernel (docs/how-it-works.md, "Where the stub lives"):
 * guest-physical [*@phys_lo, *@phys_hi) in the first MiB, which Linux >= 5.13 reserves whole at
 * boot and never allocates from, minus the real-mode trampoline carved out of it; and *@va, a 2
 * MiB-aligned kernel address past _end in the kernel-image mapping, which nothing else maps.
 * Returns 0, or -ENOTSUP with a reason in @err. */
int vmi_linux_stub_area(struct vmi_linux *l, vmi_read_fn read, void *ctx, uint64_t *phys_lo,
			uint64_t *phys_hi, uint64_t *va, char *err, size_t errlen);

/* Where the CPU number (cpu_number) is for %gs: its per-CPU offset, or (6.15+, per-CPU data not
 * zero-based) its kernel address; on 6.2-6.14, which have no such symbol, pcpu_hot's member
 * cpu_number (its offset from the BTF read by vmi_linux_read_btf); for stub probes. False if the
 * symbols (or the BTF) lack it. */
bool vmi_linux_cpu_gs(const struct vmi_linux *l, uint64_t *off);

/* Where the preempt count is for %gs (x86-64: __preempt_count, or pcpu_hot's member on 6.2-6.14),
 * as vmi_linux_cpu_gs's; for the stub's counting routines. False where the symbols (or the BTF) lack
 * it, or on an ISA whose preempt count is not per CPU (arm64 keeps it in the task). */
bool vmi_linux_preempt_gs(const struct vmi_linux *l, uint64_t *off);

/* Linux writes IA32_TSC_AUX = (node << 12) | cpu on every CPU (for vgetcpu) when its boot CPU has
 * RDTSCP (or RDPID). Reads boot_cpu_data.x86_capability (BTF offset) through @read: 0 and *@mask =
 * VMI_LINUX_TSC_AUX_CPU_MASK if the kernel saw RDTSCP (RDTSCP's ECX & mask is the CPU number
 * then), -ENOTSUP if it did not, -ENOENT without the symbol or BTF, -EFAULT if unreadable. The bit
 * is the guest's word: a guest that lies about it only faults itself. */
#define VMI_LINUX_TSC_AUX_CPU_MASK 0xfffu
int vmi_linux_tsc_aux(const struct vmi_linux *l, vmi_read_fn read, void *ctx, uint32_t *mask);

void vmi_linux_close(struct vmi_linux *l);

#endif
