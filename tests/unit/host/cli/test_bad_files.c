/* Bad input files through ./hvtrace itself (issue 37: classes 4, 5, 8, 11, 14), none of which needs
 * /dev/kvm: every input file is checked before a VM is made. Each bad file gives exit 2 and one
 * line naming what was wrong and where, fast (no read of a huge file, no wait on a FIFO: a run
 * that hangs ends the test after 30 s, failed), with no raw control byte of a file on stderr and no
 * sanitizer report (under make check-asan, HVTRACE is the ASan build). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/files.h"
#include "tests/common/hv_run.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TRACEDAT_CORPUS "tests/fuzz/corpus/tracedat/"

static char dir[] = "/tmp/hvt-badfiles-XXXXXX";
static char path[512];

static const char *guest(void)
{
	const char *g = getenv("GUEST");

	return g ? g : "build/guest/test-guest.elf";
}

/* @name inside the test's directory (a static buffer per call site is the caller's). */
static const char *in_dir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Runs hvtrace with @argv and checks: exit 2, stderr exactly @line + "\n", in
 * less than @seconds. */
static void expect_refusal(const char *const *argv, const char *line, double seconds)
{
	struct hv_result r;
	char want[1024];
	double t0 = now();

	alarm(30); /* a run that blocks (a FIFO) ends the test, failed, by SIGALRM */
	hv_run(&r, argv, 0, 0);
	alarm(0);
	snprintf(want, sizeof(want), "hvtrace: %s\n", line);
	if (r.status != 2 || strcmp(r.err, want)) {
		print_error("%s %s: status %d, stderr '%s', expected 2 and '%s'\n", argv[0],
			    argv[1], r.status, r.err, want);
		fail();
	}
	if (now() - t0 >= seconds) {
		print_error("%s %s: %.1f s, more than %.0f\n", argv[0], argv[1], now() - t0,
			    seconds);
		fail();
	}
	hv_result_free(&r);
}

/* A sparse file of @size bytes at @p. */
static void sparse(const char *p, long long size)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
}

/* Class 4: a huge guest is never read whole. 8 GiB (sparse) is over the bound; 3 GiB of zeros is
 * under it and mapped, its header checked first: both refused at once. */
static void test_huge_guest(void **state)
{
	char p[512], want[1024];

	(void)state;
	in_dir(p, sizeof(p), "huge.elf");
	sparse(p, 8ll << 30);
	snprintf(want, sizeof(want),
		 "%s: 8589934592 bytes, larger than the 4294967296 bytes an input may have", p);
	expect_refusal((const char *[]){"run", p, NULL}, want, 5);
	sparse(p, 3ll << 30);
	snprintf(want, sizeof(want), "%s: not an ELF64 file", p);
	expect_refusal((const char *[]){"run", p, NULL}, want, 5);
	expect_refusal((const char *[]){"list-functions", p, NULL}, want, 5);
	unlink(p);
}

/* Class 5: a FIFO as every input path is refused without blocking. */
static void test_fifo_inputs(void **state)
{
	char f[512], ok[512], out[512], con[512], want[1024];

	(void)state;
	in_dir(f, sizeof(f), "fifo");
	assert_int_equal(mkfifo(f, 0600), 0);
	in_dir(ok, sizeof(ok), "plain");
	hv_write_text(ok, "not a kernel\n");
	snprintf(want, sizeof(want), "%s: not a regular file (a FIFO)", f);
	expect_refusal((const char *[]){"run", f, NULL}, want, 10);
	/* nothing created: the -o and --console a refused run names do not exist after it */
	expect_refusal((const char *[]){"run", "-o", in_dir(out, sizeof(out), "out"), "--console",
					in_dir(con, sizeof(con), "con"), f, NULL},
		       want, 10);
	assert_int_equal(access(out, F_OK), -1);
	assert_int_equal(access(con, F_OK), -1);
	expect_refusal((const char *[]){"list-functions", f, NULL}, want, 10);
	snprintf(want, sizeof(want), "--session %s: not a regular file (a FIFO)", f);
	expect_refusal((const char *[]){"run", "--session", f, guest(), NULL}, want, 10);
	snprintf(want, sizeof(want), "-i %s: not a regular file (a FIFO)", f);
	expect_refusal((const char *[]){"report", "-i", f, NULL}, want, 10);
	snprintf(want, sizeof(want), "--host-input %s: not a regular file (a FIFO)", f);
	expect_refusal((const char *[]){"report", "-i", TRACEDAT_CORPUS "function-filter.dat",
					"--exits", "--host-input", f, NULL},
		       want, 10);
	snprintf(want, sizeof(want), "--kernel %s: not a regular file (a FIFO)", f);
	expect_refusal((const char *[]){"run", "--kernel", f, NULL}, want, 10);
	expect_refusal((const char *[]){"run", "--qemu", "--kernel", f, NULL}, want, 10);
	snprintf(want, sizeof(want), "--initrd %s: not a regular file (a FIFO)", f);
	expect_refusal((const char *[]){"run", "--qemu", "--kernel", ok, "--initrd", f, NULL}, want,
		       10);
	snprintf(want, sizeof(want), "--system-map %s: not a regular file (a FIFO)", f);
	expect_refusal((const char *[]){"run", "--kernel", ok, "--system-map", f, NULL}, want, 10);
	snprintf(want, sizeof(want), "--kernel %s: not a regular file (a directory)", dir);
	expect_refusal((const char *[]){"run", "--kernel", dir, NULL}, want, 10);
	unlink(f);
	unlink(ok);
}

/* Class 8: a session file's bytes never reach stderr raw; a BOM is no part of the first option. */
static void test_session_bytes(void **state)
{
	char s[512], want[1024];

	(void)state;
	in_dir(s, sizeof(s), "s.txt");
	hv_write_text(s, "smp 1\ntracer \x1b]0;t\x07\x1b[2J\nhvtrace: forged\n");
	snprintf(want, sizeof(want),
		 "%s:2: byte \\x1b at column 8: a control character (session files are text)", s);
	expect_refusal((const char *[]){"run", "--session", s, guest(), NULL}, want, 10);
	hv_write_text(s, "\xef\xbb\xbftracer bogus\n");
	snprintf(want, sizeof(want),
		 "%s:1: -p 'bogus': unknown tracer (available: function function_graph nop)", s);
	expect_refusal((const char *[]){"run", "--session", s, guest(), NULL}, want, 10);
	unlink(s);
}

/* A copy of the test guest with one edit made by @edit, written to @p; the original is left as it
 * was (checked by the caller through its size). */
static void write_guest_copy(const char *p, void (*edit)(uint8_t *b, size_t size))
{
	struct stat st;
	char *text = hv_slurp(guest());

	assert_int_equal(stat(guest(), &st), 0);
	edit((uint8_t *)text, (size_t)st.st_size);
	hv_write_file(p, text, (size_t)st.st_size);
	free(text);
}

static Elf64_Phdr *phdr(uint8_t *b, unsigned i)
{
	return (Elf64_Phdr *)(b + ((Elf64_Ehdr *)b)->e_phoff) + i;
}

static void filesz_over_memsz(uint8_t *b, size_t size)
{
	(void)size;
	phdr(b, 0)->p_memsz = phdr(b, 0)->p_filesz - 1;
}

static void overlap(uint8_t *b, size_t size)
{
	(void)size;
	phdr(b, 1)->p_vaddr = phdr(b, 0)->p_vaddr;
	phdr(b, 1)->p_paddr = phdr(b, 0)->p_paddr;
}

static void phnum_65535(uint8_t *b, size_t size)
{
	(void)size;
	((Elf64_Ehdr *)b)->e_phnum = 65535;
	((Elf64_Ehdr *)b)->e_shoff = 0; /* no section header 0 to hold the real count */
	((Elf64_Ehdr *)b)->e_shnum = 0;
	((Elf64_Ehdr *)b)->e_shstrndx = 0;
}

/* Class 11: program-header defects named by header and field, through ./hvtrace run. */
static void test_phdr_defects(void **state)
{
	char p[512], want[1024];
	uint8_t *g = (uint8_t *)hv_slurp(guest());

	(void)state;
	in_dir(p, sizeof(p), "bad.elf");
	write_guest_copy(p, filesz_over_memsz);
	snprintf(want, sizeof(want),
		 "%s: program header 0 (PT_LOAD): p_filesz 0x%lx is larger than p_memsz 0x%lx", p,
		 (unsigned long)phdr(g, 0)->p_filesz, (unsigned long)phdr(g, 0)->p_filesz - 1);
	expect_refusal((const char *[]){"run", p, NULL}, want, 10);
	write_guest_copy(p, overlap);
	snprintf(want, sizeof(want),
		 "%s: program headers 0 and 1 (PT_LOAD) overlap: p_vaddr 0x%lx (p_memsz 0x%lx) "
		 "and 0x%lx",
		 p, (unsigned long)phdr(g, 0)->p_vaddr, (unsigned long)phdr(g, 0)->p_memsz,
		 (unsigned long)phdr(g, 0)->p_vaddr);
	expect_refusal((const char *[]){"run", p, NULL}, want, 10);
	write_guest_copy(p, phnum_65535);
	snprintf(want, sizeof(want),
		 "%s: e_phnum is PN_XNUM (0xffff) but section header 0, which holds the count, is "
		 "not in the file (e_shoff 0x0)",
		 p);
	expect_refusal((const char *[]){"run", p, NULL}, want, 10);
	free(g);
	unlink(p);
}

/* Class 14: trace.dat files that made libtracecmd/libtraceevent allocate absurd sizes, loop on a
 * 4 GiB page, or leak: one line each, exit 2 (not 1), quickly; under check-asan, no report. */
static void test_tracedat_bad(void **state)
{
	static const struct {
		const char *file, *why;
	} c[] = {
	    {"regress-header-page-size-huge",
	     "not a trace.dat libtracecmd can read (bad or truncated)"},
	    {"regress-page-size-4g-loops",
	     "page size 4294963200 in its header (a power of two from 4096 to 1048576 expected)"},
	    {"regress-libtraceevent-leaks-on-bad-format",
	     "an ftrace function or function_graph event lacks its fields"},
	};
	char want[1024], p[512];

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(p, sizeof(p), TRACEDAT_CORPUS "%s", c[i].file);
		snprintf(want, sizeof(want), "report: %s: %s", p, c[i].why);
		expect_refusal((const char *[]){"report", "-i", p, NULL}, want, 15);
	}
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	return system(path) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_huge_guest),	  cmocka_unit_test(test_fifo_inputs),
	    cmocka_unit_test(test_session_bytes), cmocka_unit_test(test_phdr_defects),
	    cmocka_unit_test(test_tracedat_bad),
	};

	return cmocka_run_group_tests_name("bad_files", tests, setup, teardown);
}
