/* The guest's BTF (vmi_btf) and -e / -r specs typed from it (fe_resolve_btf): prototypes and
 * members of a kernel-like BTF built here with libbpf, hostile BTF (type loops, dangling ids, huge
 * and truncated tables), and the fprobe-style lines of events typed that way, captured from fake
 * registers and memory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/fevent_btf.h"
#include "tests/common/fake_mem.h"
#include "vmi/vmi_btf.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t mem[0x1000];
static struct fake_mem fake;
#define BASE 0x10000ull

/* A small kernel: the prototypes of do_sys_openat2, vfs_read, and a few made-up functions covering
 * every class of type. */
static struct vmi_btf *kernel_btf(void)
{
	struct btf *btf = btf__new_empty();
	int i32, u32, i64, u64, chr, uchr, bl, cchr, pcchr, ucp, how, phow, size_t_, loff, ploff,
	    file, pfile, pchar, ssize, en, fp, f, vp, anon, path, tagged, ptag, flt;
	const void *raw;
	struct vmi_btf *b;
	char err[160];
	__u32 size;

	i32 = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	u32 = btf__add_int(btf, "unsigned int", 4, 0);
	i64 = btf__add_int(btf, "long", 8, BTF_INT_SIGNED);
	u64 = btf__add_int(btf, "long unsigned int", 8, 0);
	chr = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
	uchr = btf__add_int(btf, "unsigned char", 1, 0);
	bl = btf__add_int(btf, "_Bool", 1, BTF_INT_BOOL);
	cchr = btf__add_const(btf, chr);
	pcchr = btf__add_ptr(btf, cchr);
	ucp = btf__add_ptr(btf, btf__add_const(btf, uchr));
	how = btf__add_struct(btf, "open_how", 24);
	btf__add_field(btf, "flags", u64, 0, 0);
	btf__add_field(btf, "mode", u64, 64, 0);
	btf__add_field(btf, "resolve", u64, 128, 0);
	phow = btf__add_ptr(btf, how);
	size_t_ = btf__add_typedef(btf, "size_t", btf__add_typedef(btf, "__kernel_size_t", u64));
	loff = btf__add_typedef(btf, "loff_t", i64);
	ploff = btf__add_ptr(btf, loff);
	/* struct file { unsigned int f_flags:3; union { int a; struct path f_path; }; } */
	vp = btf__add_ptr(btf, 0);
	path = btf__add_struct(btf, "path", 24);
	btf__add_field(btf, "mnt", vp, 0, 0);
	btf__add_field(btf, "name", ucp, 64, 0);
	btf__add_field(btf, "how", phow, 128, 0);
	anon = btf__add_union(btf, NULL, 24);
	btf__add_field(btf, "a", i32, 0, 0);
	btf__add_field(btf, "f_path", path, 0, 0);
	file = btf__add_struct(btf, "file", 32);
	btf__add_field(btf, "f_flags", u32, 0, 3);
	btf__add_field(btf, NULL, anon, 64, 0);
	pfile = btf__add_ptr(btf, file);
	pchar = btf__add_ptr(btf, chr);
	ssize = btf__add_typedef(btf, "ssize_t", i64);
	en = btf__add_enum(btf, "pid_type", 4);
	btf__add_enum_value(btf, "PIDTYPE_NONE", -1); /* a negative value: signed (kflag) */
	tagged = btf__add_type_tag(btf, "user", chr);
	ptag = btf__add_ptr(btf, btf__add_const(btf, tagged));
	flt = btf__add_float(btf, "double", 8);

	fp = btf__add_func_proto(btf, i64);
	btf__add_func_param(btf, "dfd", i32);
	btf__add_func_param(btf, "filename", pcchr);
	btf__add_func_param(btf, "how", phow);
	f = btf__add_func(btf, "do_sys_openat2", BTF_FUNC_STATIC, fp);
	fp = btf__add_func_proto(btf, ssize);
	btf__add_func_param(btf, "file", pfile);
	btf__add_func_param(btf, "buf", pchar);
	btf__add_func_param(btf, "count", size_t_);
	btf__add_func_param(btf, "pos", ploff);
	btf__add_func(btf, "vfs_read", BTF_FUNC_GLOBAL, fp);
	/* void kinds(bool b, enum pid_type t, const unsigned char *u, const char __user *s, ...) */
	fp = btf__add_func_proto(btf, 0);
	btf__add_func_param(btf, "b", bl);
	btf__add_func_param(btf, "t", en);
	btf__add_func_param(btf, "u", ucp);
	btf__add_func_param(btf, "s", ptag);
	btf__add_func_param(btf, NULL, 0);
	btf__add_func(btf, "kinds", BTF_FUNC_GLOBAL, fp);
	/* bool by_value(struct open_how how, double d) */
	fp = btf__add_func_proto(btf, bl);
	btf__add_func_param(btf, "how", how);
	btf__add_func_param(btf, "d", flt);
	btf__add_func(btf, "by_value", BTF_FUNC_GLOBAL, fp);
	/* struct open_how ret_struct(void) */
	btf__add_func(btf, "ret_struct", BTF_FUNC_GLOBAL, btf__add_func_proto(btf, how));
	/* enum pid_type ret_enum(void *) */
	fp = btf__add_func_proto(btf, en);
	btf__add_func_param(btf, "p", vp);
	btf__add_func(btf, "ret_enum", BTF_FUNC_GLOBAL, fp);
	assert_true(f > 0 && i32 > 0 && u32 > 0 && uchr > 0);
	raw = btf__raw_data(btf, &size);
	assert_non_null(raw);
	b = vmi_btf_new(raw, size, err, sizeof(err));
	assert_non_null(b);
	btf__free(btf); /* vmi_btf keeps its own copy */
	return b;
}

static void test_prototypes(void **state)
{
	struct vmi_btf *b = kernel_btf();
	struct vmi_btf_proto p;
	char err[160];

	(void)state;
	/* which names are C functions (FUNC records), not types or parameters */
	assert_true(vmi_btf_has_func(b, "do_sys_openat2"));
	assert_true(vmi_btf_has_func(b, "vfs_read"));
	assert_true(vmi_btf_has_func(b, "kinds"));
	assert_false(vmi_btf_has_func(b, "vfs_rea"));
	assert_false(vmi_btf_has_func(b, "dfd"));
	assert_false(vmi_btf_has_func(b, "ret_from_fork"));
	assert_false(vmi_btf_has_func(NULL, "vfs_read"));
	assert_int_equal(vmi_btf_func_proto(b, "do_sys_openat2", &p, err, sizeof(err)), 0);
	assert_int_equal(p.ret.cls, VMI_BTF_INT);
	assert_int_equal(p.ret.size, 8);
	assert_true(p.ret.is_signed);
	assert_int_equal(p.nr_params, 3);
	assert_false(p.variadic);
	assert_string_equal(p.params[0].name, "dfd");
	assert_int_equal(p.params[0].type.cls, VMI_BTF_INT);
	assert_int_equal(p.params[0].type.size, 4);
	assert_string_equal(p.params[1].name, "filename");
	assert_int_equal(p.params[1].type.cls, VMI_BTF_STRING);
	assert_string_equal(p.params[1].type.c, "char *");
	assert_int_equal(p.params[2].type.cls, VMI_BTF_PTR);

	assert_int_equal(vmi_btf_func_proto(b, "vfs_read", &p, err, sizeof(err)), 0);
	assert_int_equal(p.nr_params, 4);
	assert_int_equal(p.params[1].type.cls, VMI_BTF_STRING);
	/* size_t through two typedefs */
	assert_int_equal(p.params[2].type.cls, VMI_BTF_INT);
	assert_int_equal(p.params[2].type.size, 8);
	assert_false(p.params[2].type.is_signed);
	assert_int_equal(p.ret.cls, VMI_BTF_INT); /* ssize_t */
	assert_true(p.ret.is_signed);

	assert_int_equal(vmi_btf_func_proto(b, "kinds", &p, err, sizeof(err)), 0);
	assert_int_equal(p.ret.cls, VMI_BTF_VOID);
	assert_true(p.variadic);
	assert_int_equal(p.nr_params, 4);
	assert_true(p.params[0].type.is_bool);
	assert_int_equal(p.params[1].type.cls, VMI_BTF_ENUM);
	assert_true(p.params[1].type.is_signed);
	assert_int_equal(p.params[2].type.cls, VMI_BTF_STRING);
	assert_string_equal(p.params[2].type.c, "unsigned char *");
	assert_int_equal(p.params[3].type.cls, VMI_BTF_STRING); /* through const and a type tag */

	assert_int_equal(vmi_btf_func_proto(b, "by_value", &p, err, sizeof(err)), 0);
	assert_int_equal(p.params[0].type.cls, VMI_BTF_AGGREGATE);
	assert_string_equal(p.params[0].type.c, "struct open_how");
	assert_int_equal(p.params[1].type.cls, VMI_BTF_OTHER);

	assert_int_equal(vmi_btf_func_proto(b, "no_such_func", &p, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "BTF has no function no_such_func");
	vmi_btf_free(b);
}

static void test_members(void **state)
{
	struct vmi_btf *b = kernel_btf();
	struct vmi_btf_proto p;
	struct vmi_btf_value v;
	char err[160];
	uint32_t off = 0;

	(void)state;
	assert_int_equal(vmi_btf_func_proto(b, "vfs_read", &p, err, sizeof(err)), 0);
	/* file->f_path (in an anonymous union at +8), then path.name */
	assert_int_equal(vmi_btf_member(b, p.params[0].type.target, "f_path", &off, &v), 0);
	assert_int_equal(off, 8);
	assert_int_equal(v.cls, VMI_BTF_AGGREGATE);
	assert_int_equal(vmi_btf_member(b, v.id, "name", &off, &v), 0);
	assert_int_equal(off, 8);
	assert_int_equal(v.cls, VMI_BTF_STRING);
	assert_int_equal(vmi_btf_member(b, p.params[0].type.target, "f_flags", &off, &v),
			 -EOPNOTSUPP); /* a bitfield */
	assert_int_equal(vmi_btf_member(b, p.params[0].type.target, "nosuch", &off, &v), -ENOENT);
	assert_int_equal(vmi_btf_member(b, p.params[2].type.id, "x", &off, &v),
			 -ENOENT); /* an int */
	assert_int_equal(vmi_btf_struct_offset(b, "open_how", "resolve"), 16);
	assert_int_equal(vmi_btf_struct_offset(b, "file", "a"), 8);
	assert_int_equal(vmi_btf_struct_offset(b, "no_struct", "a"), -ENOENT);
	vmi_btf_free(b);
}

/* ---- hostile BTF ----------------------------------------------------------------------------- */

static struct vmi_btf *load(struct btf *btf, char *err, size_t errlen)
{
	__u32 size;
	const void *raw = btf__raw_data(btf, &size);
	struct vmi_btf *b = vmi_btf_new(raw, size, err, errlen);

	btf__free(btf);
	return b;
}

/* typedef a -> typedef b -> typedef a, and a const that is its own target: refused, not followed
 * for ever. */
static void test_type_loops(void **state)
{
	struct btf *btf = btf__new_empty();
	struct vmi_btf_proto p;
	struct vmi_btf *b;
	char err[160];
	int i32, fp, ta, self, s;

	(void)state;
	i32 = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	ta = btf__add_typedef(btf, "a", i32 + 2);		   /* -> b */
	assert_int_equal(btf__add_typedef(btf, "b", ta), i32 + 2); /* -> a */
	self = btf__add_const(btf, i32 + 3);			   /* itself */
	fp = btf__add_func_proto(btf, i32);
	btf__add_func_param(btf, "x", ta);
	btf__add_func(btf, "loop_param", BTF_FUNC_GLOBAL, fp);
	btf__add_func(btf, "loop_ret", BTF_FUNC_GLOBAL, btf__add_func_proto(btf, self));
	/* struct s { struct s; } as an anonymous member of itself */
	s = btf__add_struct(btf, "s", 8);
	btf__add_field(btf, NULL, s, 0, 0);
	b = load(btf, err, sizeof(err));
	assert_non_null(b);
	assert_int_equal(vmi_btf_func_proto(b, "loop_param", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "BTF of loop_param: broken type of parameter 1");
	assert_int_equal(vmi_btf_func_proto(b, "loop_ret", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "BTF of loop_ret: broken return type (id 4)");
	assert_int_equal(vmi_btf_struct_offset(b, "s", "x"), -EINVAL);
	vmi_btf_free(b);
}

/* Ids past the end of the table, a FUNC whose type is no prototype, more parameters than fit. */
static void test_dangling_and_wide(void **state)
{
	struct btf *btf = btf__new_empty();
	struct vmi_btf_proto p;
	struct vmi_btf *b;
	char err[160];
	int i32, fp;

	(void)state;
	i32 = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	fp = btf__add_func_proto(btf, i32);
	btf__add_func_param(btf, "x", 9999);
	btf__add_func(btf, "dangling", BTF_FUNC_GLOBAL, fp);
	btf__add_func(btf, "not_proto", BTF_FUNC_GLOBAL, i32);
	fp = btf__add_func_proto(btf, i32);
	for (int i = 0; i < 40; i++) {
		char name[8];

		snprintf(name, sizeof(name), "p%d", i);
		btf__add_func_param(btf, name, i32);
	}
	btf__add_func(btf, "wide", BTF_FUNC_GLOBAL, fp);
	b = load(btf, err, sizeof(err));
	assert_non_null(b); /* libbpf 1.1 does not check where ids point: vmi_btf must */
	assert_int_equal(vmi_btf_func_proto(b, "dangling", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "BTF of dangling: broken type of parameter 1");
	assert_int_equal(vmi_btf_func_proto(b, "not_proto", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "BTF of not_proto: its prototype is not a FUNC_PROTO");
	assert_int_equal(vmi_btf_func_proto(b, "wide", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "BTF of wide: 40 parameters (at most 32)");
	vmi_btf_free(b);
}

/* Raw bytes a guest could hold: truncated, a huge vlen past the end, garbage, too large. */
static void test_raw_hostile(void **state)
{
	struct btf *btf = btf__new_empty();
	struct btf_header hdr;
	uint8_t *copy;
	const uint8_t *raw;
	char err[160], want[160];
	int i32, fp;
	__u32 size;

	(void)state;
	i32 = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	fp = btf__add_func_proto(btf, i32);
	btf__add_func_param(btf, "x", i32);
	btf__add_func(btf, "f", BTF_FUNC_GLOBAL, fp);
	raw = btf__raw_data(btf, &size);
	copy = malloc(size);
	memcpy(copy, raw, size);
	memcpy(&hdr, copy, sizeof(hdr));

	for (__u32 cut = 0; cut < size; cut += 7)
		assert_null(vmi_btf_new(copy, cut ? cut : 1, err, sizeof(err)));
	/* the FUNC_PROTO (type 2, right after the int's 16 bytes) claims 65535 parameters */
	{
		struct btf_type *t = (struct btf_type *)(copy + hdr.hdr_len + hdr.type_off + 16);

		assert_int_equal(btf_kind(t), BTF_KIND_FUNC_PROTO);
		t->info = (t->info & ~0xffffu) | 0xffff;
		assert_null(vmi_btf_new(copy, size, err, sizeof(err)));
		assert_non_null(strstr(err, "refused by libbpf"));
		assert_null(strchr(err, '\n'));
	}
	/* type records off their 4-byte alignment */
	memcpy(&hdr, copy, sizeof(hdr));
	hdr.type_off += 1;
	memcpy(copy, &hdr, sizeof(hdr));
	assert_null(vmi_btf_new(copy, size, err, sizeof(err)));
	snprintf(want, sizeof(want), "BTF of %u bytes: unaligned type section", size);
	assert_string_equal(err, want);
	assert_null(vmi_btf_new("garbage!", 8, err, sizeof(err)));
	assert_string_equal(err, "BTF of 8 bytes: no BTF header");
	assert_null(vmi_btf_new(copy, VMI_BTF_MAX_SIZE + 1, err, sizeof(err)));
	assert_string_equal(err, "BTF of 67108865 bytes is implausible");
	assert_null(vmi_btf_new(copy, 0, err, sizeof(err)));
	free(copy);
	btf__free(btf);
}

/* ---- specs typed from BTF -------------------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	memset(mem, 0, sizeof(mem));
	fake_mem_init(&fake);
	fake_mem_map(&fake, BASE, mem, sizeof(mem));
	strcpy((char *)mem + 0x100, "/etc/motd");
	strcpy((char *)mem + 0x200, "say \"hi\"\n");
	return 0;
}

/* Parses @text (an -r spec when @is_return), resolves it against @b and returns the status, with
 * the error in @err or the printed fields for @regs in @out. */
static int resolve(const char *text, bool is_return, const struct vmi_btf *b,
		   const struct arch_regs *regs, char *out, size_t len)
{
	struct fe_spec s;
	uint8_t payload[4096];
	size_t pos;
	int ret;

	if (fe_parse(text, &s, out, len, &pos) < 0)
		fail_msg("'%s': %s at %zu", text, out, pos);
	s.ret_hex = is_return && !strchr(text, '*') && !strcmp(strchr(text, '('), "(ret)");
	ret = fe_resolve_btf(&s, is_return, b, out, len);
	if (ret < 0)
		return ret;
	assert_true(fe_payload_size(&s) <= sizeof(payload));
	fe_capture(arch_default(), &s, regs, fake_mem_read, &fake, payload);
	fe_format(out, len, &s, payload, NULL);
	return 0;
}

static void test_parse_forms(void **state)
{
	struct fe_spec s;
	char err[128];
	size_t pos;

	(void)state;
	assert_int_equal(fe_parse("do_sys_openat2(dfd, filename)", &s, err, sizeof(err), &pos), 0);
	assert_int_equal(s.nr_fields, 2);
	assert_true(s.fields[0].untyped && s.fields[1].untyped);
	assert_true(fe_needs_btf(&s));
	assert_int_equal(fe_parse("vfs_read( * )", &s, err, sizeof(err), &pos), 0);
	assert_true(s.all_args);
	assert_int_equal(s.nr_fields, 0);
	assert_int_equal(fe_parse("f(int a, b | x64 c)", &s, err, sizeof(err), &pos), -EINVAL);
	assert_string_equal(err, "unknown type 'b'"); /* only ',' or ')' ends a name alone */
	assert_int_equal(fe_parse("f(int a, b, x64 c)", &s, err, sizeof(err), &pos), 0);
	assert_false(s.fields[0].untyped);
	assert_true(s.fields[1].untyped);
	assert_int_equal(s.fields[2].arg, 2);
	assert_int_equal(fe_parse("f(a, *)", &s, err, sizeof(err), &pos), -EINVAL);
	assert_string_equal(err, "'*' (every argument) comes alone");
	assert_int_equal(pos, 5);
	assert_int_equal(fe_parse("f(*, a)", &s, err, sizeof(err), &pos), -EINVAL);
	assert_int_equal(pos, 2);
	assert_int_equal(fe_parse("f(a, a)", &s, err, sizeof(err), &pos), -EINVAL);
	assert_string_equal(err, "duplicate field name");
	/* a type word alone is still a type without a name */
	assert_int_equal(fe_parse("f(int)", &s, err, sizeof(err), &pos), -EINVAL);
	assert_string_equal(err, "expected a field name");
	assert_int_equal(
	    fe_parse("f(a_name_that_is_far_too_long_for_a_field->and_its_member_too_long)", &s, err,
		     sizeof(err), &pos),
	    -EINVAL);
	assert_string_equal(err, "field name too long");
	assert_int_equal(
	    fe_parse("f(file->f_path.dentry->d_name.name)", &s, err, sizeof(err), &pos), 0);
	assert_string_equal(s.fields[0].name, "file->f_path.dentry->d_name.name");
	assert_true(s.fields[0].untyped);
	assert_int_equal(fe_parse("f(file->)", &s, err, sizeof(err), &pos), -EINVAL);
	assert_string_equal(err, "expected a member name");
	assert_int_equal(pos, 8);
	/* fully typed: nothing for BTF to do, and unchanged by it */
	assert_int_equal(fe_parse("f(int a)", &s, err, sizeof(err), &pos), 0);
	assert_false(fe_needs_btf(&s));
	assert_int_equal(fe_resolve_btf(&s, false, NULL, err, sizeof(err)), 0);
	assert_false(s.fprobe_style);
}

static void test_events_typed(void **state)
{
	struct vmi_btf *b = kernel_btf();
	struct arch_regs r = {.r[X86_RDI] = (uint64_t)-100,
			      .r[X86_RSI] = BASE + 0x100,
			      .r[X86_RDX] = 0xffff888000001000ull,
			      .r[X86_RCX] = 0x1};
	struct arch_regs rr = {.r[X86_RDI] = 0xffff888000002000ull,
			       .r[X86_RSI] = BASE + 0x200,
			       .r[X86_RDX] = 64,
			       .r[X86_RCX] = BASE + 0xff8};
	char out[512];

	(void)state;
	assert_int_equal(resolve("do_sys_openat2(dfd, filename)", false, b, &r, out, sizeof(out)),
			 0);
	assert_string_equal(out, "dfd=-100 filename=\"/etc/motd\"");
	/* order of the spec, positions of the prototype */
	assert_int_equal(resolve("do_sys_openat2(how, dfd)", false, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "how=0xffff888000001000 dfd=-100");
	assert_int_equal(resolve("vfs_read(*)", false, b, &rr, out, sizeof(out)), 0);
	assert_string_equal(out, "file=0xffff888000002000 buf=\"say \\\"hi\\\"\\n\" count=64 "
				 "pos=0x10ff8");
	/* mixed with typed fields: all printed fprobe-style */
	assert_int_equal(resolve("do_sys_openat2(x32 d, string f, how, u8[2] c)", false, b, &r, out,
				 sizeof(out)),
			 0);
	assert_string_equal(out, "d=0xffffff9c f=\"/etc/motd\" how=0xffff888000001000 c=(fault)");
	r.r[X86_RCX] = BASE + 0x100;
	assert_int_equal(resolve("do_sys_openat2(NULL, NULL, NULL, u8[2] c, dfd)", false, b, &r,
				 out, sizeof(out)),
			 0);
	assert_string_equal(out, "c={47,101} dfd=-100");
	/* an unreadable string */
	r.r[X86_RSI] = 0x42;
	assert_int_equal(resolve("do_sys_openat2(filename)", false, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "filename=(fault)");
	r.r[X86_RDI] = 1;
	r.r[X86_RSI] = (uint64_t)-1;
	r.r[X86_RDX] = BASE + 0x100;
	r.r[X86_RCX] = BASE + 0x200;
	assert_int_equal(resolve("kinds(*)", false, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "b=1 t=-1 u=\"/etc/motd\" s=\"say \\\"hi\\\"\\n\"");
	vmi_btf_free(b);
}

static void test_events_refused(void **state)
{
	struct vmi_btf *b = kernel_btf();
	struct arch_regs r = {0};
	char out[512];

	(void)state;
	assert_int_equal(resolve("do_sys_openat2(dfd, fname)", false, b, &r, out, sizeof(out)),
			 -EINVAL);
	assert_string_equal(out, "do_sys_openat2 has no parameter 'fname' (its parameters: dfd, "
				 "filename, how)");
	assert_int_equal(resolve("ret_struct(x)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "ret_struct has no parameter 'x' (it has none)");
	assert_int_equal(resolve("by_value(how)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "by_value: parameter 'how' is struct open_how passed by value, "
				 "which hvtrace does not decode");
	assert_int_equal(resolve("by_value(d)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "by_value: parameter 'd' has type BTF kind 16, which hvtrace does "
				 "not decode");
	assert_int_equal(resolve("by_value(*)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_int_equal(resolve("nosuch(a)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "BTF has no function nosuch");
	/* a guest without BTF */
	assert_int_equal(
	    resolve("do_sys_openat2(int dfd, filename)", false, NULL, &r, out, sizeof(out)),
	    -EINVAL);
	assert_string_equal(out,
			    "do_sys_openat2: 'filename' has no type, and this guest has no BTF "
			    "to take it from (give one, e.g. 'long filename')");
	assert_int_equal(resolve("vfs_read(*)", false, NULL, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out,
			    "vfs_read(*): every argument needs the guest's BTF, and this guest "
			    "has none");
	vmi_btf_free(b);
}

/* Struct members by name: offsets from BTF, '->' through pointers, a char pointer member as a
 * string. */
static void test_members_by_name(void **state)
{
	struct vmi_btf *b = kernel_btf();
	struct arch_regs r = {
	    .r[X86_RDI] = BASE + 0x300, .r[X86_RSI] = BASE + 0x100, .r[X86_RDX] = 3};
	char out[512];

	(void)state;
	memset(mem + 0x300, 0, 0x200);
	memcpy(mem + 0x300 + 8, &(uint64_t){7}, 8);		/* file->f_path.mnt, file->a */
	memcpy(mem + 0x300 + 16, &(uint64_t){BASE + 0x100}, 8); /* file->f_path.name */
	memcpy(mem + 0x300 + 24, &(uint64_t){BASE + 0x400}, 8); /* file->f_path.how */
	memcpy(mem + 0x400 + 8, &(uint64_t){0755}, 8);		/* how->mode */
	assert_int_equal(resolve("vfs_read(file->f_path.name, file->f_path.how->mode, file->a, "
				 "file->f_path.how, count)",
				 false, b, &r, out, sizeof(out)),
			 0);
	assert_string_equal(out, "file->f_path.name=\"/etc/motd\" file->f_path.how->mode=493 "
				 "file->a=7 file->f_path.how=0x10400 count=3");
	/* a NULL pointer on the way */
	memcpy(mem + 0x300 + 24, &(uint64_t){0}, 8);
	assert_int_equal(
	    resolve("vfs_read(file->f_path.how->mode)", false, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "file->f_path.how->mode=(fault)");

	assert_int_equal(resolve("vfs_read(file->f_flags)", false, b, &r, out, sizeof(out)),
			 -EINVAL);
	assert_string_equal(out, "vfs_read: 'file->f_flags': a bitfield, which hvtrace does not "
				 "decode: 'f_flags'");
	assert_int_equal(resolve("vfs_read(file->nosuch)", false, b, &r, out, sizeof(out)),
			 -EINVAL);
	assert_string_equal(out, "vfs_read: 'file->nosuch': no member 'nosuch'");
	assert_int_equal(resolve("vfs_read(file.a)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out,
			    "vfs_read: '.a' in 'file.a': not a struct (struct file *), use '->'");
	assert_int_equal(resolve("vfs_read(count->x)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "vfs_read: '->x' in 'count->x': not a pointer to a struct "
				 "(long unsigned int)");
	assert_int_equal(resolve("vfs_read(buf->x)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "vfs_read: '->x' in 'buf->x': not a pointer to a struct (char *)");
	assert_int_equal(resolve("vfs_read(file->f_path)", false, b, &r, out, sizeof(out)),
			 -EINVAL);
	assert_string_equal(out,
			    "vfs_read: 'file->f_path' is struct path: name one of its members");
	assert_int_equal(resolve("vfs_read(fil->a)", false, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out,
			    "vfs_read has no parameter 'fil' (its parameters: file, buf, count, "
			    "pos)");
	vmi_btf_free(b);
}

/* -r: RAX (handed over as the first argument) in the return's type. */
static void test_returns(void **state)
{
	struct vmi_btf *b = kernel_btf();
	struct arch_regs r = {.r[X86_RDI] = (uint64_t)-2};
	char out[512];

	(void)state;
	assert_int_equal(resolve("do_sys_openat2(ret)", true, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "ret=-2");
	assert_int_equal(resolve("ret_enum(ret)", true, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "ret=-2");
	assert_int_equal(resolve("by_value(ret)", true, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "ret=254"); /* bool: u8 of RAX */
	assert_int_equal(resolve("kinds(ret)", true, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, ""); /* void: no value */
	assert_int_equal(resolve("ret_struct(ret)", true, b, &r, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "ret_struct: its return value is struct open_how passed by value, "
				 "which hvtrace does not decode");
	/* a bare -r of a function BTF does not know, or without BTF: RAX in hex, as ever */
	assert_int_equal(resolve("nosuch(ret)", true, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "ret=fffffffffffffffe");
	assert_int_equal(resolve("do_sys_openat2(ret)", true, NULL, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "ret=fffffffffffffffe");
	/* typed: as written */
	assert_int_equal(resolve("do_sys_openat2(u8 ret)", true, b, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "ret=254");
	vmi_btf_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prototypes),	    cmocka_unit_test(test_members),
	    cmocka_unit_test(test_type_loops),	    cmocka_unit_test(test_dangling_and_wide),
	    cmocka_unit_test(test_raw_hostile),	    cmocka_unit_test(test_parse_forms),
	    cmocka_unit_test(test_events_typed),    cmocka_unit_test(test_events_refused),
	    cmocka_unit_test(test_members_by_name), cmocka_unit_test(test_returns),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
