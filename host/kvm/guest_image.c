#include "host/kvm/guest_image.h"
#include "host/session/kernel_isa.h"
#include "vmi/vmi_dwarf.h"
#include "host/util/msg_fmt.h"

#include <elf.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The freestanding guest's task ABI: `hvtrace_current[N]` points at {int32 pid; char comm[16]}. */
#define TASK_SYMBOL "hvtrace_current"
#define TASK_PID_OFF 0
#define TASK_COMM_OFF 4
/* Stub probes: `hvtrace_cpu_gs` (u64) holds the offset of the u32 CPU number in the GS-based per-CPU
 * area. */
#define CPU_GS_SYMBOL "hvtrace_cpu_gs"

int guest_image_open(struct guest_image *g, const char *path, char *err, size_t errlen)
{
	const struct vmi_sym *cur;
	char why[256];
	int ret;

	memset(g, 0, sizeof(*g));
	ret = kernel_isa_check(path, NULL, err, errlen);
	if (ret < 0)
		return ret;
	ret = vmi_elf_open(&g->elf, path, 0, err, errlen);
	if (ret < 0)
		return ret;
	g->arch = arch_of_elf(EM_X86_64); /* the only machine vmi_elf_open takes */
	g->no_fentry = !g->elf.nr_mcount;
	if (g->no_fentry && !g->elf.funcs.nr) {
		msg_fmt(err, errlen,
			"%s: no __mcount_loc section and no function symbols: nothing to trace "
			"(build the guest with -pg -mfentry -mnop-mcount -mrecord-mcount, or keep "
			"its symbol table)",
			path);
		ret = -ENODATA;
		goto fail;
	}
	ret = vmi_sites_build(&g->sites, g->elf.mcount, g->elf.nr_mcount, &g->elf.funcs);
	if (ret < 0) {
		msg_fmt(err, errlen, "out of memory");
		goto fail;
	}
	if (!g->sites.nr && !g->no_fentry) {
		msg_fmt(err, errlen, "%s: __mcount_loc lists no address inside a function", path);
		ret = -ENODATA;
		goto fail;
	}
	ret = (int)vmi_dwarf_c_functions(g->elf.file, g->elf.file_size, &g->c_funcs, why,
					 sizeof(why));
	if (ret < 0) {
		msg_fmt(err, errlen, "%s: %s", path, ret == -ENOMEM ? "out of memory" : why);
		goto fail;
	}
	for (size_t i = 0; i < g->sites.nr; i++) {
		const uint8_t *b = vmi_elf_bytes_at(&g->elf, g->sites.v[i].addr, g->arch->site_len);

		if (!b) {
			msg_fmt(err, errlen, "%s: site 0x%" PRIx64 " is outside the loaded image",
				g->sites.v[i].func->name, g->sites.v[i].addr);
			ret = -ERANGE;
			goto fail;
		}
		ret = vmi_site_check(g->arch, &g->sites.v[i], b, err, errlen);
		if (ret < 0)
			goto fail;
	}
	cur = vmi_symtab_find(&g->elf.objects, TASK_SYMBOL);
	g->task = (struct vmi_task_layout){
		.valid = cur != NULL,
		.pid_off = TASK_PID_OFF,
		.comm_off = TASK_COMM_OFF,
	};
	for (unsigned c = 0; cur && c < VMI_MAX_CPUS; c++)
		g->task.current_slot[c] = cur->addr + 8ull * c;
	const struct vmi_sym *gs = vmi_symtab_find(&g->elf.objects, CPU_GS_SYMBOL);
	const uint8_t *v = gs ? vmi_elf_bytes_at(&g->elf, gs->addr, 8) : NULL;

	if (v) {
		memcpy(&g->task.cpu_gs_off, v, 8);
		g->task.has_cpu_gs = true;
	}
	return 0;
fail:
	guest_image_close(g);
	return ret;
}

int guest_image_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	const struct guest_image *g = ctx;
	const uint8_t *b = vmi_elf_bytes_at(&g->elf, gva, len);

	if (!b)
		return -EFAULT;
	memcpy(buf, b, len);
	return 0;
}

void guest_image_close(struct guest_image *g)
{
	vmi_symtab_free(&g->c_funcs);
	vmi_sites_free(&g->sites);
	vmi_elf_close(&g->elf);
}
