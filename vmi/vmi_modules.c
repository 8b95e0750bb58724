#include "vmi/vmi_modules.h"
#include "host/util/msg_fmt.h"

#include <bpf/btf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_HALF 0xffff800000000000ull /* module text lives in the kernel's half */
#define SYM_SIZE    24			  /* sizeof(Elf64_Sym) */
#define STT_FUNC_   2
#define NAME_MAX_   511 /* longest symbol name (KSYM_NAME_LEN - 1) */
#define CHUNK	    64

static __u32 skip_mods(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		id = t->type;
		t = btf__type_by_id(btf, id);
	}
	return id;
}

/* Offset of @member in struct/union @id (anonymous members searched too); its type in @type. */
static long find_member(const struct btf *btf, __u32 id, const char *member, __u32 *type, int depth)
{
	const struct btf_type *t = btf__type_by_id(btf, skip_mods(btf, id));
	const struct btf_member *m;

	if (!t || depth > 8 || (!btf_is_struct(t) && !btf_is_union(t)))
		return -ENOENT;
	m = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(btf, m->name_off);
		long bits = btf_member_bit_offset(t, i), off;

		if (name && !strcmp(name, member)) {
			*type = m->type;
			return bits / 8;
		}
		if ((!name || !*name) &&
		    (off = find_member(btf, m->type, member, type, depth + 1)) >= 0)
			return bits / 8 + off;
	}
	return -ENOENT;
}

/* Offset of the dotted @path ("core_layout.base") in struct @type; arrays count as their element 0.
 */
static long path_offset(const struct btf *btf, const char *type, const char *path)
{
	__s32 sid = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	char buf[64], *save = NULL;
	__u32 id;
	long off = 0;

	if (sid < 0 || strlen(path) >= sizeof(buf))
		return -ENOENT;
	id = (__u32)sid;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *c = strtok_r(buf, ".", &save); c; c = strtok_r(NULL, ".", &save)) {
		const struct btf_type *t;
		__u32 mt;
		long o = find_member(btf, id, c, &mt, 0);

		if (o < 0)
			return o;
		off += o;
		id = skip_mods(btf, mt);
		t = btf__type_by_id(btf, id);
		if (t && btf_is_array(t))
			id = skip_mods(btf, btf_array(t)->type);
	}
	return off;
}

int vmi_module_layout_btf(const void *data, size_t size, struct vmi_module_layout *lo, char *err,
			  size_t errlen)
{
	struct btf *btf = btf__new(data, (__u32)size);
	const char *missing = NULL;

	if (!btf) {
		msg_fmt(err, errlen, "modules: the kernel's BTF does not parse");
		return -ENOENT;
	}
	lo->list = path_offset(btf, "module", "list");
	lo->name = path_offset(btf, "module", "name");
	lo->kallsyms = path_offset(btf, "module", "kallsyms");
	/* 6.1: core_layout; 6.4+: mem[MOD_TEXT] (MOD_TEXT == 0) */
	lo->text = path_offset(btf, "module", "core_layout.base");
	lo->text_size = path_offset(btf, "module", "core_layout.text_size");
	if (lo->text < 0 || lo->text_size < 0) {
		lo->text = path_offset(btf, "module", "mem.base");
		lo->text_size = path_offset(btf, "module", "mem.size");
	}
	lo->ks_symtab = path_offset(btf, "mod_kallsyms", "symtab");
	lo->ks_num = path_offset(btf, "mod_kallsyms", "num_symtab");
	lo->ks_strtab = path_offset(btf, "mod_kallsyms", "strtab");
	btf__free(btf);
	missing = lo->list < 0			      ? "module.list"
		  : lo->name < 0		      ? "module.name"
		  : lo->kallsyms < 0		      ? "module.kallsyms"
		  : lo->text < 0 || lo->text_size < 0 ? "module.core_layout or module.mem"
		  : lo->ks_symtab < 0 || lo->ks_num < 0 || lo->ks_strtab < 0 ? "struct mod_kallsyms"
									     : NULL;
	if (missing) {
		msg_fmt(err, errlen, "modules: the kernel's BTF has no %s", missing);
		return -ENOENT;
	}
	return 0;
}

/* A NUL-terminated string of at most @max bytes at @gva, read in small pieces (a page may end
 * anywhere). Returns its length, or -1 (unreadable, or no NUL within @max). */
static long read_str(vmi_read_fn read, void *ctx, uint64_t gva, char *buf, size_t max)
{
	size_t n = 0;

	while (n < max + 1) {
		size_t want = CHUNK - ((gva + n) % CHUNK), have;
		char *nul;

		if (want > max + 1 - n)
			want = max + 1 - n;
		if (read(ctx, gva + n, buf + n, want) < 0)
			return -1;
		nul = memchr(buf + n, 0, want);
		if (nul)
			return nul - buf;
		have = want;
		n += have;
	}
	return -1;
}

/* The functions of one module into @funcs. Returns how many, or -ENOMEM. */
static long module_funcs(const struct vmi_module_layout *lo, uint64_t ks,
			 const struct vmi_module *m, vmi_read_fn read, void *ctx,
			 struct vmi_symtab *funcs, size_t max_syms)
{
	uint64_t symtab, strtab;
	uint32_t num;
	uint8_t *syms;
	long added = 0;

	if (read(ctx, ks + (uint64_t)lo->ks_symtab, &symtab, 8) < 0 ||
	    read(ctx, ks + (uint64_t)lo->ks_num, &num, 4) < 0 ||
	    read(ctx, ks + (uint64_t)lo->ks_strtab, &strtab, 8) < 0 || !num ||
	    num > VMI_MODULE_SYMS_MAX)
		return 0;
	syms = malloc((size_t)num * SYM_SIZE);
	if (!syms)
		return -ENOMEM;
	if (read(ctx, symtab, syms, (size_t)num * SYM_SIZE) < 0) {
		free(syms);
		return 0;
	}
	for (uint32_t i = 0; i < num && funcs->nr < max_syms; i++) {
		const uint8_t *s = syms + (size_t)i * SYM_SIZE;
		char name[NAME_MAX_ + 1];
		uint32_t st_name;
		uint64_t value, size;

		memcpy(&st_name, s, 4);
		memcpy(&value, s + 8, 8);
		memcpy(&size, s + 16, 8);
		if ((s[4] & 0xf) != STT_FUNC_ || value < m->text ||
		    value - m->text >= m->text_size || !st_name)
			continue;
		if (read_str(read, ctx, strtab + st_name, name, NAME_MAX_) <= 0)
			continue;
		if (size > m->text + m->text_size - value)
			size = m->text + m->text_size - value;
		if (vmi_symtab_add(funcs, value, size, name) < 0) {
			free(syms);
			return -ENOMEM;
		}
		added++;
	}
	free(syms);
	return added;
}

long vmi_modules_read(const struct vmi_module_layout *lo, uint64_t head, vmi_read_fn read,
		      void *ctx, struct vmi_modules *mods, struct vmi_symtab *funcs,
		      size_t max_syms, char *err, size_t errlen)
{
	uint64_t p;
	long total = 0;

	if (read(ctx, head, &p, 8) < 0) {
		msg_fmt(err, errlen, "modules: cannot read the list head at 0x%" PRIx64, head);
		return -EIO;
	}
	for (size_t count = 0; p != head; count++) {
		struct vmi_module m = {0}, *v;
		uint64_t mod = p - (uint64_t)lo->list, ks = 0, next;
		uint32_t tsize = 0;
		long n;

		if (count >= VMI_MODULES_MAX) {
			msg_fmt(err, errlen,
				"modules: the list at 0x%" PRIx64 " has more than %u "
				"entries (a cycle?)",
				head, VMI_MODULES_MAX);
			return -ELOOP;
		}
		if (read(ctx, p, &next, 8) < 0) {
			msg_fmt(err, errlen, "modules: cannot read the list entry at 0x%" PRIx64,
				p);
			return -EIO;
		}
		if (read(ctx, mod + (uint64_t)lo->name, m.name, sizeof(m.name)) < 0)
			snprintf(m.name, sizeof(m.name), "?");
		m.name[sizeof(m.name) - 1] = 0;
		for (char *c = m.name; *c; c++)
			if (*c < 0x21 || *c > 0x7e)
				*c = '?';
		if (read(ctx, mod + (uint64_t)lo->text, &m.text, 8) < 0 ||
		    read(ctx, mod + (uint64_t)lo->text_size, &tsize, 4) < 0 ||
		    read(ctx, mod + (uint64_t)lo->kallsyms, &ks, 8) < 0 || m.text < KERNEL_HALF ||
		    tsize > VMI_MODULE_TEXT_MAX || m.text + tsize < m.text)
			m.text = tsize = 0; /* listed, without text */
		m.text_size = tsize;
		if (m.text_size && ks) {
			n = module_funcs(lo, ks, &m, read, ctx, funcs, max_syms);
			if (n < 0) {
				msg_fmt(err, errlen, "modules: out of memory");
				return n;
			}
			m.nr_funcs = (size_t)n;
			total += n;
		}
		v = realloc(mods->v, (mods->nr + 1) * sizeof(*v));
		if (!v) {
			msg_fmt(err, errlen, "modules: out of memory");
			return -ENOMEM;
		}
		mods->v = v;
		mods->v[mods->nr++] = m;
		p = next;
	}
	return total;
}

const struct vmi_module *vmi_modules_find(const struct vmi_modules *mods, uint64_t addr)
{
	for (size_t i = 0; i < mods->nr; i++)
		if (addr >= mods->v[i].text && addr - mods->v[i].text < mods->v[i].text_size)
			return &mods->v[i];
	return NULL;
}

void vmi_modules_free(struct vmi_modules *mods)
{
	free(mods->v);
	mods->v = NULL;
	mods->nr = 0;
}
