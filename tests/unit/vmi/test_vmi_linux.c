/* Linux guest knowledge: System.map parsing, the KASLR slide search, BTF struct offsets, sites
 * found in (fake) guest memory, per-CPU current_task slots. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vmi/vmi_linux.h"
#include "tests/common/fake_mem.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char map_path[64];

/* A small System.map: text, data, per-CPU and BTF symbols of a kernel linked at 0xffffffff81000000.
 */
static const char sysmap[] = "000000000001fb40 D __preempt_count\n"
			     "000000000001fb80 D current_task\n"
			     "ffffffff81000000 T _stext\n"
			     "ffffffff81000000 T _text\n"
			     "ffffffff81000100 T func_nop\n"
			     "ffffffff81000140 t func_endbr\n"
			     "ffffffff81000180 T func_call\n"
			     "ffffffff810001c0 T __fentry__\n"
			     "ffffffff81000200 T _etext\n"
			     "ffffffff82000000 D linux_banner\n"
			     "ffffffff82000100 D __per_cpu_offset\n"
			     "ffffffff82001000 R __start_BTF\n"
			     "ffffffff82002000 R __stop_BTF\n"
			     "ffffffff82003000 A some_absolute\n";

static int setup(void **state)
{
	FILE *f;

	(void)state;
	strcpy(map_path, "/tmp/hvt-sysmap-XXXXXX");
	close(mkstemp(map_path));
	f = fopen(map_path, "w");
	fputs(sysmap, f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(map_path);
	return 0;
}

/* Guest-virtual memory of the fake kernel: text at base, banner, per-CPU offsets. */
struct fake_kernel {
	uint64_t text_va; /* where _stext is mapped */
	uint8_t text[0x200];
	uint64_t data_va;
	uint8_t data[0x200];
	struct fake_mem mem; /* text and data at their addresses */
};

static void fake_kernel_init(struct fake_kernel *k, int64_t slide)
{
	uint64_t offs[2] = {0x10000, 0x20000};

	memset(k, 0xcc, sizeof(*k));
	k->text_va = 0xffffffff81000000ull + slide;
	k->data_va = 0xffffffff82000000ull + slide;
	fake_mem_init(&k->mem);
	fake_mem_map(&k->mem, k->text_va, k->text, sizeof(k->text));
	fake_mem_map(&k->mem, k->data_va, k->data, sizeof(k->data));
	memcpy(k->text + 0x100, "\x0f\x1f\x44\x00\x00", 5);		    /* func_nop */
	memcpy(k->text + 0x140, "\xf3\x0f\x1e\xfa\x0f\x1f\x44\x00\x00", 9); /* func_endbr */
	memcpy(k->text + 0x180, "\xe8\x00\x00\x00\x00", 5);		    /* func_call */
	memcpy(k->text + 0x1c0, "\xc3\xcc\xcc\xcc\xcc", 5);		    /* __fentry__ */
	memcpy(k->data, "Linux version 6.1.0-test", 24);
	memcpy(k->data + 0x100, offs, sizeof(offs));
}

static void test_sysmap_parse(void **state)
{
	struct vmi_linux l;
	char err[256];

	(void)state;
	assert_int_equal(vmi_linux_open(&l, map_path, err, sizeof(err)), 0);
	assert_int_equal(l.funcs.nr,
			 7); /* _stext _text func_nop func_endbr func_call __fentry__ _etext */
	assert_non_null(vmi_symtab_find(&l.funcs, "func_endbr"));
	assert_null(vmi_symtab_find(&l.funcs, "linux_banner"));
	assert_null(vmi_symtab_find(&l.objects, "some_absolute"));
	assert_int_equal(l.banner, 0xffffffff82000000ull);
	assert_int_equal(l.current_task, 0x1fb80);
	assert_int_equal(l.fentry, 0xffffffff810001c0ull);
	assert_int_equal(l.btf_stop - l.btf_start, 0x1000);
	assert_int_equal(l.pid_off, -1);
	vmi_linux_close(&l);
}

static void test_sysmap_errors(void **state)
{
	struct vmi_linux l;
	char err[256], path[] = "/tmp/hvt-badmap-XXXXXX";
	FILE *f;

	(void)state;
	assert_int_equal(vmi_linux_open(&l, "/nonexistent/System.map", err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/System.map: No such file or directory");

	close(mkstemp(path));
	f = fopen(path, "w");
	fputs("ffffffff81000000 T _stext\nthis is not a map\n", f);
	fclose(f);
	assert_int_equal(vmi_linux_open(&l, path, err, sizeof(err)), -EINVAL);
	char want[128];

	snprintf(want, sizeof(want), "%s:2: not a System.map line", path);
	assert_string_equal(err, want);

	f = fopen(path, "w");
	fputs("ffffffff81000000 T _stext\n", f);
	fclose(f);
	assert_int_equal(vmi_linux_open(&l, path, err, sizeof(err)), -ENODATA);
	unlink(path);
}

/* vmi_linux_open_map on @text (a memory stream named "map"): its return, and @err. */
static int open_text(struct vmi_linux *l, const char *text, char *err, size_t errlen)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	assert_non_null(f);
	err[0] = 0;
	ret = vmi_linux_open_map(l, f, "map", err, errlen);
	fclose(f);
	return ret;
}

/* Every line is checked whole: an address of more than 16 hex digits, a sign, no name, a name
 * longer than KSYM_NAME_LEN, a NUL byte are refused with the line number (sscanf took the first
 * two, fgets split the long name into a second "line"). */
static void test_sysmap_strict_lines(void **state)
{
	static const char ok[] = "ffffffff81000000 T _stext\n"
				 "ffffffff81000200 T _etext\n"
				 "ffffffff82000000 D linux_banner\n";
	struct {
		const char *line, *want;
	} bad[] = {
	    {"1ffffffff81000000 T big\n", "map:4: address wider than 64 bits"},
	    {"-1 T neg\n", "map:4: not a System.map line"},
	    {"0x10 T hexprefix\n", "map:4: not a System.map line"},
	    {"ffffffff81000000 T\n", "map:4: not a System.map line"},
	    {"ffffffff81000000 T \n", "map:4: not a System.map line"},
	    {"ffffffff81000000 TT name\n", "map:4: not a System.map line"},
	    {"ffffffff81000000 1 name\n", "map:4: not a System.map line"},
	    {"ffffffff81000000T name\n", "map:4: not a System.map line"},
	    {"\n", "map:4: not a System.map line"},
	};
	char text[2048], err[256], longname[600];
	struct vmi_linux l;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s%s", ok, bad[i].line);
		assert_int_equal(open_text(&l, text, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].want);
		assert_int_equal(l.funcs.nr, 0);
	}
	memset(longname, 'a', 512);
	longname[512] = 0;
	snprintf(text, sizeof(text), "%sffffffff81000010 t %s\n", ok, longname);
	assert_int_equal(open_text(&l, text, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "map:4: symbol name too long");
	longname[511] = 0; /* KSYM_NAME_LEN - 1 bytes: fine */
	snprintf(text, sizeof(text), "%sffffffff81000010 t %s\n", ok, longname);
	assert_int_equal(open_text(&l, text, err, sizeof(err)), 0);
	assert_non_null(vmi_symtab_find(&l.funcs, longname));
	vmi_linux_close(&l);

	/* a NUL inside a line */
	FILE *f = fmemopen(NULL, 256, "w+");

	fputs(ok, f);
	fwrite("ffffffff81000010 t a\0b\n", 1, 24, f);
	rewind(f);
	assert_int_equal(vmi_linux_open_map(&l, f, "map", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "map:4: not a System.map line");
	fclose(f);
}

/* Accepted: kallsyms lines (a module after the name), CRLF line ends, tabs, upper-case hex, a last
 * line without '\n'. */
static void test_sysmap_lenient_forms(void **state)
{
	static const char text[] = "FFFFFFFF81000000\tT\t_stext\r\n"
				   "ffffffff81000100 t mod_func\t[some_module]\n"
				   "ffffffff81000200 T _etext\n"
				   "ffffffff82000000 D linux_banner";
	struct vmi_linux l;
	char err[256];

	(void)state;
	assert_int_equal(open_text(&l, text, err, sizeof(err)), 0);
	assert_int_equal(l.stext, 0xffffffff81000000ull);
	assert_int_equal(l.etext, 0xffffffff81000200ull);
	assert_int_equal(l.banner, 0xffffffff82000000ull);
	assert_non_null(vmi_symtab_find(&l.funcs, "mod_func"));
	vmi_linux_close(&l);
}

/* An empty map has no symbols (sorted without qsort on NULL: UBSan aborted here); a directory is a
 * read error, not an empty map. */
static void test_sysmap_empty_and_directory(void **state)
{
	struct vmi_linux l;
	char err[256], want[256];

	(void)state;
	assert_int_equal(open_text(&l, "", err, sizeof(err)), -ENODATA);
	assert_string_equal(err,
			    "map: no linux_banner, _stext or _etext (0 symbols): not a System.map "
			    "or vmlinux of a Linux kernel with its symbols");
	/* refused before a read (issue 37): a directory, and a FIFO that would block for ever */
	assert_int_equal(vmi_linux_open(&l, "/tmp", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/tmp: not a regular file (a directory)");
	snprintf(want, sizeof(want), "/tmp/hvt-sysmap-fifo-%d", (int)getpid());
	unlink(want);
	assert_int_equal(mkfifo(want, 0600), 0);
	alarm(20);
	assert_int_equal(vmi_linux_open(&l, want, err, sizeof(err)), -EINVAL);
	alarm(0);
	unlink(want);
	assert_non_null(strstr(err, ": not a regular file (a FIFO)"));
}

/* The stub area needs Linux >= 5.13, read from the guest's banner: a forged version is refused,
 * never wrapped (sscanf's %u took 4294967296 for 0, and 4.999 counted as 4 * 100 + 999). */
static void test_stub_area_banner(void **state)
{
	static const char map[] = "ffffffff81000000 T _stext\n"
				  "ffffffff81000200 T _etext\n"
				  "ffffffff82000000 D linux_banner\n"
				  "ffffffff82000100 D real_mode_header\n"
				  "ffffffff82000108 D page_offset_base\n"
				  "ffffffff82000110 R real_mode_blob\n"
				  "ffffffff82000120 R real_mode_blob_end\n"
				  "ffffffff83000000 B _end\n";
	struct {
		const char *banner;
		int ret;
	} cases[] = {
	    {"Linux version 6.1.0-test", 0},
	    {"Linux version 5.13.0", 0},
	    {"Linux version 5.12.19", -ENOTSUP},
	    {"Linux version 4.999", -ENOTSUP},
	    {"Linux version 4294967296.513", -ENOTSUP},
	    {"Linux version 6", -ENOTSUP},
	    {"Linux version .13", -ENOTSUP},
	    {"Linux versio 6.1", -ENOTSUP},
	};
	uint8_t data[0x200];
	uint64_t hdr = 0xffff888000098000ull, base = 0xffff888000000000ull, lo, hi, va;
	struct fake_mem mem;
	struct vmi_linux l;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(data, 0, sizeof(data));
		strcpy((char *)data, cases[i].banner);
		memcpy(data + 0x100, &hdr, 8);
		memcpy(data + 0x108, &base, 8);
		fake_mem_init(&mem);
		fake_mem_map(&mem, 0xffffffff82000000ull, data, sizeof(data));
		assert_int_equal(open_text(&l, map, err, sizeof(err)), 0);
		assert_int_equal(
		    vmi_linux_stub_area(&l, fake_mem_read, &mem, &lo, &hi, &va, err, sizeof(err)),
		    cases[i].ret);
		vmi_linux_close(&l);
	}
}

static void find_slide(int64_t slide)
{
	struct vmi_linux l;
	struct fake_kernel k;
	char err[256];

	fake_kernel_init(&k, slide);
	assert_int_equal(vmi_linux_open(&l, map_path, err, sizeof(err)), 0);
	assert_int_equal(vmi_linux_find_slide(&l, fake_mem_read, &k.mem, err, sizeof(err)), 0);
	assert_int_equal(l.slide, slide);
	assert_int_equal(l.banner, 0xffffffff82000000ull + slide);
	assert_int_equal(l.fentry, 0xffffffff810001c0ull + slide);
	assert_int_equal(vmi_symtab_find(&l.funcs, "func_nop")->addr,
			 0xffffffff81000100ull + slide);
	assert_int_equal(l.current_task, 0x1fb80); /* per-CPU offsets never move */
	assert_int_equal(l.preempt_count, 0x1fb40);
	vmi_linux_close(&l);
}

static void test_slide_none(void **state)
{
	(void)state;
	find_slide(0);
}

static void test_slide_kaslr(void **state)
{
	(void)state;
	find_slide(0x15e00000);
	find_slide(-0x800000);
	find_slide(0x3c000000);
}

static void test_slide_not_found(void **state)
{
	struct vmi_linux l;
	struct fake_kernel k;
	char err[256];

	(void)state;
	fake_kernel_init(&k, 0x100000); /* not 2 MiB aligned: never found */
	assert_int_equal(vmi_linux_open(&l, map_path, err, sizeof(err)), 0);
	assert_int_equal(vmi_linux_find_slide(&l, fake_mem_read, &k.mem, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "the System.map is for another kernel"));
	vmi_linux_close(&l);
}

/* A reader over the fake kernel that counts its calls, fails with -EINTR from call @intr_at on (0:
 * never), and fails the test past 1000 calls (a scan that would go on for 2^42 reads). */
struct counting_reader {
	struct fake_mem *mem;
	unsigned calls, intr_at;
};

static int counting_read(void *ctx, uint64_t gva, void *buf, size_t len)
{
	struct counting_reader *c = ctx;

	if (++c->calls > 1000)
		fail_msg("%u reads: the scan is not bounded", c->calls);
	if (c->intr_at && c->calls >= c->intr_at)
		return -EINTR;
	return fake_mem_read(c->mem, gva, buf, len);
}

/* The scan reads each 2 MiB place the image can have in its 1 GiB once, and no more. */
static void test_slide_scan_bounded(void **state)
{
	struct vmi_linux l;
	struct fake_kernel k;
	struct counting_reader c = {.mem = &k.mem};
	char err[256];

	(void)state;
	fake_kernel_init(&k, 0x100000); /* not 2 MiB aligned: every candidate is tried */
	assert_int_equal(vmi_linux_open(&l, map_path, err, sizeof(err)), 0);
	assert_int_equal(vmi_linux_find_slide(&l, counting_read, &c, err, sizeof(err)), -ESRCH);
	/* from -16 MiB up to where _etext (0xffffffff81000200) reaches 0xffffffffc0000000 */
	assert_int_equal(c.calls, 512);
	vmi_linux_close(&l);
}

/* A signal stops the scan between two candidates (the reader says so with -EINTR). */
static void test_slide_scan_interrupted(void **state)
{
	struct vmi_linux l;
	struct fake_kernel k;
	struct counting_reader c = {.mem = &k.mem, .intr_at = 3};
	char err[256];

	(void)state;
	fake_kernel_init(&k, 0x100000);
	assert_int_equal(vmi_linux_open(&l, map_path, err, sizeof(err)), 0);
	assert_int_equal(vmi_linux_find_slide(&l, counting_read, &c, err, sizeof(err)), -EINTR);
	assert_string_equal(err, "KASLR: the scan was stopped");
	assert_int_equal(c.calls, 3);
	assert_false(l.slid);
	vmi_linux_close(&l);
}

/* A System.map with this _etext (and the test's other symbols). */
static void open_with_etext(struct vmi_linux *l, const char *etext)
{
	char path[] = "/tmp/hvt-textmap-XXXXXX", err[256];
	FILE *f;

	close(mkstemp(path));
	f = fopen(path, "w");
	fprintf(f,
		"ffffffff81000000 T _stext\nffffffff81000100 T func_nop\n%s T _etext\n"
		"ffffffff82000000 D linux_banner\n",
		etext);
	fclose(f);
	assert_int_equal(vmi_linux_open(l, path, err, sizeof(err)), 0);
	unlink(path);
}

/* _etext at 2^63, below _stext, equal to it, or past the image's 1 GiB: one error naming the
 * values, before a single read (the scan would otherwise run ~2^42 times, or the sites' buffer
 * wrap). */
static void test_text_range_rejected(void **state)
{
	static const struct {
		const char *etext, *err;
	} cases[] = {
	    {"8000000000000000", "_etext 0x8000000000000000 is below _stext 0xffffffff81000000: "
				 "not the text of a kernel"},
	    {"ffffffff80fff000", "_etext 0xffffffff80fff000 is below _stext 0xffffffff81000000: "
				 "not the text of a kernel"},
	    {"ffffffff81000000", "_stext and _etext are both 0xffffffff81000000: no kernel text"},
	    {"ffffffffc0001000", "_stext 0xffffffff81000000 .. _etext 0xffffffffc0001000 is not "
				 "within the kernel image (0xffffffff80000000-0xffffffffc0000000)"},
	};
	struct fake_kernel k;

	(void)state;
	fake_kernel_init(&k, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct counting_reader c = {.mem = &k.mem};
		struct vmi_linux l;
		struct vmi_sites s = {0};
		char err[256];

		open_with_etext(&l, cases[i].etext);
		assert_int_equal(vmi_linux_find_slide(&l, counting_read, &c, err, sizeof(err)),
				 -EINVAL);
		assert_string_equal(err, cases[i].err);
		assert_false(l.slid);
		assert_int_equal(vmi_linux_sites(&l, counting_read, &c, &s), -EINVAL);
		assert_int_equal(c.calls, 0);
		vmi_linux_close(&l);
	}
}

/* Sites: the NOP5 function and the endbr64 + NOP5 one (site 4 bytes in); not the CALL, not
 * __fentry__. */
static void test_sites(void **state)
{
	struct vmi_linux l;
	struct fake_kernel k;
	struct vmi_sites s;
	char err[256];

	(void)state;
	fake_kernel_init(&k, 0x200000);
	assert_int_equal(vmi_linux_open(&l, map_path, err, sizeof(err)), 0);
	assert_int_equal(vmi_linux_find_slide(&l, fake_mem_read, &k.mem, err, sizeof(err)), 0);
	assert_int_equal(vmi_linux_sites(&l, fake_mem_read, &k.mem, &s), 0);
	assert_int_equal(s.nr, 2);
	assert_int_equal(s.v[0].addr, 0xffffffff81200100ull);
	assert_string_equal(s.v[0].func->name, "func_nop");
	assert_int_equal(s.v[1].addr, 0xffffffff81200144ull);
	assert_string_equal(s.v[1].func->name, "func_endbr");
	vmi_sites_free(&s);
	vmi_linux_close(&l);
}

/* BTF built with libbpf: task_struct with pid directly and comm inside an anonymous struct. */
static void test_btf_offsets(void **state)
{
	struct btf *btf = btf__new_empty();
	int i32, chr, arr, anon, task;
	const void *raw;
	__u32 size;

	(void)state;
	i32 = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	chr = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
	arr = btf__add_array(btf, i32, chr, 16);
	anon = btf__add_struct(btf, NULL, 24);
	btf__add_field(btf, "flags", i32, 0, 0);
	btf__add_field(btf, "comm", arr, 32, 0);
	task = btf__add_struct(btf, "task_struct", 2464);
	btf__add_field(btf, "state", i32, 0, 0);
	btf__add_field(btf, "pid", i32, 2416 * 8, 0);
	btf__add_field(btf, NULL, anon, 2440 * 8, 0);
	assert_true(task > 0);
	raw = btf__raw_data(btf, &size);
	assert_int_equal(vmi_btf_member_offset(raw, size, "task_struct", "pid"), 2416);
	assert_int_equal(vmi_btf_member_offset(raw, size, "task_struct", "comm"), 2444);
	assert_int_equal(vmi_btf_member_offset(raw, size, "task_struct", "nosuch"), -ENOENT);
	assert_int_equal(vmi_btf_member_offset(raw, size, "mm_struct", "pid"), -ENOENT);
	assert_int_equal(vmi_btf_member_offset("garbage", 7, "task_struct", "pid"), -EINVAL);
	btf__free(btf);
}

static void test_task_layout(void **state)
{
	struct vmi_linux l;
	struct fake_kernel k;
	struct vmi_task_layout tl;
	char err[256];

	(void)state;
	fake_kernel_init(&k, 0);
	assert_int_equal(vmi_linux_open(&l, map_path, err, sizeof(err)), 0);
	assert_int_equal(vmi_linux_find_slide(&l, fake_mem_read, &k.mem, err, sizeof(err)), 0);
	/* without BTF offsets: no task info */
	assert_int_equal(vmi_linux_task_layout(&l, fake_mem_read, &k.mem, 2, &tl), -ENOENT);
	assert_false(tl.valid);
	l.pid_off = 2416;
	l.comm_off = 2976;
	assert_int_equal(vmi_linux_task_layout(&l, fake_mem_read, &k.mem, 2, &tl), 0);
	assert_true(tl.valid);
	assert_int_equal(tl.current_slot[0], 0x10000 + 0x1fb80);
	assert_int_equal(tl.current_slot[1], 0x20000 + 0x1fb80);
	/* where the stub's detach reads whether a vCPU serves an interrupt */
	assert_int_equal(tl.preempt_slot[0], 0x10000 + 0x1fb40);
	assert_int_equal(tl.preempt_slot[1], 0x20000 + 0x1fb40);
	assert_int_equal(tl.pid_off, 2416);
	assert_int_equal(tl.comm_off, 2976);
	vmi_linux_close(&l);
}

/* 6.2-6.14: no current_task, __preempt_count or cpu_number symbol; all live in the per-CPU struct
 * pcpu_hot, their places from its BTF layout, read from (fake) guest memory as vmi_linux_read_btf
 * does. */
static void test_pcpu_hot(void **state)
{
	const uint64_t btf_at = 0xffffffff82000000ull;
	struct btf *btf = btf__new_empty();
	int i32, chr, arr, ptr, task;
	struct vmi_linux l;
	struct fake_mem m;
	uint8_t *copy;
	const void *raw;
	char err[256] = "";
	uint64_t cpu = 0;
	__u32 size;

	(void)state;
	i32 = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	chr = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
	arr = btf__add_array(btf, i32, chr, 16);
	task = btf__add_struct(btf, "task_struct", 64);
	btf__add_field(btf, "pid", i32, 8 * 8, 0);
	btf__add_field(btf, "comm", arr, 16 * 8, 0);
	ptr = btf__add_ptr(btf, task);
	btf__add_struct(btf, "pcpu_hot", 64);
	btf__add_field(btf, "current_task", ptr, 0, 0);
	btf__add_field(btf, "preempt_count", i32, 8 * 8, 0);
	btf__add_field(btf, "cpu_number", i32, 12 * 8, 0);
	raw = btf__raw_data(btf, &size);
	copy = malloc(size);
	memcpy(copy, raw, size);
	fake_mem_init(&m);
	fake_mem_map(&m, btf_at, copy, size);

	memset(&l, 0, sizeof(l));
	l.btf_start = btf_at;
	l.btf_stop = btf_at + size;
	assert_int_equal(vmi_symtab_add(&l.objects, 0x1fb40, 0, "pcpu_hot"), 0);
	vmi_symtab_sort(&l.objects);
	if (vmi_linux_read_btf(&l, fake_mem_read, &m, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(l.pid_off, 8);
	assert_int_equal(l.current_task, 0x1fb40);
	assert_int_equal(l.preempt_count, 0x1fb40 + 8);
	/* and the CPU number the stub reads through %gs: pcpu_hot.cpu_number */
	assert_true(vmi_linux_cpu_gs(&l, &cpu));
	assert_int_equal(cpu, 0x1fb40 + 12);
	vmi_linux_close(&l);

	/* a current_task symbol (6.1, 6.15+) wins */
	memset(&l, 0, sizeof(l));
	l.btf_start = btf_at;
	l.btf_stop = btf_at + size;
	l.current_task = 0x2000;
	l.preempt_count = 0x2040;
	assert_int_equal(vmi_symtab_add(&l.objects, 0x1fb40, 0, "pcpu_hot"), 0);
	vmi_symtab_sort(&l.objects);
	assert_int_equal(vmi_linux_read_btf(&l, fake_mem_read, &m, err, sizeof(err)), 0);
	assert_int_equal(l.current_task, 0x2000);
	assert_int_equal(l.preempt_count, 0x2040);
	/* as a cpu_number symbol does */
	assert_int_equal(vmi_symtab_add(&l.objects, 0x2048, 0, "cpu_number"), 0);
	vmi_symtab_sort(&l.objects);
	assert_true(vmi_linux_cpu_gs(&l, &cpu));
	assert_int_equal(cpu, 0x2048);
	vmi_linux_close(&l);
	btf__free(btf);
	free(copy);
}

/* An ELF vmlinux instead of a System.map: symbols through libelf (a tiny kernel-like ELF built
 * now). */
static void test_vmlinux_elf(void **state)
{
	char dir[] = "/tmp/hvt-vmlinux-XXXXXX", src[64], elf[64], cmd[256], err[256];
	struct vmi_linux l;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/k.c", dir);
	snprintf(elf, sizeof(elf), "%s/vmlinux", dir);
	f = fopen(src, "w");
	fputs("const char linux_banner[] = \"Linux version 6.1.0-test\";\n"
	      "void _stext(void) {}\nvoid do_sys_openat2(void) {}\nvoid __fentry__(void) {}\n"
	      "void _etext(void) {}\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -nostdlib -static -no-pie -Wl,-e,_stext -o %s %s", elf,
		 src);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(vmi_linux_open(&l, elf, err, sizeof(err)), 0);
	assert_non_null(vmi_symtab_find(&l.funcs, "do_sys_openat2"));
	assert_int_equal(l.banner, vmi_symtab_find(&l.objects, "linux_banner")->addr);
	assert_int_equal(l.fentry, vmi_symtab_find(&l.funcs, "__fentry__")->addr);
	assert_true(l.stext < l.etext);
	vmi_linux_close(&l);

	/* an ELF that is not a kernel */
	assert_int_equal(vmi_linux_open(&l, "/bin/true", err, sizeof(err)), -ENODATA);
	unlink(src);
	unlink(elf);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sysmap_parse),
	    cmocka_unit_test(test_sysmap_errors),
	    cmocka_unit_test(test_slide_none),
	    cmocka_unit_test(test_slide_kaslr),
	    cmocka_unit_test(test_slide_not_found),
	    cmocka_unit_test(test_slide_scan_bounded),
	    cmocka_unit_test(test_slide_scan_interrupted),
	    cmocka_unit_test(test_text_range_rejected),
	    cmocka_unit_test(test_sites),
	    cmocka_unit_test(test_btf_offsets),
	    cmocka_unit_test(test_task_layout),
	    cmocka_unit_test(test_pcpu_hot),
	    cmocka_unit_test(test_vmlinux_elf),
	    cmocka_unit_test(test_sysmap_strict_lines),
	    cmocka_unit_test(test_sysmap_lenient_forms),
	    cmocka_unit_test(test_sysmap_empty_and_directory),
	    cmocka_unit_test(test_stub_area_banner),
	};

	return cmocka_run_group_tests_name("vmi_linux", tests, setup, teardown);
}
