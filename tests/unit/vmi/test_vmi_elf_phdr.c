/* vmi/vmi_elf_phdr: the program header table checked as a whole, on copies of the test guest with
 * one field edited each (issue 37, class 11): p_filesz > p_memsz, overlapping PT_LOADs, e_phnum
 * 65535 with the table past the end, PN_XNUM without section header 0, a wrong e_phentsize, a
 * range that wraps. Each is named (header, field) by vmi_elf_load_segments and by vmi_elf_open. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vmi/vmi_elf.h"
#include "vmi/vmi_elf_phdr.h"
#include "tests/common/files.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define GUEST_ELF "build/guest/test-guest.elf"

/* A malloc'd copy of the test guest, its size in *@size. */
static uint8_t *guest_copy(size_t *size)
{
	struct stat st;
	char *text;
	uint8_t *b;

	assert_int_equal(stat(GUEST_ELF, &st), 0);
	text = hv_slurp(GUEST_ELF);
	b = malloc((size_t)st.st_size);
	assert_non_null(b);
	memcpy(b, text, (size_t)st.st_size);
	free(text);
	*size = (size_t)st.st_size;
	return b;
}

static Elf64_Ehdr *ehdr(uint8_t *b)
{
	return (Elf64_Ehdr *)b;
}

static Elf64_Phdr *phdr(uint8_t *b, unsigned i)
{
	return (Elf64_Phdr *)(b + ehdr(b)->e_phoff) + i;
}

/* @b (@size bytes, taken) is refused by vmi_elf_load_segments and by vmi_elf_open_mem, both with
 * "guest: @why". */
static void expect_refused(uint8_t *b, size_t size, const char *why)
{
	struct vmi_segment *segs = (struct vmi_segment *)1;
	struct vmi_elf img;
	char err[512] = "", want[512];

	snprintf(want, sizeof(want), "guest: %s", why);
	assert_int_equal(vmi_elf_check_ident(b, size, "guest", err, sizeof(err)), 0);
	assert_int_equal(vmi_elf_load_segments(b, size, "guest", &segs, err, sizeof(err)), -ENOEXEC);
	assert_null(segs);
	assert_string_equal(err, want);
	err[0] = 0;
	assert_int_equal(vmi_elf_open_mem(&img, b, size, "guest", 0, err, sizeof(err)), -ENOEXEC);
	assert_string_equal(err, want);
}

/* The test guest as built: its two PT_LOADs (GNU_STACK is no PT_LOAD), each inside the file. */
static void test_guest_segments(void **state)
{
	struct vmi_segment *segs;
	char err[256] = "";
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	assert_int_equal(ehdr(b)->e_phnum, 3);
	assert_int_equal(vmi_elf_load_segments(b, size, "guest", &segs, err, sizeof(err)), 2);
	assert_int_equal(segs[0].vaddr, phdr(b, 0)->p_vaddr);
	assert_int_equal(segs[0].filesz, phdr(b, 0)->p_filesz);
	assert_ptr_equal(segs[0].data, b + phdr(b, 0)->p_offset);
	assert_int_equal(segs[1].memsz, phdr(b, 1)->p_memsz);
	free(segs);
	free(b);
}

static void test_filesz_over_memsz(void **state)
{
	char why[256];
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	phdr(b, 0)->p_memsz = phdr(b, 0)->p_filesz - 1; /* the bytes still lie inside the file */
	snprintf(why, sizeof(why),
		 "program header 0 (PT_LOAD): p_filesz 0x%lx is larger than p_memsz 0x%lx",
		 (unsigned long)phdr(b, 0)->p_filesz, (unsigned long)phdr(b, 0)->p_memsz);
	expect_refused(b, size, why);
}

/* The .bss segment moved onto the text one: refused as an overlap, in virtual addresses first, then
 * in physical ones only. */
static void test_overlapping_loads(void **state)
{
	char why[256];
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	phdr(b, 1)->p_vaddr = phdr(b, 0)->p_vaddr + 0x100;
	phdr(b, 1)->p_paddr = phdr(b, 0)->p_paddr + 0x100;
	snprintf(why, sizeof(why),
		 "program headers 0 and 1 (PT_LOAD) overlap: p_vaddr 0x%lx (p_memsz 0x%lx) and "
		 "0x%lx",
		 (unsigned long)phdr(b, 0)->p_vaddr, (unsigned long)phdr(b, 0)->p_memsz,
		 (unsigned long)phdr(b, 1)->p_vaddr);
	expect_refused(b, size, why);

	b = guest_copy(&size);
	phdr(b, 1)->p_paddr = phdr(b, 0)->p_paddr + 0x100; /* virtual addresses apart */
	snprintf(why, sizeof(why),
		 "program headers 0 and 1 (PT_LOAD) overlap: p_paddr 0x%lx (p_memsz 0x%lx) and "
		 "0x%lx",
		 (unsigned long)phdr(b, 0)->p_paddr, (unsigned long)phdr(b, 0)->p_memsz,
		 (unsigned long)phdr(b, 1)->p_paddr);
	expect_refused(b, size, why);
}

/* e_phnum 65535 (PN_XNUM) with section header 0's sh_info holding a count whose table runs past
 * the end of the file, and with no section header table at all: neither is read as "no segment". */
static void test_phnum_xnum(void **state)
{
	Elf64_Shdr *sh0;
	char why[256];
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	ehdr(b)->e_phnum = PN_XNUM;
	sh0 = (Elf64_Shdr *)(b + ehdr(b)->e_shoff);
	sh0->sh_info = 65535;
	snprintf(why, sizeof(why),
		 "the program header table (e_phoff 0x40, e_phnum 65535) lies past the end of the "
		 "file (%zu bytes)",
		 size);
	expect_refused(b, size, why);

	b = guest_copy(&size);
	ehdr(b)->e_phnum = PN_XNUM;
	ehdr(b)->e_shoff = 0;
	ehdr(b)->e_shnum = 0;
	ehdr(b)->e_shstrndx = 0;
	expect_refused(b, size,
		       "e_phnum is PN_XNUM (0xffff) but section header 0, which holds the count, is "
		       "not in the file (e_shoff 0x0)");
}

/* A table past the end without PN_XNUM: its offset moved near the end of the file. */
static void test_table_past_end(void **state)
{
	char why[256];
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	ehdr(b)->e_phoff = size - sizeof(Elf64_Phdr);
	snprintf(why, sizeof(why),
		 "the program header table (e_phoff 0x%zx, e_phnum 3) lies past the end of the "
		 "file (%zu bytes)",
		 size - sizeof(Elf64_Phdr), size);
	expect_refused(b, size, why);
}

static void test_phentsize(void **state)
{
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	ehdr(b)->e_phentsize = 32;
	expect_refused(b, size, "e_phentsize 32, not the 56 bytes of an Elf64_Phdr");
}

static void test_range_wraps(void **state)
{
	char why[256];
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	phdr(b, 1)->p_vaddr = 0xfffffffffffff000ull;
	snprintf(why, sizeof(why),
		 "program header 1 (PT_LOAD): p_vaddr 0xfffffffffffff000 + p_memsz 0x%lx wraps "
		 "around the address space",
		 (unsigned long)phdr(b, 1)->p_memsz);
	expect_refused(b, size, why);
}

/* No PT_LOAD left (both made PT_NOTE): nothing to load, said so rather than loading nothing. */
static void test_no_load(void **state)
{
	struct vmi_elf img;
	char err[256] = "";
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	phdr(b, 0)->p_type = PT_NOTE;
	phdr(b, 1)->p_type = PT_NOTE;
	assert_int_equal(vmi_elf_open_mem(&img, b, size, "guest", 0, err, sizeof(err)), -ENOEXEC);
	assert_string_equal(err, "guest: no PT_LOAD program header: nothing to load");
}

/* The identification: a big-endian ELF64 and an ELF32 are named before anything else is read. */
static void test_ident(void **state)
{
	char err[256] = "";
	size_t size;
	uint8_t *b = guest_copy(&size);

	(void)state;
	b[EI_DATA] = ELFDATA2MSB;
	assert_int_equal(vmi_elf_check_ident(b, size, "guest", err, sizeof(err)), -ENOEXEC);
	assert_string_equal(err, "guest: not a little-endian ELF64 file (EI_DATA 2)");
	b[EI_DATA] = ELFDATA2LSB;
	b[EI_CLASS] = ELFCLASS32;
	assert_int_equal(vmi_elf_check_ident(b, size, "guest", err, sizeof(err)), -ENOEXEC);
	assert_string_equal(err, "guest: not an ELF64 file");
	b[EI_CLASS] = ELFCLASS64;
	assert_int_equal(vmi_elf_check_ident(b, sizeof(Elf64_Ehdr) - 1, "guest", err, sizeof(err)),
			 -ENOEXEC);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_guest_segments), cmocka_unit_test(test_filesz_over_memsz),
	    cmocka_unit_test(test_overlapping_loads), cmocka_unit_test(test_phnum_xnum),
	    cmocka_unit_test(test_table_past_end), cmocka_unit_test(test_phentsize),
	    cmocka_unit_test(test_range_wraps), cmocka_unit_test(test_no_load),
	    cmocka_unit_test(test_ident),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
