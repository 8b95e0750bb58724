#include "vmi/vmi_linux.h"
#include "vmi/vmi_linux_arm64.h"
#include "vmi/vmi_btf.h"
#include "vmi/vmi_elf.h"
#include "vmi/vmi_file.h"
#include "vmi/vmi_kallsyms.h"
#include "vmi/vmi_modules.h"
#include "host/util/msg_fmt.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINUX_LINK_TEXT	  0xffffffff81000000ull /* where _text is linked */
#define KASLR_ALIGN	  0x200000ull		/* CONFIG_PHYSICAL_ALIGN */
#define KERNEL_IMAGE_SIZE 0x40000000ull		/* 1 GiB of virtual room for the image */
#define BANNER		  "Linux version "

_Static_assert(VMI_KALLSYMS_NAME_MAX == VMI_LINUX_NAME_MAX, "one longest symbol name");
_Static_assert(VMI_KALLSYMS_MAX_SYMS == VMI_LINUX_MAX_SYMS, "one symbol budget");

/* Symbols of an ELF vmlinux, through libelf. */
static int open_vmlinux(struct vmi_linux *l, const char *path, char *err, size_t errlen)
{
	struct vmi_elf img;
	int ret = vmi_elf_open(&img, path, 0, err, errlen);

	if (ret < 0)
		return ret;
	l->funcs = img.funcs;
	l->objects = img.objects;
	memset(&img.funcs, 0, sizeof(img.funcs));
	memset(&img.objects, 0, sizeof(img.objects));
	vmi_elf_close(&img);
	return 0;
}

static int resolve(struct vmi_linux *l, const char *path, size_t lines, char *err, size_t errlen);

/* The table a symbol of kallsyms/System.map @type goes to: text (t, T, w, W) to funcs, data (d, b,
 * r, v and, with @absolute, kallsyms' 'A' of per-CPU symbols) to objects; NULL for any other. */
static struct vmi_symtab *table_of(struct vmi_linux *l, char type, bool absolute)
{
	switch (type) {
	case 'T':
	case 't':
	case 'W':
	case 'w':
		return &l->funcs;
	case 'D':
	case 'd':
	case 'B':
	case 'b':
	case 'R':
	case 'r':
	case 'V':
	case 'v':
		return &l->objects;
	case 'A':
		return absolute ? &l->objects : NULL;
	default:
		return NULL;
	}
}

/* One System.map (or kallsyms) line of @len bytes, without its '\n': "<hex address> <type> <name>",
 * separated by blanks; anything after the name and a blank (kallsyms' "[module]") is ignored. The
 * address has 1 to 16 hex digits, the name 1 to VMI_LINUX_NAME_MAX bytes, no byte is NUL. Points
 * *@name into @line. Returns 0, or -EINVAL with a reason (NULL for "not a System.map line"). */
static int map_line(const char *line, size_t len, uint64_t *addr, char *type, const char **name,
		    size_t *name_len, const char **why)
{
	size_t i = 0, digits = 0, n;

	*why = NULL;
	if (memchr(line, 0, len))
		return -EINVAL;
	*addr = 0;
	for (; i < len && isxdigit((unsigned char)line[i]); i++, digits++) {
		if (digits == 16) {
			*why = "address wider than 64 bits";
			return -EINVAL;
		}
		*addr = *addr << 4 | (uint64_t)(isdigit((unsigned char)line[i])
						    ? line[i] - '0'
						    : (tolower((unsigned char)line[i]) - 'a' + 10));
	}
	if (!digits || i == len || (line[i] != ' ' && line[i] != '\t'))
		return -EINVAL;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i + 1 >= len || !isalpha((unsigned char)line[i]) ||
	    (line[i + 1] != ' ' && line[i + 1] != '\t'))
		return -EINVAL;
	*type = line[i];
	for (i += 1; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	for (n = 0; i + n < len && !isspace((unsigned char)line[i + n]); n++)
		;
	if (!n)
		return -EINVAL;
	if (n > VMI_LINUX_NAME_MAX) {
		*why = "symbol name too long";
		return -EINVAL;
	}
	/* past the name only blanks, or a blank and more (kallsyms), or a '\r' */
	if (i + n < len && line[i + n] != ' ' && line[i + n] != '\t' &&
	    !(line[i + n] == '\r' && i + n + 1 == len))
		return -EINVAL;
	*name = line + i;
	*name_len = n;
	return 0;
}

int vmi_linux_open_map(struct vmi_linux *l, FILE *f, const char *path, char *err, size_t errlen)
{
	char *line = NULL, name[VMI_LINUX_NAME_MAX + 1];
	size_t cap = 0, lines = 0;
	ssize_t len;
	int ret = 0;

	memset(l, 0, sizeof(*l));
	l->pid_off = l->comm_off = -1;
	while ((len = getline(&line, &cap, f)) >= 0) {
		struct vmi_symtab *t;
		const char *why, *nm;
		uint64_t addr;
		size_t nlen;
		char type;

		lines++;
		if (len > 0 && line[len - 1] == '\n')
			len--;
		/* Debian's image package ships a System.map of one line and no symbols */
		if (lines == 1 && memmem(line, (size_t)len, "The real System.map is in", 25)) {
			snprintf(
			    err, errlen,
			    "%s holds no symbols (Debian puts the real System.map in the kernel's "
			    "-dbg package): omit --system-map to read the symbols from the guest's "
			    "kallsyms",
			    path);
			ret = -EINVAL;
			goto out;
		}
		if (map_line(line, (size_t)len, &addr, &type, &nm, &nlen, &why) < 0) {
			msg_fmt(err, errlen, "%s:%zu: %s", path, lines,
				why ? why : "not a System.map line");
			ret = -EINVAL;
			goto out;
		}
		t = table_of(l, type, false);
		if (!t)
			continue;
		if (l->funcs.nr + l->objects.nr >= VMI_LINUX_MAX_SYMS) {
			msg_fmt(err, errlen, "%s:%zu: more than %u symbols", path, lines,
				VMI_LINUX_MAX_SYMS);
			ret = -EINVAL;
			goto out;
		}
		memcpy(name, nm, nlen);
		name[nlen] = 0;
		if (vmi_symtab_add(t, addr, 0, name) < 0) {
			msg_fmt(err, errlen, "%s: out of memory", path);
			ret = -ENOMEM;
			goto out;
		}
	}
	if (ferror(f)) {
		ret = -EIO;
		msg_fmt(err, errlen, "%s: read: %s", path, strerror(errno ? errno : EIO));
		goto out;
	}
	vmi_symtab_sort(&l->funcs);
	vmi_symtab_sort(&l->objects);
	ret = resolve(l, path, lines, err, errlen);
out:
	free(line);
	if (ret < 0)
		vmi_linux_close(l);
	return ret;
}

int vmi_linux_open(struct vmi_linux *l, const char *path, char *err, size_t errlen)
{
	/* a regular file, opened without blocking (a FIFO is refused, not waited on) */
	int fd = vmi_file_open(NULL, path, 0, NULL, err, errlen), ret = 0;
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	char magic[4];

	memset(l, 0, sizeof(*l));
	l->pid_off = l->comm_off = -1;
	if (fd < 0)
		return fd;
	if (!f) {
		ret = -errno;
		msg_fmt(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	if (fread(magic, 1, 4, f) == 4 && !memcmp(magic, "\177ELF", 4)) {
		fclose(f);
		ret = open_vmlinux(l, path, err, errlen);
		if (ret == 0)
			ret = resolve(l, path, l->funcs.nr + l->objects.nr, err, errlen);
		if (ret < 0)
			vmi_linux_close(l);
		return ret;
	}
	rewind(f);
	ret = vmi_linux_open_map(l, f, path, err, errlen);
	fclose(f);
	return ret;
}

/* The symbols hvtrace needs, by name. */
static int resolve(struct vmi_linux *l, const char *path, size_t lines, char *err, size_t errlen)
{
	const struct vmi_sym *banner = vmi_symtab_find(&l->objects, "linux_banner");
	const struct vmi_sym *st = vmi_symtab_find(&l->funcs, "_stext");
	/* (arm64 types _etext D: it is the start of the data after the text) */
	const struct vmi_sym *et = vmi_symtab_find(&l->funcs, "_etext")
					   ?: vmi_symtab_find(&l->objects, "_etext");
	const struct vmi_sym *fe = vmi_symtab_find(&l->funcs, "__fentry__");
	const struct vmi_sym *pco = vmi_symtab_find(&l->objects, "__per_cpu_offset");
	const struct vmi_sym *ct = vmi_symtab_find(&l->objects, "current_task");
	const struct vmi_sym *pc = vmi_symtab_find(&l->objects, "__preempt_count");
	const struct vmi_sym *bs = vmi_symtab_find(&l->objects, "__start_BTF");
	const struct vmi_sym *be = vmi_symtab_find(&l->objects, "__stop_BTF");

	if (!banner || !st || !et) {
		msg_fmt(err, errlen,
			"%s: no linux_banner, _stext or _etext (%zu symbols): not a %s", path,
			lines, "System.map or vmlinux of a Linux kernel with its symbols");
		return -ENODATA;
	}
	l->banner = banner->addr;
	l->stext = st->addr;
	l->etext = et->addr;
	l->fentry = fe ? fe->addr : 0;
	l->per_cpu_offset = pco ? pco->addr : 0;
	l->current_task = ct ? ct->addr : 0;
	l->preempt_count = pc ? pc->addr : 0;
	l->btf_start = bs ? bs->addr : 0;
	l->btf_stop = be ? be->addr : 0;
	return 0;
}

static void rebase(struct vmi_symtab *t, int64_t slide)
{
	for (size_t i = 0; i < t->nr; i++)
		if (t->syms[i].addr >= VMI_LINUX_TEXT_BASE)
			t->syms[i].addr += slide;
}

static uint64_t slid(uint64_t a, int64_t slide)
{
	return a && a >= VMI_LINUX_TEXT_BASE ? a + slide : a;
}

/* _stext.._etext must be a non-empty range inside the kernel image's 1 GiB: anything else would
 * have the scans read up to 2^64 bytes, or wrap the text's length. 0, or -EINVAL with @err naming
 * the values. */
int vmi_linux_check_text(const struct vmi_linux *l, char *err, size_t errlen)
{
	if (l->etext < l->stext) {
		msg_fmt(err, errlen,
			"_etext 0x%" PRIx64 " is below _stext 0x%" PRIx64
			": not the text of a kernel",
			l->etext, l->stext);
		return -EINVAL;
	}
	if (l->etext == l->stext) {
		msg_fmt(err, errlen, "_stext and _etext are both 0x%" PRIx64 ": no kernel text",
			l->stext);
		return -EINVAL;
	}
	uint64_t lo = l->image_hi ? l->image_lo : VMI_LINUX_TEXT_BASE,
		 hi = l->image_hi ? l->image_hi : VMI_LINUX_TEXT_BASE + KERNEL_IMAGE_SIZE;

	if (l->stext < lo || l->etext > hi) {
		msg_fmt(err, errlen,
			"_stext 0x%" PRIx64 " .. _etext 0x%" PRIx64 " is not within the "
			"kernel image (0x%" PRIx64 "-0x%" PRIx64 ")",
			l->stext, l->etext, lo, hi);
		return -EINVAL;
	}
	return 0;
}

int vmi_linux_find_slide(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err, size_t errlen)
{
	char buf[sizeof(BANNER) - 1];
	int64_t lo = -(int64_t)(LINUX_LINK_TEXT - VMI_LINUX_TEXT_BASE), hi;
	int64_t found = INT64_MIN;
	int ret = vmi_linux_check_text(l, err, errlen);

	if (ret < 0)
		return ret;
	/* the image's end stays inside its 1 GiB: at most 512 + 8 candidates */
	hi = (int64_t)(VMI_LINUX_TEXT_BASE + KERNEL_IMAGE_SIZE - l->etext);
	/* no KASLR first, then every aligned place the image fits */
	for (int64_t s = lo; found == INT64_MIN && s <= hi; s += (int64_t)KASLR_ALIGN) {
		int64_t cand = s == lo ? 0 : (s == 0 ? lo : s);

		ret = read(ctx, l->banner + cand, buf, sizeof(buf));
		if (ret == -EINTR) {
			msg_fmt(err, errlen, "KASLR: the scan was stopped");
			return ret;
		}
		if (ret == 0 && !memcmp(buf, BANNER, sizeof(buf)))
			found = cand;
	}
	if (found == INT64_MIN) {
		msg_fmt(err, errlen,
			"KASLR: no \"%s\" at linux_banner (0x%" PRIx64 ") at any 2 MiB offset: the "
			"System.map is for another kernel (omit --system-map to read the symbols "
			"from the guest's kallsyms)",
			BANNER, l->banner);
		return -ESRCH;
	}
	l->slide = found;
	l->slid = true;
	rebase(&l->funcs, found);
	rebase(&l->objects, found);
	l->banner = slid(l->banner, found);
	l->stext = slid(l->stext, found);
	l->etext = slid(l->etext, found);
	l->fentry = slid(l->fentry, found);
	l->per_cpu_offset = slid(l->per_cpu_offset, found);
	l->btf_start = slid(l->btf_start, found);
	l->btf_stop = slid(l->btf_stop, found);
	/* per-CPU offsets (zero-based per-CPU data, before 6.15) stay; kernel addresses (6.15+)
	 * slide
	 */
	l->current_task = slid(l->current_task, found);
	l->preempt_count = slid(l->preempt_count, found);
	return 0;
}

/* One kallsyms symbol into the tables, with System.map's semantics: text (t, T, w, W) to funcs,
 * data to objects, per-CPU ones (kallsyms types them 'A' under KALLSYMS_ABSOLUTE_PERCPU) at their
 * section offsets. */
static int add_kallsym(void *ctx, uint64_t addr, char type, const char *name)
{
	struct vmi_linux *l = ctx;
	struct vmi_symtab *t;

	t = table_of(l, type, true);
	if (!t)
		return 0;
	if (l->funcs.nr + l->objects.nr >= VMI_LINUX_MAX_SYMS)
		return -EOVERFLOW;
	return vmi_symtab_add(t, addr, 0, name);
}

/* Address of @name in either table (unsorted is fine), 0 when absent. */
static uint64_t any_addr(const struct vmi_linux *l, const char *name)
{
	const struct vmi_sym *s = vmi_symtab_find(&l->funcs, name);

	if (!s)
		s = vmi_symtab_find(&l->objects, name);
	return s ? s->addr : 0;
}

/* A symbol's kind from the section it lies in, not kallsyms' letter alone: text-typed symbols
 * inside .rodata, .data or .bss and outside _text.._etext (6.18 types data T once .data is flagged
 * executable: `modules`, `boot_cpu_data`; 6.12's _etext is __start_rodata) move to the objects.
 * Before vmi_symtab_sort. 0 or -ENOMEM. */
static int file_by_section(struct vmi_linux *l)
{
	static const char *const bounds[][2] = {{"__start_rodata", "__end_rodata"},
						{"_sdata", "_edata"},
						{"__bss_start", "__bss_stop"}};
	uint64_t lo[3], hi[3], text = any_addr(l, "_text"), etext = any_addr(l, "_etext");
	size_t kept = 0;

	for (int k = 0; k < 3; k++) {
		lo[k] = any_addr(l, bounds[k][0]);
		hi[k] = any_addr(l, bounds[k][1]);
	}
	for (size_t i = 0; i < l->funcs.nr; i++) {
		struct vmi_sym *s = &l->funcs.syms[i];
		bool data = false;

		for (int k = 0; k < 3 && !(s->addr >= text && s->addr <= etext); k++)
			data |= lo[k] && lo[k] < hi[k] && s->addr >= lo[k] && s->addr < hi[k];
		if (!data) {
			l->funcs.syms[kept++] = *s;
			continue;
		}
		if (vmi_symtab_add(&l->objects, s->addr, 0, s->name) < 0) {
			for (size_t j = i; j < l->funcs.nr; j++)
				l->funcs.syms[kept++] = l->funcs.syms[j];
			l->funcs.nr = kept;
			return -ENOMEM;
		}
		free(s->name);
	}
	l->funcs.nr = kept;
	return 0;
}

int vmi_linux_open_kallsyms(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err,
			    size_t errlen)
{
	return vmi_linux_open_kallsyms_of(l, NULL, 0, read, ctx, err, errlen);
}

int vmi_linux_open_kallsyms_of(struct vmi_linux *l, const struct arch *arch, uint64_t hint,
			       vmi_read_fn read, void *ctx, char *err, size_t errlen)
{
	const struct vmi_sym *text;
	uint64_t base = 0, size = 0;
	long n;
	int ret;

	memset(l, 0, sizeof(*l));
	l->arch = arch;
	l->image_hint = hint;
	l->pid_off = l->comm_off = -1;
	if (vmi_linux_arch(l)->regs.ra != ARCH_REG_NONE) { /* arm64: the image by its header */
		if (!hint) {
			msg_fmt(err, errlen, "no vCPU runs kernel code yet (the kernel is not up)");
			return -ESRCH;
		}
		n = vmi_linux_arm64_image(read, ctx, hint, &base, &size, err, errlen);
		if (n == 0)
			n = vmi_kallsyms_read_range(read, ctx, base, size, 0, add_kallsym, l, err,
						    errlen);
		l->image_lo = base;
		l->image_hi = base + size;
	} else {
		n = vmi_kallsyms_read(read, ctx, add_kallsym, l, err, errlen);
	}
	if (n >= 0 && file_by_section(l) < 0)
		n = -ENOMEM;
	if (n == -ENOMEM || n == -EOVERFLOW)
		msg_fmt(err, errlen, "kallsyms: %s",
			n == -ENOMEM ? "out of memory" : "too many symbols");
	if (n < 0) {
		vmi_linux_close(l);
		return (int)n;
	}
	if (l->image_hi) /* arm64 without KALLSYMS_ALL: the banner and the BTF by their shape */
		vmi_linux_arm64_missing(&l->objects, read, ctx, l->image_lo,
					l->image_hi - l->image_lo);
	vmi_symtab_sort(&l->funcs);
	if (l->image_hi) { /* ... the command line's pointer and the module list from code using them */
		vmi_linux_arm64_cmdline(&l->objects, &l->funcs, read, ctx, l->image_lo,
					l->image_hi - l->image_lo);
		vmi_linux_arm64_modules(&l->objects, &l->funcs, read, ctx, l->image_lo,
					l->image_hi - l->image_lo);
	}
	vmi_symtab_sort(&l->objects);
	if (!vmi_symtab_find(&l->objects, "linux_banner") ||
	    !vmi_symtab_find(&l->funcs, "_stext") || !any_addr(l, "_etext")) {
		msg_fmt(err, errlen,
			"kallsyms: %ld symbols, but no linux_banner, _stext or _etext among them",
			n);
		vmi_linux_close(l);
		return -ENODATA;
	}
	ret = resolve(l, "kallsyms", (size_t)n, err, errlen);
	if (ret == 0)
		ret = vmi_linux_check_text(l, err, errlen);
	if (ret < 0) {
		vmi_linux_close(l);
		return ret;
	}
	text = vmi_symtab_find(&l->funcs, "_text");
	/* arm64's link address is not known without its vmlinux: no slide is claimed */
	l->slide = l->image_hi ? 0 : (int64_t)((text ? text->addr : l->stext) - LINUX_LINK_TEXT);
	l->slid = true; /* kallsyms holds the runtime addresses */
	l->nr_kallsyms = (size_t)n;
	return 0;
}

void vmi_linux_release(const struct vmi_linux *l, vmi_read_fn read, void *ctx, char *buf,
		       size_t len)
{
	char banner[96] = "";
	size_t n = 0;

	if (len)
		buf[0] = 0;
	if (!len || !l->banner || read(ctx, l->banner, banner, sizeof(banner) - 1) < 0 ||
	    strncmp(banner, BANNER, sizeof(BANNER) - 1))
		return;
	for (const char *c = banner + sizeof(BANNER) - 1; n + 1 < len && *c > ' ' && *c < 0x7f; c++)
		buf[n++] = *c;
	buf[n] = 0;
}

int vmi_btf_member_offset(const void *data, size_t size, const char *type, const char *member)
{
	char err[160];
	struct vmi_btf *b = vmi_btf_new(data, size, err, sizeof(err));
	int off;

	if (!b)
		return -EINVAL;
	off = vmi_btf_struct_offset(b, type, member);
	vmi_btf_free(b);
	return off;
}

/* 6.2-6.14 keep the current task and the preempt count in the per-CPU struct pcpu_hot (no
 * current_task or __preempt_count symbol): their places from the symbol and BTF's layout. */
static void pcpu_hot(struct vmi_linux *l)
{
	const struct vmi_sym *hot = vmi_symtab_find(&l->objects, "pcpu_hot");
	int ct = vmi_btf_struct_offset(l->btf, "pcpu_hot", "current_task");
	int pc = vmi_btf_struct_offset(l->btf, "pcpu_hot", "preempt_count");

	if (!hot)
		return;
	if (!l->current_task && ct >= 0)
		l->current_task = hot->addr + (uint64_t)ct;
	if (!l->preempt_count && pc >= 0)
		l->preempt_count = hot->addr + (uint64_t)pc;
}

int vmi_linux_read_btf(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err, size_t errlen)
{
	size_t size;
	uint8_t *buf;
	int ret;

	if (!l->btf_start || l->btf_stop <= l->btf_start) {
		msg_fmt(err, errlen, "the kernel has no BTF (__start_BTF/__stop_BTF)");
		return -ENOENT;
	}
	size = l->btf_stop - l->btf_start;
	if (size > VMI_BTF_MAX_SIZE) {
		msg_fmt(err, errlen, "BTF of %zu bytes is implausible", size);
		return -EINVAL;
	}
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	ret = read(ctx, l->btf_start, buf, size);
	if (ret < 0) {
		msg_fmt(err, errlen, "reading BTF at 0x%" PRIx64 ": %s", l->btf_start,
			strerror(-ret));
		free(buf);
		return ret;
	}
	vmi_btf_free(l->btf);
	l->btf = vmi_btf_new(buf, size, err, errlen);
	free(l->btf_raw);
	l->btf_raw = NULL;
	if (!l->btf) {
		free(buf);
		return -EINVAL;
	}
	l->btf_raw = buf; /* kept for vmi_linux_modules */
	l->btf_raw_size = size;
	l->pid_off = vmi_btf_struct_offset(l->btf, "task_struct", "pid");
	l->comm_off = vmi_btf_struct_offset(l->btf, "task_struct", "comm");
	if (l->pid_off < 0 || l->comm_off < 0) {
		msg_fmt(err, errlen, "BTF has no task_struct.pid/comm");
		l->pid_off = l->comm_off = -1;
		return -ENOENT;
	}
	pcpu_hot(l);
	return 0;
}

long vmi_linux_modules(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err, size_t errlen)
{
	const struct vmi_sym *head = vmi_symtab_find(&l->objects, "modules");
	struct vmi_module_layout lo;
	size_t max;
	long n;
	int ret;

	vmi_modules_free(&l->mods);
	if (!head) {
		msg_fmt(err, errlen, "modules: no `modules` symbol");
		return -ENOENT;
	}
	if (!l->btf) {
		msg_fmt(err, errlen, "modules: the kernel has no BTF");
		return -ENOENT;
	}
	ret = vmi_module_layout_btf(l->btf_raw, l->btf_raw_size, &lo, err, errlen);
	if (ret < 0)
		return ret;
	max = VMI_LINUX_MAX_SYMS > l->objects.nr ? VMI_LINUX_MAX_SYMS - l->objects.nr : 0;
	n = vmi_modules_read(&lo, head->addr, read, ctx, &l->mods, &l->funcs, max, err, errlen);
	vmi_symtab_sort(&l->funcs);
	return n;
}

void vmi_linux_close(struct vmi_linux *l)
{
	vmi_modules_free(&l->mods);
	free(l->btf_raw);
	l->btf_raw = NULL;
	vmi_symtab_free(&l->funcs);
	vmi_symtab_free(&l->objects);
	vmi_btf_free(l->btf);
	l->btf = NULL;
}
