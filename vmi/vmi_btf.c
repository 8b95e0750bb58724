#include "vmi/vmi_btf.h"
#include "host/util/msg_fmt.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vmi_btf {
	struct btf *btf;
	const char **funcs; /* the FUNC records' names, sorted (vmi_btf_has_func) */
	size_t nr_funcs;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The sorted names of every FUNC record (names point into libbpf's copy). */
static int index_funcs(struct vmi_btf *b)
{
	__u32 n = btf__type_cnt(b->btf);

	b->funcs = malloc((n ? n : 1) * sizeof(*b->funcs));
	if (!b->funcs)
		return -ENOMEM;
	for (__u32 id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(b->btf, id);
		const char *name = t && btf_is_func(t) ? btf__name_by_offset(b->btf, t->name_off) : NULL;

		if (name && *name)
			b->funcs[b->nr_funcs++] = name;
	}
	qsort(b->funcs, b->nr_funcs, sizeof(*b->funcs), cmp_name);
	return 0;
}

bool vmi_btf_has_func(const struct vmi_btf *b, const char *name)
{
	return b && bsearch(&name, b->funcs, b->nr_funcs, sizeof(*b->funcs), cmp_name) != NULL;
}

/* libbpf's own warnings would be extra stderr lines: its verdict is enough (errno). */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	(void)fmt;
	(void)args;
	return 0;
}

struct vmi_btf *vmi_btf_new(const void *data, size_t size, char *err, size_t errlen)
{
	struct btf_header hdr;
	struct vmi_btf *b;

	if (!size || size > VMI_BTF_MAX_SIZE) {
		msg_fmt(err, errlen, "BTF of %zu bytes is implausible", size);
		return NULL;
	}
	/* libbpf takes type records where the header puts them: they must be 4-byte aligned (as the
	 * kernel's own check demands), and an x86 guest's BTF is in its byte order */
	if (size >= sizeof(hdr))
		memcpy(&hdr, data, sizeof(hdr));
	if (size < sizeof(hdr) || hdr.magic != BTF_MAGIC || (hdr.hdr_len + hdr.type_off) % 4) {
		msg_fmt(err, errlen, "BTF of %zu bytes: %s", size,
			size < sizeof(hdr) || hdr.magic != BTF_MAGIC ? "no BTF header"
								     : "unaligned type section");
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		msg_fmt(err, errlen, "BTF: %s", strerror(ENOMEM));
		return NULL;
	}
	libbpf_set_print(quiet);
	b->btf = btf__new(data, (__u32)size); /* libbpf copies and validates */
	if (!b->btf) {
		msg_fmt(err, errlen, "BTF of %zu bytes refused by libbpf: %s", size,
			strerror(errno));
		free(b);
		return NULL;
	}
	if (index_funcs(b) < 0) {
		msg_fmt(err, errlen, "BTF: %s", strerror(ENOMEM));
		vmi_btf_free(b);
		return NULL;
	}
	return b;
}

void vmi_btf_free(struct vmi_btf *b)
{
	if (!b)
		return;
	btf__free(b->btf);
	free(b->funcs);
	free(b);
}

static const char *name_of(const struct btf *btf, __u32 off)
{
	const char *s = btf__name_by_offset(btf, off);

	return s ? s : "";
}

static bool is_modifier(const struct btf_type *t)
{
	return btf_is_mod(t) || btf_kind(t) == BTF_KIND_TYPE_TAG;
}

/* Follows modifiers (and typedefs when @typedefs) from *@id, at most VMI_BTF_MAX_HOPS links; *@id
 * becomes the id reached (0: void). Returns that type, NULL for void, or ERR (a dangling id or too
 * many links) through *@broken. */
static const struct btf_type *strip(const struct btf *btf, __u32 *id, bool typedefs, bool *broken)
{
	*broken = false;
	for (unsigned hop = 0; hop <= VMI_BTF_MAX_HOPS; hop++) {
		const struct btf_type *t;

		if (!*id)
			return NULL;
		t = btf__type_by_id(btf, *id);
		if (!t)
			break;
		if (!is_modifier(t) && !(typedefs && btf_is_typedef(t)))
			return t;
		*id = t->type;
	}
	*broken = true;
	return NULL;
}

static bool size_ok(unsigned size)
{
	return size == 1 || size == 2 || size == 4 || size == 8;
}

/* What a value of type @id is, for printing. Returns 0 or -EINVAL (broken chain). */
static int describe(const struct btf *btf, __u32 id, struct vmi_btf_value *v)
{
	const struct btf_type *t;
	bool broken;

	memset(v, 0, sizeof(*v));
	t = strip(btf, &id, true, &broken);
	if (broken)
		return -EINVAL;
	v->id = id;
	if (!t) {
		v->cls = VMI_BTF_VOID;
		snprintf(v->c, sizeof(v->c), "void");
		return 0;
	}
	switch (btf_kind(t)) {
	case BTF_KIND_INT: {
		__u8 enc = btf_int_encoding(t);

		snprintf(v->c, sizeof(v->c), "%s", name_of(btf, t->name_off));
		v->size = t->size;
		v->is_signed = enc & BTF_INT_SIGNED;
		v->is_bool = enc & BTF_INT_BOOL;
		v->cls = size_ok(t->size) && !btf_int_offset(t) && btf_int_bits(t) == 8 * t->size
			     ? VMI_BTF_INT
			     : VMI_BTF_OTHER;
		return 0;
	}
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
		snprintf(v->c, sizeof(v->c), "enum %s", name_of(btf, t->name_off));
		v->size = t->size;
		v->is_signed = btf_kflag(t);
		v->cls = size_ok(t->size) ? VMI_BTF_ENUM : VMI_BTF_OTHER;
		return 0;
	case BTF_KIND_PTR: {
		__u32 to = t->type;
		const struct btf_type *c = strip(btf, &to, false, &broken);

		if (broken)
			return -EINVAL;
		v->size = 8;
		v->cls = VMI_BTF_PTR;
		snprintf(v->c, sizeof(v->c), "pointer");
		if (c && btf_is_int(c) && c->size == 1) {
			const char *n = name_of(btf, c->name_off);

			if (!strcmp(n, "char") || !strcmp(n, "signed char") ||
			    !strcmp(n, "unsigned char")) {
				v->cls = VMI_BTF_STRING;
				snprintf(v->c, sizeof(v->c), "%s *", n);
			}
		}
		to = t->type;
		c = strip(btf, &to, true, &broken);
		if (broken)
			return -EINVAL;
		v->target = to;
		if (c && btf_is_composite(c))
			snprintf(v->c, sizeof(v->c), "%s %s *",
				 btf_is_struct(c) ? "struct" : "union", name_of(btf, c->name_off));
		return 0;
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		snprintf(v->c, sizeof(v->c), "%s %s", btf_is_struct(t) ? "struct" : "union",
			 name_of(btf, t->name_off));
		v->size = t->size;
		v->cls = VMI_BTF_AGGREGATE;
		return 0;
	default:
		snprintf(v->c, sizeof(v->c), "BTF kind %u", btf_kind(t));
		v->cls = VMI_BTF_OTHER;
		return 0;
	}
}

int vmi_btf_func_proto(const struct vmi_btf *b, const char *func, struct vmi_btf_proto *out,
		       char *err, size_t errlen)
{
	const struct btf *btf = b->btf;
	const struct btf_type *f, *proto;
	const struct btf_param *p;
	__s32 id = btf__find_by_name_kind(btf, func, BTF_KIND_FUNC);
	unsigned n;

	memset(out, 0, sizeof(*out));
	if (id <= 0) {
		msg_fmt(err, errlen, "BTF has no function %s", func);
		return -ENOENT;
	}
	f = btf__type_by_id(btf, (__u32)id);
	proto = f ? btf__type_by_id(btf, f->type) : NULL;
	if (!proto || !btf_is_func_proto(proto)) {
		msg_fmt(err, errlen, "BTF of %s: its prototype is not a FUNC_PROTO", func);
		return -EINVAL;
	}
	if (describe(btf, proto->type, &out->ret) < 0) {
		msg_fmt(err, errlen, "BTF of %s: broken return type (id %u)", func, proto->type);
		return -EINVAL;
	}
	n = btf_vlen(proto);
	p = btf_params(proto);
	if (n && !p[n - 1].type && !p[n - 1].name_off) {
		out->variadic = true;
		n--;
	}
	if (n > VMI_BTF_MAX_PARAMS) {
		msg_fmt(err, errlen, "BTF of %s: %u parameters (at most %u)", func, n,
			VMI_BTF_MAX_PARAMS);
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++) {
		struct vmi_btf_param *q = &out->params[i];
		const char *name = name_of(btf, p[i].name_off);

		if (*name)
			snprintf(q->name, sizeof(q->name), "%s", name);
		else
			snprintf(q->name, sizeof(q->name), "arg%u", i + 1);
		if (describe(btf, p[i].type, &q->type) < 0 || q->type.cls == VMI_BTF_VOID) {
			msg_fmt(err, errlen, "BTF of %s: broken type of parameter %u", func, i + 1);
			return -EINVAL;
		}
	}
	out->nr_params = n;
	return 0;
}

static int member(const struct btf *btf, __u32 id, const char *name, unsigned depth, __u32 *offset,
		  struct vmi_btf_value *type)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m;

	if (!t || (!btf_is_struct(t) && !btf_is_union(t)))
		return -ENOENT;
	if (depth > VMI_BTF_MAX_NEST)
		return -EINVAL;
	m = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = name_of(btf, m->name_off);
		__u32 bits = btf_member_bit_offset(t, i);
		int ret;

		if (!strcmp(n, name)) {
			if (btf_member_bitfield_size(t, i) || bits % 8)
				return -EOPNOTSUPP;
			*offset = bits / 8;
			return describe(btf, m->type, type);
		}
		if (!*n) {
			__u32 sub = m->type;
			bool broken;

			strip(btf, &sub, true, &broken);
			if (broken)
				return -EINVAL;
			ret = sub ? member(btf, sub, name, depth + 1, offset, type) : -ENOENT;
			if (ret == 0)
				*offset += bits / 8;
			if (ret != -ENOENT)
				return ret;
		}
	}
	return -ENOENT;
}

int vmi_btf_member(const struct vmi_btf *b, uint32_t id, const char *name, uint32_t *offset,
		   struct vmi_btf_value *type)
{
	return member(b->btf, id, name, 0, offset, type);
}

int vmi_btf_struct_offset(const struct vmi_btf *b, const char *type, const char *name)
{
	struct vmi_btf_value v;
	__s32 id = btf__find_by_name_kind(b->btf, type, BTF_KIND_STRUCT);
	uint32_t off;
	int ret;

	if (id <= 0)
		return -ENOENT;
	ret = member(b->btf, (__u32)id, name, 0, &off, &v);
	if (ret < 0)
		return ret;
	return off > INT32_MAX ? -EINVAL : (int)off;
}
