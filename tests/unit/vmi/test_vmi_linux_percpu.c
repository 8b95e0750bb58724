/* vmi_linux_tsc_aux: whether Linux set IA32_TSC_AUX (its boot CPU has RDTSCP), read from
 * boot_cpu_data.x86_capability[1] bit 27 at its BTF offset, every byte from guest memory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/fake_mem.h"
#include "vmi/vmi_btf.h"
#include "vmi/vmi_linux.h"

#include <bpf/btf.h>
#include <errno.h>
#include <string.h>

#define BCD	0xffffffff82a00000ull /* boot_cpu_data */
#define CAP_OFF 24		      /* x86_capability in struct cpuinfo_x86 */

static uint8_t mem[256];
static struct fake_mem fake;

/* struct cpuinfo_x86 { u8 x86; ...; u32 x86_capability[21] at CAP_OFF; } */
static struct vmi_btf *cpuinfo_btf(void)
{
	struct btf *btf = btf__new_empty();
	int u8, u32, idx, arr, st;
	const void *raw;
	struct vmi_btf *b;
	char err[160];
	__u32 size;

	u8 = btf__add_int(btf, "unsigned char", 1, 0);
	u32 = btf__add_int(btf, "unsigned int", 4, 0);
	idx = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	arr = btf__add_array(btf, idx, u32, 21);
	st = btf__add_struct(btf, "cpuinfo_x86", CAP_OFF + 21 * 4);
	btf__add_field(btf, "x86", u8, 0, 0);
	btf__add_field(btf, "x86_capability", arr, CAP_OFF * 8, 0);
	(void)st;
	raw = btf__raw_data(btf, &size);
	b = vmi_btf_new(raw, size, err, sizeof(err));
	btf__free(btf);
	assert_non_null(b);
	return b;
}

static void set_word1(uint32_t w)
{
	memcpy(mem + CAP_OFF + 4, &w, 4);
}

static void test_tsc_aux(void **state)
{
	struct vmi_linux l;
	uint32_t mask = 1;

	(void)state;
	memset(&l, 0, sizeof(l));
	memset(mem, 0, sizeof(mem));
	fake_mem_init(&fake);
	fake_mem_map(&fake, BCD, mem, sizeof(mem));

	/* no BTF, then no symbol: not known */
	assert_int_equal(vmi_linux_tsc_aux(&l, fake_mem_read, &fake, &mask), -ENOENT);
	assert_int_equal(mask, 0);
	l.btf = cpuinfo_btf();
	assert_int_equal(vmi_linux_tsc_aux(&l, fake_mem_read, &fake, &mask), -ENOENT);
	assert_int_equal(vmi_symtab_add(&l.objects, BCD, CAP_OFF + 84, "boot_cpu_data"), 0);

	/* RDTSCP (word 1 = CPUID 0x80000001 EDX, bit 27) */
	set_word1(1u << 27 | 1u << 11);
	mask = 0;
	assert_int_equal(vmi_linux_tsc_aux(&l, fake_mem_read, &fake, &mask), 0);
	assert_int_equal(mask, 0xfff);
	/* every other bit set but that one: no */
	set_word1(~(1u << 27));
	assert_int_equal(vmi_linux_tsc_aux(&l, fake_mem_read, &fake, &mask), -ENOTSUP);
	assert_int_equal(mask, 0);
	/* unreadable */
	set_word1(1u << 27);
	fake.fail_read = fake.reads + 1;
	assert_int_equal(vmi_linux_tsc_aux(&l, fake_mem_read, &fake, &mask), -EFAULT);
	assert_int_equal(mask, 0);
	fake.fail_read = 0;
	assert_int_equal(vmi_linux_tsc_aux(&l, fake_mem_read, &fake, &mask), 0);
	vmi_btf_free(l.btf);
	vmi_symtab_free(&l.objects);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tsc_aux),
	};

	return cmocka_run_group_tests_name("tsc_aux", tests, NULL, NULL);
}
