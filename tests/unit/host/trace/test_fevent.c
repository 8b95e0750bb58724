/* Function-based event specs (seed 003's grammar): parsing of every type and form, error positions,
 * capture from registers and (fake) guest memory, and the printed values. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/fevent.h"
#include "tests/common/fake_mem.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Guest memory for the tests: 64 KiB at 0x10000. */
static uint8_t mem[0x10000];
static struct fake_mem fake;
#define BASE 0x10000ull

static struct vmi_symtab syms;

static int setup(void **state)
{
	uint64_t p;

	(void)state;
	memset(mem, 0, sizeof(mem));
	fake_mem_init(&fake);
	fake_mem_map(&fake, BASE, mem, sizeof(mem));
	strcpy((char *)mem + 0x100, "/etc/motd");		/* a string */
	memcpy(mem + 0x200, "\x01\x02\x0a\xff\x10\x20", 6);	/* a mac address */
	p = BASE + 0x400;
	memcpy(mem + 0x300 + 16, &p, 8);			/* skb->dev at +16 */
	memcpy(mem + 0x400 + 558, "\xde\xad\xbe\xef\x00\x01", 6); /* dev->perm_addr at +558 */
	for (uint64_t i = 0; i < 32; i++)
		memcpy(mem + 0x500 + 8 * i, &(uint64_t){0x1000 + i}, 8); /* a u64 array */
	memcpy(mem + 0x600, "abcdefghij", 10);
	memcpy(mem + 0x700 + 40, &(uint64_t){BASE + 0x800}, 8);
	memcpy(mem + 0x800 + 16, &(uint64_t){0xffffffff81000123ull}, 8);
	memcpy(mem + 0x900, &(int32_t){1419}, 4); /* a global: total_forks */
	vmi_symtab_add(&syms, 0xffffffff81000100ull, 0x80, "vfs_read");
	vmi_symtab_sort(&syms);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	vmi_symtab_free(&syms);
	return 0;
}

/* Parses @spec, captures it for @regs, and checks the printed fields. */
static void expect(const char *spec, const struct arch_regs *regs, const char *want)
{
	struct fe_spec s;
	char err[128], out[1024];
	size_t pos;
	uint8_t payload[4096];

	if (fe_parse(spec, &s, err, sizeof(err), &pos) < 0)
		fail_msg("'%s': %s at %zu", spec, err, pos);
	assert_true(fe_payload_size(&s) <= sizeof(payload));
	fe_capture(arch_default(), &s, regs, fake_mem_read, &fake, payload);
	fe_format(out, sizeof(out), &s, payload, &syms);
	assert_string_equal(out, want);
}

static void test_scalar_types(void **state)
{
	struct arch_regs r = {.r[X86_RDI] = (uint64_t)-100,
			      .r[X86_RSI] = 0xff,
			      .r[X86_RDX] = 0x12345678,
			      .r[X86_RCX] = 0xfffffffffffffffeull,
			      .r[X86_R8] = 7,
			      .r[X86_R9] = 0x8000};

	(void)state;
	expect("f(int dfd)", &r, "dfd=-100");
	expect("f(long a, char b, short c)", &r, "a=-100, b=-1, c=22136");
	expect("f(unsigned int a, unsigned char b, unsigned long c, unsigned short d)", &r,
	       "a=4294967196, b=255, c=305419896, d=65534");
	expect("f(unsigned a)", &r, "a=4294967196");
	expect("f(s8 a, s16 b, s32 c, s64 d, u8 e, u16 f)", &r,
	       "a=-100, b=255, c=305419896, d=-2, e=7, f=32768");
	expect("f(u32 a, u64 b, x8 c, x16 d, x32 e, x64 f)", &r,
	       "a=4294967196, b=255, c=78, d=fffe, e=7, f=8000");
}

static void test_symbol(void **state)
{
	struct arch_regs r = {
	    .r[X86_RDI] = 0xffffffff81000123ull, .r[X86_RSI] = 0, .r[X86_RDX] = 0x42};

	(void)state;
	expect("f(symbol ip, symbol none, symbol odd)", &r,
	       "ip=vfs_read+0x23/0x80, none=(null), odd=0x42");
}

static void test_strings(void **state)
{
	struct arch_regs r = {
	    .r[X86_RDI] = BASE + 0x100, .r[X86_RSI] = BASE + 0x600, .r[X86_RDX] = 0x42};

	(void)state;
	expect("do_sys_openat2(string filename)", &r, "filename=/etc/motd");
	expect("f(NULL, char[4] s)", &r, "s=abcd");
	expect("f(NULL, unsigned char[10] s)", &r, "s=abcdefghij");
	expect("f(NULL, NULL, string bad)", &r, "bad=(fault)");
}

static void test_arrays_and_index(void **state)
{
	struct arch_regs r = {.r[X86_RDI] = BASE + 0x200, .r[X86_RSI] = BASE + 0x500};

	(void)state;
	expect("f(x8[6] mac)", &r, "mac=1,2,a,ff,10,20");
	expect("f(u8[3] b)", &r, "b=1,2,10");
	expect("f(NULL, x64 ip[16])", &r, "ip=1010");
	expect("f(NULL, u64[3] v[2])", &r, "v=4098,4099,4100");
	expect("f(NULL, x64 ip[16] | x64[2] two[30])", &r, "ip=1010, two=101e,101f");
}

static void test_chains(void **state)
{
	struct arch_regs r = {
	    .r[X86_RDI] = BASE + 0x300, .r[X86_RSI] = BASE + 0x700, .r[X86_RDX] = BASE + 0x100};

	(void)state;
	/* skb->dev->perm_addr */
	expect("f(x8[6] perm_addr+16[0]+558)", &r, "perm_addr=de,ad,be,ef,0,1");
	expect("f(NULL, symbol read+40[0]+16)", &r, "read=vfs_read+0x23/0x80");
	/* a chain ending in a dereference gives the pointer read there */
	expect("f(x64 dev+16[0])", &r, "dev=10400");
	expect("f(NULL, NULL, string name+0)", &r, "name=/etc/motd");
	expect("f(NULL, NULL, char c+5)", &r, "c=109"); /* 'm' */
	expect("f(x64 p-8[0])", &r, "p=0");
	expect("f(x64 bad+0x100000[0])", &r, "bad=(fault)");
}

/* Arguments past the sixth come from the stack, above the return address. */
static void test_stack_args(void **state)
{
	struct arch_regs r = {.r[X86_RSP] = BASE + 0x900};

	(void)state;
	memcpy(mem + 0x900 + 8, &(uint64_t){77}, 8);
	memcpy(mem + 0x900 + 16, &(uint64_t){(uint64_t)-5}, 8);
	expect("f(NULL, NULL, NULL, NULL, NULL, NULL, int g, long h)", &r, "g=77, h=-5");
}

static void expect_error(const char *spec, size_t want_pos, const char *want)
{
	struct fe_spec s;
	char err[128];
	size_t pos;

	assert_int_equal(fe_parse(spec, &s, err, sizeof(err), &pos), -EINVAL);
	assert_string_equal(err, want);
	assert_int_equal(pos, want_pos);
}

/* size_t and ssize_t, and seed 003's direct address "type name=ADDR": a global read at ADDR, taking
 * no argument position; address steps may follow. */
static void test_size_t_and_direct(void **state)
{
	struct arch_regs r = {
	    .r[X86_RDI] = 5, .r[X86_RSI] = (uint64_t)-1, .r[X86_RDX] = BASE + 0x100};
	struct fe_spec s;
	char err[128];
	size_t pos;

	(void)state;
	expect("f(size_t n, ssize_t m)", &r, "n=5, m=-1");
	expect("f(size_t n, size_t big)", &r, "n=5, big=18446744073709551615");
	expect("f(int total_forks=0x10900)", &r, "total_forks=1419");
	/* the global takes no position: n is still the first argument, s the third */
	expect("f(int total=0x10900, size_t n, NULL, string s)", &r,
	       "total=1419, n=5, s=/etc/motd");
	expect("f(size_t n, int total=67840)", &r, "n=5, total=1419"); /* decimal */
	expect("f(x64 p=0x10700+40[0])", &r, "p=10800");
	expect("f(x8[3] b=0x10200)", &r, "b=1,2,a");
	expect("f(int g=0x1)", &r, "g=(fault)");
	assert_int_equal(fe_parse("f(int g=0xffffffff82354c18, u32 a)", &s, err, sizeof(err), &pos),
			 0);
	assert_true(s.fields[0].direct);
	assert_true(s.fields[0].addr == 0xffffffff82354c18ull);
	assert_int_equal(s.fields[1].arg, 0);
	assert_int_equal(s.nr_args, 1);
	assert_false(fe_registers_only(&s));
	expect_error("f(int g=)", 8, "expected an address");
	expect_error("f(int g=x)", 8, "expected an address");
	expect_error("f(int g=-1)", 8, "expected an address");
	expect_error("f(int g=0x1ffffffffffffffff)", 8, "address out of range (at most 64 bits)");
}

/* Chained specs (several -e of one function): one payload, each spec's part after the previous. */
static void test_chain(void **state)
{
	struct arch_regs r = {.r[X86_RDI] = 7, .r[X86_RSI] = BASE + 0x100};
	struct fe_spec a, b, c;
	char err[128], out[256];
	size_t pos;
	uint8_t payload[512];

	(void)state;
	assert_int_equal(fe_parse("f(int x)", &a, err, sizeof(err), &pos), 0);
	assert_int_equal(fe_parse("f(NULL, string s)", &b, err, sizeof(err), &pos), 0);
	assert_int_equal(fe_parse("f(int x=0x10900)", &c, err, sizeof(err), &pos), 0);
	assert_int_equal(fe_event_size(&a), 9);
	assert_int_equal(fe_event_size(&b), 1 + FE_MAX_STRING);
	assert_true(fe_registers_only(&a));
	a.next = &b;
	b.next = &c;
	assert_int_equal(fe_payload_size(&a), 9 + 1 + FE_MAX_STRING + 9);
	assert_false(fe_registers_only(&a));
	fe_capture(arch_default(), &a, &r, fake_mem_read, &fake, payload);
	fe_format(out, sizeof(out), &a, payload, &syms);
	assert_string_equal(out, "x=7");
	fe_format(out, sizeof(out), &b, payload + 9, &syms);
	assert_string_equal(out, "s=/etc/motd");
	fe_format(out, sizeof(out), &c, payload + 9 + 1 + FE_MAX_STRING, &syms);
	assert_string_equal(out, "x=1419");
}

/* func+OFFSET (an instruction inside a function, kprobe's p:FUNC+OFF) and name=%REG fields:
 * registers and addresses only there, never an argument by position or by name. */
static void test_inside_and_registers(void **state)
{
	struct arch_regs r = {.r[X86_RAX] = BASE + 0x100,
			      .r[X86_RBX] = 3,
			      .r[X86_RDI] = 5,
			      .r[X86_R15] = BASE + 0x700,
			      .r[X86_RIP] = 0xffffffff81000110ull,
			      .r[X86_RFLAGS] = 0x246};
	struct fe_spec s;
	char err[128], label[64];
	size_t pos;

	(void)state;
	assert_int_equal(fe_parse("vfs_read+0x10(u64 a=%rdi)", &s, err, sizeof(err), &pos), 0);
	assert_int_equal(s.offset, 16);
	assert_string_equal(s.func, "vfs_read");
	assert_string_equal(fe_label(&s, label, sizeof(label)), "vfs_read+0x10");
	assert_int_equal(s.fields[0].reg, 6); /* rdi: the sixth of struct arch_regs */
	assert_int_equal(s.nr_args, 0);
	assert_true(fe_registers_only(&s)); /* a stub saves the six argument registers */
	assert_false(fe_return_register_only(&s));
	assert_int_equal(fe_parse("f+4(u64 a=%r9, u64 b=%rcx)", &s, err, sizeof(err), &pos), 0);
	assert_true(fe_registers_only(&s));
	assert_int_equal(fe_parse("f+4(u64 a=%rdi, u64 b=%rbx)", &s, err, sizeof(err), &pos), 0);
	assert_false(fe_registers_only(&s)); /* RBX: no stub saves it */
	assert_int_equal(fe_parse("f+4(u64 a=%rax)", &s, err, sizeof(err), &pos), 0);
	assert_false(fe_registers_only(&s));
	assert_int_equal(fe_parse("f+4(u64 a=%rdi+8[0])", &s, err, sizeof(err), &pos), 0);
	assert_false(fe_registers_only(&s)); /* guest memory */
	assert_int_equal(fe_parse("vfs_read+24(u64 a=%rdi)", &s, err, sizeof(err), &pos), 0);
	assert_int_equal(s.offset, 24);
	assert_int_equal(fe_parse("vfs_read(u64 a)", &s, err, sizeof(err), &pos), 0);
	assert_string_equal(fe_label(&s, label, sizeof(label)), "vfs_read");
	expect("f+4(u64 a=%rdi, u32 b=%rbx, x64 flags=%rflags, symbol ip=%rip)", &r,
	       "a=5, b=3, flags=246, ip=vfs_read+0x10/0x80");
	expect("f+4(string name=%rax, x64 p=%r15+40[0]+16[0])", &r,
	       "name=/etc/motd, p=ffffffff81000123");
	/* at an entry a register field takes no argument position either */
	expect("f(u32 b=%rbx, u64 first)", &r, "b=3, first=5");
	expect_error("f(u64 a=%rzz)", 9, "expected a register (rax..r15, rip, rflags)");
	expect_error("f(u64 a=%)", 9, "expected a register (rax..r15, rip, rflags)");
	expect_error("f+4(u64 a)", 4,
		     "inside a function the arguments may be gone: read a register (type "
		     "name=%REG) or an address (type name=0xADDR)");
	expect_error("f+4(a)", 4,
		     "inside a function the arguments may be gone: read a register (type "
		     "name=%REG) or an address (type name=0xADDR)");
	expect_error("f+4(*)", 4, "'*' (every argument) is for a function's entry, not inside it");
	expect_error("f+(u64 a=%rdi)", 2, "expected a number");
	expect_error("f+0x100001(u64 a=%rdi)", 2, "offset out of range (0..1048576)");
	expect_error("f+-1(u64 a=%rdi)", 2, "expected a number");
}

static void test_errors(void **state)
{
	char buf[256];

	(void)state;
	expect_error("", 0, "expected a function name");
	expect_error("f", 1, "expected '('");
	expect_error("f(int)", 5, "expected a field name");
	expect_error("f(int a", 7, "expected ',' or ')'");
	expect_error("f(float x)", 2, "unknown type 'float'");
	expect_error("f(int a, int a)", 9, "duplicate field name");
	expect_error("f(x8[0] m)", 5, "array length out of range (1..64)");
	expect_error("f(x8[65] m)", 5, "array length out of range (1..64)");
	expect_error("f(x8[6 m)", 6, "expected ']'");
	expect_error("f(string[4] s)", 8, "no arrays of this type");
	expect_error("f(int a+)", 8, "expected a number");
	expect_error("f(int a) x", 9, "unexpected text after ')'");
	expect_error("f(x64 a+1+2+3+4+5+6+7+8+9)", 23, "too many offsets and dereferences");
	fe_format_error(buf, sizeof(buf), "f(float x)", 2, "unknown type 'float'");
	assert_string_equal(buf, "f(float x)\n  ^ unknown type 'float'");
}

/* Every number of the grammar is bounded before it is used: an index whose byte offset would
 * overflow int64 (UBSan: signed overflow in v * size), huge array lengths and offsets, numbers out
 * of strtoll's range, signs where none belongs; and the counts: argument positions, the function
 * name. */
static void test_number_bounds(void **state)
{
	char name[200];

	(void)state;
	expect_error("f(long a[9223372036854775807])", 9,
		     "index out of range (-536870912..536870912)");
	expect_error("f(long a[-9223372036854775808])", 9,
		     "index out of range (-536870912..536870912)");
	expect_error("f(char c[4294967297])", 9, "index out of range (-4294967296..4294967296)");
	expect_error("f(x8[99999999999999999999] m)", 5, "array length out of range (1..64)");
	expect_error("f(char[129] s)", 7, "array length out of range (1..128)");
	expect_error("f(x8[-1] m)", 5, "expected a number");
	expect_error("f(x64 a+4294967297)", 8, "offset out of range (0..4294967296)");
	expect_error("f(x64 a--5)", 8, "expected a number");
	expect_error("f(x64 a+-5)", 8, "expected a number");
	expect_error("f(x64 a+ 5)", 8, "expected a number");
	expect_error("f(x64 a[536870913])", 8, "index out of range (-536870912..536870912)");
	expect_error("f(x64 a+8[-536870913])", 10, "index out of range (-536870912..536870912)");
	expect_error("f(x64 a[0x7fffffffffffffff])", 8,
		     "index out of range (-536870912..536870912)");
	expect_error(
	    "f(NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,"
	    "NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,"
	    "NULL,x64 a)",
	    162, "too many arguments");
	memset(name, 'g', 128);
	strcpy(name + 128, "(x64 a)");
	expect_error(name, 0, "function name too long");
}

/* The bounds themselves are accepted, and chains reach as far as they say. */
static void test_number_limits(void **state)
{
	struct fe_spec s;
	char err[128];
	size_t pos;

	(void)state;
	assert_int_equal(fe_parse("f(x64 a[-536870912]+4294967296-4294967296[536870912])", &s, err,
				  sizeof(err), &pos),
			 0);
	assert_int_equal(s.fields[0].nr_steps, 4);
	assert_int_equal(s.fields[0].steps[0].offset, -4294967296ll);
	assert_int_equal(s.fields[0].steps[1].offset, 4294967296ll);
	assert_int_equal(s.fields[0].steps[2].offset, -4294967296ll);
	assert_int_equal(s.fields[0].steps[3].offset, 536870912);
	assert_true(s.fields[0].steps[3].deref);
	assert_int_equal(fe_parse("f(x8[0x40] m, char[0200] c)", &s, err, sizeof(err), &pos), 0);
	assert_int_equal(s.fields[0].count, 64);
	assert_int_equal(s.fields[1].count, 128);
}

static void test_shape(void **state)
{
	struct fe_spec s;
	char err[128];
	size_t pos;

	(void)state;
	assert_int_equal(fe_parse(" do_IRQ ( symbol ip[16] | x64[6] irq_stack[16] , NULL, int c ) ",
				  &s, err, sizeof(err), &pos),
			 0);
	assert_string_equal(s.func, "do_IRQ");
	assert_int_equal(s.nr_args, 3);
	assert_int_equal(s.nr_fields, 3);
	assert_int_equal(s.fields[0].arg, 0);
	assert_int_equal(s.fields[1].arg, 0);
	assert_int_equal(s.fields[1].count, 6);
	assert_int_equal(s.fields[2].arg, 2);
	assert_int_equal(fe_parse("f()", &s, err, sizeof(err), &pos), 0);
	assert_int_equal(s.nr_fields, 0);
	assert_int_equal(fe_payload_size(&s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scalar_types),  cmocka_unit_test(test_symbol),
	    cmocka_unit_test(test_strings),	  cmocka_unit_test(test_arrays_and_index),
	    cmocka_unit_test(test_chains),	  cmocka_unit_test(test_stack_args),
	    cmocka_unit_test(test_errors),	  cmocka_unit_test(test_shape),
	    cmocka_unit_test(test_number_bounds), cmocka_unit_test(test_number_limits),
	    cmocka_unit_test(test_size_t_and_direct), cmocka_unit_test(test_chain),
	    cmocka_unit_test(test_inside_and_registers),
	};

	return cmocka_run_group_tests_name("fevent", tests, setup, teardown);
}
