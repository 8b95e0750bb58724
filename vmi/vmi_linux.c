#include "vmi/vmi_linux.h"
#include "vmi/vmi_btf.h"
#include "vmi/vmi_elf.h"
#include "vmi/vmi_kallsyms.h"
#include "vmi/vmi_modules.h"
#include "arch/x86/x86_insn.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINUX_LINK_TEXT 0xffffffff81000000ull /* where _text is linked */
#define KASLR_ALIGN 0x200000ull		      /* CONFIG_PHYSICAL_ALIGN */
#define KERNEL_IMAGE_SIZE 0x40000000ull	      /* 1 GiB of virtual room for the image */
#define BANNER "Linux version "

static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

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
			snprintf(err, errlen,
				 "%s holds no symbols (Debian puts the real System.map in the kernel's "
				 "-dbg package): omit --system-map to read the symbols from the guest's "
				 "kallsyms",
				 path);
			ret = -EINVAL;
			goto out;
		}
		if (map_line(line, (size_t)len, &addr, &type, &nm, &nlen, &why) < 0) {
			snprintf(err, errlen, "%s:%zu: %s", path, lines,
				 why ? why : "not a System.map line");
			ret = -EINVAL;
			goto out;
		}
		switch (type) {
		case 'T': case 't': case 'W': case 'w': t = &l->funcs; break;
		case 'D': case 'd': case 'B': case 'b': case 'R': case 'r': case 'V': case 'v':
			t = &l->objects;
			break;
		default: continue;
		}
		if (l->funcs.nr + l->objects.nr >= VMI_LINUX_MAX_SYMS) {
			snprintf(err, errlen, "%s:%zu: more than %u symbols", path, lines,
				 VMI_LINUX_MAX_SYMS);
			ret = -EINVAL;
			goto out;
		}
		memcpy(name, nm, nlen);
		name[nlen] = 0;
		if (vmi_symtab_add(t, addr, 0, name) < 0) {
			snprintf(err, errlen, "%s: out of memory", path);
			ret = -ENOMEM;
			goto out;
		}
	}
	if (ferror(f)) {
		ret = -EIO;
		snprintf(err, errlen, "%s: read: %s", path, strerror(errno ? errno : EIO));
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
	FILE *f = fopen(path, "r");
	char magic[4];
	int ret = 0;

	memset(l, 0, sizeof(*l));
	l->pid_off = l->comm_off = -1;
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
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
	const struct vmi_sym *et = vmi_symtab_find(&l->funcs, "_etext");
	const struct vmi_sym *fe = vmi_symtab_find(&l->funcs, "__fentry__");
	const struct vmi_sym *pco = vmi_symtab_find(&l->objects, "__per_cpu_offset");
	const struct vmi_sym *ct = vmi_symtab_find(&l->objects, "current_task");
	const struct vmi_sym *pc = vmi_symtab_find(&l->objects, "__preempt_count");
	const struct vmi_sym *bs = vmi_symtab_find(&l->objects, "__start_BTF");
	const struct vmi_sym *be = vmi_symtab_find(&l->objects, "__stop_BTF");

	if (!banner || !st || !et) {
		snprintf(err, errlen, "%s: no linux_banner, _stext or _etext (%zu symbols): not a %s",
			 path, lines, "System.map or vmlinux of a Linux kernel with its symbols");
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
static int check_text(const struct vmi_linux *l, char *err, size_t errlen)
{
	if (l->etext < l->stext) {
		snprintf(err, errlen,
			 "_etext 0x%" PRIx64 " is below _stext 0x%" PRIx64
			 ": not the text of a kernel",
			 l->etext, l->stext);
		return -EINVAL;
	}
	if (l->etext == l->stext) {
		snprintf(err, errlen, "_stext and _etext are both 0x%" PRIx64 ": no kernel text",
			 l->stext);
		return -EINVAL;
	}
	if (l->stext < VMI_LINUX_TEXT_BASE || l->etext > VMI_LINUX_TEXT_BASE + KERNEL_IMAGE_SIZE) {
		snprintf(err, errlen,
			 "_stext 0x%" PRIx64 " .. _etext 0x%" PRIx64 " is not within the "
			 "kernel image (0x%llx-0x%llx)",
			 l->stext, l->etext, VMI_LINUX_TEXT_BASE,
			 VMI_LINUX_TEXT_BASE + KERNEL_IMAGE_SIZE);
		return -EINVAL;
	}
	return 0;
}

int vmi_linux_find_slide(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err, size_t errlen)
{
	char buf[sizeof(BANNER) - 1];
	int64_t lo = -(int64_t)(LINUX_LINK_TEXT - VMI_LINUX_TEXT_BASE), hi;
	int64_t found = INT64_MIN;
	int ret = check_text(l, err, errlen);

	if (ret < 0)
		return ret;
	/* the image's end stays inside its 1 GiB: at most 512 + 8 candidates */
	hi = (int64_t)(VMI_LINUX_TEXT_BASE + KERNEL_IMAGE_SIZE - l->etext);
	/* no KASLR first, then every aligned place the image fits */
	for (int64_t s = lo; found == INT64_MIN && s <= hi; s += (int64_t)KASLR_ALIGN) {
		int64_t cand = s == lo ? 0 : (s == 0 ? lo : s);

		ret = read(ctx, l->banner + cand, buf, sizeof(buf));
		if (ret == -EINTR) {
			snprintf(err, errlen, "KASLR: the scan was stopped");
			return ret;
		}
		if (ret == 0 && !memcmp(buf, BANNER, sizeof(buf)))
			found = cand;
	}
	if (found == INT64_MIN) {
		snprintf(err, errlen,
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
	/* current_task and __preempt_count are per-CPU offsets (below the kernel map): never slid */
	return 0;
}

/* One kallsyms symbol into the tables, with System.map's semantics: text (t, T, w, W) to funcs,
 * data to objects, per-CPU ones (kallsyms types them 'A' under KALLSYMS_ABSOLUTE_PERCPU) at their
 * section offsets. */
static int add_kallsym(void *ctx, uint64_t addr, char type, const char *name)
{
	struct vmi_linux *l = ctx;
	struct vmi_symtab *t;

	switch (type) {
	case 'T': case 't': case 'W': case 'w': t = &l->funcs; break;
	case 'D': case 'd': case 'B': case 'b': case 'R': case 'r': case 'V': case 'v': case 'A':
		t = &l->objects;
		break;
	default: return 0;
	}
	if (l->funcs.nr + l->objects.nr >= VMI_LINUX_MAX_SYMS)
		return -EOVERFLOW;
	return vmi_symtab_add(t, addr, 0, name);
}

int vmi_linux_open_kallsyms(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err,
			    size_t errlen)
{
	const struct vmi_sym *text;
	long n;
	int ret;

	memset(l, 0, sizeof(*l));
	l->pid_off = l->comm_off = -1;
	n = vmi_kallsyms_read(read, ctx, add_kallsym, l, err, errlen);
	if (n == -ENOMEM || n == -EOVERFLOW)
		snprintf(err, errlen, "kallsyms: %s", n == -ENOMEM ? "out of memory"
							    : "too many symbols");
	if (n < 0) {
		vmi_linux_close(l);
		return (int)n;
	}
	vmi_symtab_sort(&l->funcs);
	vmi_symtab_sort(&l->objects);
	if (!vmi_symtab_find(&l->objects, "linux_banner") ||
	    !vmi_symtab_find(&l->funcs, "_stext") || !vmi_symtab_find(&l->funcs, "_etext")) {
		snprintf(err, errlen,
			 "kallsyms: %ld symbols, but no linux_banner, _stext or _etext among them", n);
		vmi_linux_close(l);
		return -ENODATA;
	}
	ret = resolve(l, "kallsyms", (size_t)n, err, errlen);
	if (ret == 0)
		ret = check_text(l, err, errlen);
	if (ret < 0) {
		vmi_linux_close(l);
		return ret;
	}
	text = vmi_symtab_find(&l->funcs, "_text");
	l->slide = (int64_t)((text ? text->addr : l->stext) - LINUX_LINK_TEXT);
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

int vmi_linux_read_btf(struct vmi_linux *l, vmi_read_fn read, void *ctx, char *err, size_t errlen)
{
	size_t size;
	uint8_t *buf;
	int ret;

	if (!l->btf_start || l->btf_stop <= l->btf_start) {
		snprintf(err, errlen, "the kernel has no BTF (__start_BTF/__stop_BTF)");
		return -ENOENT;
	}
	size = l->btf_stop - l->btf_start;
	if (size > VMI_BTF_MAX_SIZE) {
		snprintf(err, errlen, "BTF of %zu bytes is implausible", size);
		return -EINVAL;
	}
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	ret = read(ctx, l->btf_start, buf, size);
	if (ret < 0) {
		snprintf(err, errlen, "reading BTF at 0x%" PRIx64 ": %s", l->btf_start, strerror(-ret));
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
		snprintf(err, errlen, "BTF has no task_struct.pid/comm");
		l->pid_off = l->comm_off = -1;
		return -ENOENT;
	}
	return 0;
}

/* The NOP5 entries of the module functions in l->funcs, each module's text read whole (unreadable
 * text: no sites there), appended to @addrs (room for every function). 0 or -ENOMEM. */
static int module_sites(struct vmi_linux *l, vmi_read_fn read, void *ctx, uint64_t *addrs,
			size_t *n)
{
	for (size_t k = 0; k < l->mods.nr; k++) {
		const struct vmi_module *m = &l->mods.v[k];
		uint8_t *text;

		if (!m->nr_funcs || !m->text_size)
			continue;
		text = malloc(m->text_size + 16);
		if (!text)
			return -ENOMEM;
		memset(text + m->text_size, 0, 16);
		if (read(ctx, m->text, text, m->text_size) == 0)
			for (size_t i = 0; i < l->funcs.nr; i++) {
				uint64_t a = l->funcs.syms[i].addr;
				const uint8_t *p;

				if (a < m->text || a - m->text + 9 > m->text_size)
					continue;
				p = text + (a - m->text);
				if (!memcmp(p, endbr64, sizeof(endbr64))) {
					p += 4;
					a += 4;
				}
				if (x86_is_nop5(p))
					addrs[(*n)++] = a;
			}
		free(text);
	}
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
		snprintf(err, errlen, "modules: no `modules` symbol");
		return -ENOENT;
	}
	if (!l->btf) {
		snprintf(err, errlen, "modules: the kernel has no BTF");
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

int vmi_linux_sites(struct vmi_linux *l, vmi_read_fn read, void *ctx, struct vmi_sites *sites)
{
	char why[160];
	size_t len, n = 0;
	uint8_t *text = NULL;
	uint64_t *addrs = NULL;
	int ret = check_text(l, why, sizeof(why));

	if (ret < 0)
		return ret;
	len = l->etext - l->stext;
	text = malloc(len + 16);
	addrs = calloc(l->funcs.nr ? l->funcs.nr : 1, sizeof(*addrs));
	ret = -ENOMEM;
	if (!text || !addrs)
		goto out;
	memset(text + len, 0, 16);
	for (size_t off = 0; off < len; off += 1 << 20) {
		size_t chunk = len - off < (1u << 20) ? len - off : 1u << 20;

		ret = read(ctx, l->stext + off, text + off, chunk);
		if (ret < 0)
			goto out;
	}
	for (size_t i = 0; i < l->funcs.nr; i++) {
		uint64_t a = l->funcs.syms[i].addr;
		const uint8_t *p;

		if (a < l->stext || a + 9 > l->etext)
			continue;
		p = text + (a - l->stext);
		if (!memcmp(p, endbr64, sizeof(endbr64))) {
			p += 4;
			a += 4;
		}
		if (x86_is_nop5(p))
			addrs[n++] = a;
	}
	ret = module_sites(l, read, ctx, addrs, &n);
	if (ret == 0)
		ret = vmi_sites_build(sites, addrs, n, &l->funcs);
out:
	free(text);
	free(addrs);
	return ret;
}

/* Index of the site of the function starting at @addr (or whose site is @addr), or -1. */
static long site_of(const struct vmi_sites *sites, uint64_t addr)
{
	size_t lo = 0, hi = sites->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sites->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < sites->nr && (sites->v[lo].addr == addr || sites->v[lo].func->addr == addr))
		return (long)lo;
	return -1;
}

#define MAX_BODY (64u << 10)

long vmi_linux_callees(struct vmi_linux *l, vmi_read_fn read, void *ctx,
		       const struct vmi_sites *sites, const size_t *roots, size_t nr_roots,
		       unsigned depth, bool *selected)
{
	size_t *frontier = calloc(sites->nr ? sites->nr : 1, sizeof(*frontier));
	size_t *next = calloc(sites->nr ? sites->nr : 1, sizeof(*next));
	uint8_t *body = malloc(MAX_BODY);
	size_t nf = 0, nn;
	long marked = 0;

	(void)l;
	if (!frontier || !next || !body) {
		marked = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nr_roots; i++)
		if (!selected[roots[i]]) {
			selected[roots[i]] = true;
			frontier[nf++] = roots[i];
			marked++;
		}
	for (unsigned d = 0; d < depth && nf; d++) {
		nn = 0;
		for (size_t k = 0; k < nf; k++) {
			const struct vmi_sym *f = sites->v[frontier[k]].func;
			size_t len = f->size && f->size < MAX_BODY ? f->size : MAX_BODY;

			if (read(ctx, f->addr, body, len) < 0)
				continue;
			/* rel32 calls and jumps whose target is a traceable function */
			for (size_t i = 0; i + 5 <= len; i++) {
				int32_t rel;
				long t;

				if (body[i] != X86_CALL_REL32 && body[i] != 0xe9)
					continue;
				memcpy(&rel, body + i + 1, 4);
				t = site_of(sites, f->addr + i + 5 + (int64_t)rel);
				if (t < 0 || selected[t])
					continue;
				selected[t] = true;
				next[nn++] = (size_t)t;
				marked++;
			}
		}
		memcpy(frontier, next, nn * sizeof(*next));
		nf = nn;
	}
out:
	free(frontier);
	free(next);
	free(body);
	return marked;
}

int vmi_linux_task_layout(struct vmi_linux *l, vmi_read_fn read, void *ctx, unsigned nr_cpus,
			  struct vmi_task_layout *out)
{
	memset(out, 0, sizeof(*out));
	if (l->pid_off < 0 || l->comm_off < 0 || !l->per_cpu_offset || !l->current_task)
		return -ENOENT;
	for (unsigned c = 0; c < nr_cpus && c < VMI_MAX_CPUS; c++) {
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
	out->valid = true;
	return 0;
}

#define LOW_LO 0x10000ull /* below: the BIOS data areas */
#define LOW_HI 0x9f000ull /* above: the EBDA, then no RAM up to 1 MiB */
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
		snprintf(err, errlen, "stub probes: the System.map lacks _end, real_mode_header, "
				      "page_offset_base or real_mode_blob");
		return -ENOTSUP;
	}
	if (read(ctx, l->banner, banner, sizeof(banner) - 1) < 0 ||
	    !banner_version(banner, &major, &minor) || major * 1000 + minor < 5013) {
		snprintf(err, errlen, "stub probes: kernel %u.%u reserves only part of the first MiB "
				      "(5.13 or later needed)", major, minor);
		return -ENOTSUP;
	}
	if (read(ctx, rmh->addr, &hdr, 8) < 0 || read(ctx, pob->addr, &base, 8) < 0 || hdr < base) {
		snprintf(err, errlen, "stub probes: cannot read real_mode_header / page_offset_base");
		return -ENOTSUP;
	}
	/* the trampoline (real_mode_header points at its start) is the one thing Linux keeps there */
	t_lo = (hdr - base) & ~0xfffull;
	t_hi = (hdr - base + (rbe->addr - rb->addr) + 0xfff) & ~0xfffull;
	if (t_lo < hi && t_hi > lo) {
		if (t_lo - lo >= (t_hi < hi ? hi - t_hi : 0))
			hi = t_lo > lo ? t_lo : lo;
		else
			lo = t_hi;
	}
	if (hi <= lo) {
		snprintf(err, errlen, "stub probes: no free memory left in the first MiB");
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

	if (!cn || cn->addr >= VMI_LINUX_TEXT_BASE)
		return false;
	*off = cn->addr;
	return true;
}

#define X86_CAP_WORD_8000_0001_EDX 1 /* Linux's x86_capability word of CPUID 0x80000001 EDX */
#define X86_CAP_RDTSCP_BIT 27

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
