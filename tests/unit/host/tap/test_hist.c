/* Hist triggers: the parser (each bad spec one line naming what is wrong), the trigger info line,
 * the table (modifiers, Dropped past size=N) and the `hist` text against hand-checked expected
 * text in the kernel's layout (kernel/trace/trace_events_hist.c, hist_trigger_show). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/tap/hist.h"
#include "host/tap/hist_print.h"
#include "host/trace/hist_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_parse_good(void **state)
{
	struct hist_spec h;
	char err[256], info[512];

	(void)state;
	assert_true(hist_is_trigger("vfs_read:hist:keys=common_pid"));
	assert_true(hist_is_trigger("vfs_read:hist"));
	assert_false(hist_is_trigger("vfs_read:histx"));
	assert_false(hist_is_trigger("vfs_read:traceon"));
	assert_int_equal(hist_parse("vfs_read:hist:keys=common_pid.execname", &h, err, sizeof(err)),
			 0);
	assert_string_equal(h.func, "vfs_read");
	assert_int_equal(h.nr_keys, 1);
	assert_int_equal(h.keys[0].src, HIST_SRC_PID);
	assert_int_equal(h.keys[0].mod, HIST_MOD_EXECNAME);
	assert_int_equal(h.size, 2048);
	hist_spec_info(info, sizeof(info), &h);
	assert_string_equal(info, "hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:"
				  "size=2048 [active]");

	assert_int_equal(hist_parse("f:hist:name=lat:key=cpu,duration.log2:vals=hitcount,duration."
				    "usecs:sort=duration.descending,common_cpu:size=200",
				    &h, err, sizeof(err)),
			 0);
	assert_int_equal(h.nr_keys, 2);
	assert_string_equal(h.keys[0].name, "common_cpu");
	assert_int_equal(h.keys[1].src, HIST_SRC_DURATION);
	assert_int_equal(h.nr_vals, 1); /* hitcount is always there */
	assert_int_equal(h.size, 256);	/* rounded up to a power of two */
	assert_true(hist_wants_returns(&h));
	/* sort by name: "duration" is the key (keys come first, as the kernel finds them) */
	assert_true(h.sort[0].is_key);
	assert_int_equal(h.sort[0].idx, 1);
	assert_true(h.sort[0].descending);
	hist_spec_info(info, sizeof(info), &h);
	assert_string_equal(info,
			    "hist:lat:keys=common_cpu,duration.log2:vals=hitcount,duration."
			    "usecs:sort=duration.log2.descending,common_cpu:size=256 [active]");

	assert_int_equal(hist_parse("f:hist:keys=ip.sym,parent_ip.sym-offset,len.buckets=10:"
				    "values=len.hex:size=128",
				    &h, err, sizeof(err)),
			 0);
	assert_int_equal(h.keys[2].src, HIST_SRC_EVENT);
	assert_int_equal(h.keys[2].buckets, 10);
	assert_false(hist_wants_returns(&h));
	hist_spec_info(info, sizeof(info), &h);
	assert_string_equal(info, "hist:keys=ip.sym,parent_ip.sym-offset,len.buckets=10:vals="
				  "hitcount,len.hex:sort=hitcount:size=128 [active]");
	/* an -e event inside a function, named as its probe */
	assert_int_equal(hist_parse("vfs_read+9:hist:keys=common_pid", &h, err, sizeof(err)), 0);
	assert_string_equal(h.func, "vfs_read+0x9");
}

static void test_parse_bad(void **state)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
	    {"f:hist", "--trigger 'f:hist': keys= is missing"},
	    {"f:hist:vals=hitcount", "--trigger 'f:hist:vals=hitcount': keys= is missing"},
	    {":hist:keys=a", "--trigger ':hist:keys=a': expected FUNC:hist:keys=..."},
	    {"f g:hist:keys=a", "--trigger 'f g:hist:keys=a': bad function name"},
	    {"f:hist:keys=", "--trigger 'f:hist:keys=': keys: empty list"},
	    {"f:hist:keys=a,", "--trigger 'f:hist:keys=a,': keys: bad field name ''"},
	    {"f:hist:keys=a-b", "--trigger 'f:hist:keys=a-b': keys: bad field name 'a-b'"},
	    {"f:hist:keys=hitcount",
	     "--trigger 'f:hist:keys=hitcount': keys: hitcount is not a key"},
	    {"f:hist:keys=a,b,c,d", "--trigger 'f:hist:keys=a,b,c,d': keys: too many (at most 3)"},
	    {"f:hist:keys=ip.foo",
	     "--trigger 'f:hist:keys=ip.foo': ip: unknown modifier '.foo' (execname, hex, sym, "
	     "sym-offset, log2, buckets=N, usecs)"},
	    {"f:hist:keys=ip.execname",
	     "--trigger 'f:hist:keys=ip.execname': ip.execname: only common_pid has an execname"},
	    {"f:hist:keys=ip.usecs",
	     "--trigger 'f:hist:keys=ip.usecs': ip.usecs: only duration is a time"},
	    {"f:hist:keys=len.buckets=0",
	     "--trigger 'f:hist:keys=len.buckets=0': len.buckets=N: expected a number above 0"},
	    {"f:hist:keys=len.buckets=x",
	     "--trigger 'f:hist:keys=len.buckets=x': len.buckets=N: expected a number above 0"},
	    {"f:hist:keys=ip:vals=len.log2",
	     "--trigger 'f:hist:keys=ip:vals=len.log2': vals: len.log2: a value takes .hex or "
	     ".usecs only"},
	    {"f:hist:keys=ip:sort=len",
	     "--trigger 'f:hist:keys=ip:sort=len': sort: len: sort field must be a key or a val"},
	    {"f:hist:keys=ip:sort=ip.up",
	     "--trigger 'f:hist:keys=ip:sort=ip.up': sort: ip.up: invalid sort modifier"},
	    {"f:hist:keys=ip:sort=ip,hitcount,ip",
	     "--trigger 'f:hist:keys=ip:sort=ip,hitcount,ip': sort: too many sort fields (at most "
	     "2)"},
	    {"f:hist:keys=ip:sort=", "--trigger 'f:hist:keys=ip:sort=': sort: empty sort field"},
	    {"f:hist:keys=ip:size=100000000",
	     "--trigger 'f:hist:keys=ip:size=100000000': size: expected a number from 128 to "
	     "131072"},
	    {"f:hist:keys=ip:size=-1",
	     "--trigger 'f:hist:keys=ip:size=-1': size: expected a number from 128 to 131072"},
	    {"f:hist:keys=ip:name=a b",
	     "--trigger 'f:hist:keys=ip:name=a b': name: expected a name of letters, digits, _"},
	    {"f:hist:keys=ip:pause",
	     "--trigger 'f:hist:keys=ip:pause': 'pause': not supported (keys=, vals=, sort=, "
	     "size=, name=)"},
	    {"f:hist:keys=stacktrace.hex",
	     "--trigger 'f:hist:keys=stacktrace.hex': stacktrace: a stack trace takes no modifier"},
	    {"f:hist:keys=ip:vals=stacktrace",
	     "--trigger 'f:hist:keys=ip:vals=stacktrace': stacktrace: a stack trace is a key, not a "
	     "value"},
	    {"f:hist:keys=stacktrace,len",
	     "--trigger 'f:hist:keys=stacktrace,len': keys: stacktrace with len: a stacktrace key "
	     "goes with common_pid, common_cpu and ip only"},
	    {"f:hist:keys=common_pid,duration.log2,stacktrace",
	     "--trigger 'f:hist:keys=common_pid,duration.log2,stacktrace': keys: stacktrace with "
	     "duration: a stacktrace key goes with common_pid, common_cpu and ip only"},
	    {"f:hist:keys=stacktrace,common_stacktrace",
	     "--trigger 'f:hist:keys=stacktrace,common_stacktrace': keys: one stacktrace at most"},
	    {"f:hist:keys=common_stacktrace:vals=duration",
	     "--trigger 'f:hist:keys=common_stacktrace:vals=duration': vals: common_stacktrace with "
	     "duration: a stacktrace hist counts hits only"},
	    {"f:hist:keys=ip if common_pid == 1",
	     "--trigger 'f:hist:keys=ip if common_pid == 1': keys: bad field name 'ip if "
	     "common_pid == 1'"},
	};
	struct hist_spec h;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(hist_parse(bad[i].text, &h, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].err);
	}
}

static const struct vmi_sym syms_v[] = {
    {.addr = 0xffffffff81000000, .size = 0x100, .name = "vfs_read"},
    {.addr = 0xffffffff81000100, .size = 0x80, .name = "ksys_read"},
};

static struct vmi_symtab syms = {.syms = (struct vmi_sym *)syms_v, .nr = 2, .cap = 2};

/* A record of task @pid/@comm on @cpu at @ip called from @parent, returning after @dur ns. */
static struct hvt_record rec_of(int pid, const char *comm, unsigned cpu, uint64_t ip,
				uint64_t parent, uint64_t dur, uint8_t type)
{
	struct hvt_record r = {.ip = ip,
			       .parent = parent,
			       .duration = dur,
			       .pid = pid,
			       .cpu = (uint16_t)cpu,
			       .type = type};

	snprintf(r.comm, sizeof(r.comm), "%s", comm);
	return r;
}

/* @h fed through the tap (hist_add) with @n records of @recs on probe @p. */
static void feed(struct hist_set *set, const struct probe *p, const struct hvt_record *recs,
		 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sink_rec sr = {.r = &recs[i], .probe = p};

		hist_add(set, &sr);
	}
}

/* A hist set of one spec @text over a one-probe table, made by hand (hist_set_init's table). */
static void one_hist(struct hist_set *set, const char *text, uint32_t probe)
{
	struct hist *h = calloc(1, sizeof(*h));
	char err[256];

	assert_non_null(h);
	assert_int_equal(hist_parse(text, &h->spec, err, sizeof(err)), 0);
	h->probe = probe;
	h->on_return = hist_wants_returns(&h->spec);
	h->stack_key = hist_stack_key(&h->spec);
	h->elts = calloc(h->spec.size, sizeof(*h->elts));
	h->slots = calloc(2 * h->spec.size, sizeof(*h->slots));
	assert_non_null(h->elts);
	assert_non_null(h->slots);
	h->mask = 2 * h->spec.size - 1;
	set->v = h;
	set->nr = 1;
}

/* Lines of @text that start with @prefix. */
static int count_lines(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *at = text; at; at = strchr(at, '\n'), at = at ? at + 1 : NULL)
		n += !strncmp(at, prefix, strlen(prefix));
	return n;
}

static char *print_of(const struct hist *h, bool first)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(hist_print(h, &syms, first, f), 0);
	fclose(f);
	return text;
}

static void test_execname_text(void **state)
{
	struct probe p = {.id = 3};
	struct hist_set set;
	struct hvt_record r[] = {
	    rec_of(120, "dd", 0, 0xffffffff81000000, 0xffffffff81000120, 0, HVT_REC_ENTRY),
	    rec_of(1, "init", 1, 0xffffffff81000000, 0xffffffff81000120, 0, HVT_REC_ENTRY),
	    rec_of(120, "dd", 1, 0xffffffff81000000, 0xffffffff81000120, 0, HVT_REC_ENTRY),
	    rec_of(120, "dd", 0, 0xffffffff81000000, 0xffffffff81000120, 0, HVT_REC_EVENT),
	    rec_of(77, "sh", 0, 0xffffffff81000000, 0xffffffff81000120, 0, HVT_REC_ENTRY),
	    rec_of(77, "sh", 0, 0xffffffff81000000, 0xffffffff81000120, 0, HVT_REC_ENTRY),
	    /* a return is no call; another probe's call is not this hist's */
	    rec_of(120, "dd", 0, 0xffffffff81000000, 0, 500, HVT_REC_RETURN),
	};
	struct probe other = {.id = 4};
	struct hvt_record o = rec_of(5, "x", 0, 0x1000, 0, 0, HVT_REC_ENTRY);
	char *text;

	(void)state;
	one_hist(&set, "vfs_read:hist:keys=common_pid.execname", 3);
	feed(&set, &p, r, sizeof(r) / sizeof(r[0]));
	feed(&set, &other, &o, 1);
	text = print_of(&set.v[0], true);
	/* hand-checked against the kernel's formats: "%s: %-16s[%10llu]", " hitcount: %10llu" */
	assert_string_equal(text,
			    "# event histogram\n"
			    "#\n"
			    "# trigger info: hist:keys=common_pid.execname:vals=hitcount:"
			    "sort=hitcount:size=2048 [active]\n"
			    "#\n"
			    "\n"
			    "{ common_pid: init            [         1] } hitcount:          1\n"
			    "{ common_pid: sh              [        77] } hitcount:          2\n"
			    "{ common_pid: dd              [       120] } hitcount:          3\n"
			    "\n"
			    "Totals:\n"
			    "    Hits: 6\n"
			    "    Entries: 3\n"
			    "    Dropped: 0\n");
	free(text);
	/* a later section is set apart by a blank line pair, as the kernel's hist_show */
	text = print_of(&set.v[0], false);
	assert_memory_equal(text, "\n\n# event histogram\n", 19);
	free(text);
	hist_set_free(&set);
}

static void test_log2_sym_text(void **state)
{
	struct probe p = {.id = 0};
	struct hist_set set;
	/* durations 1, 2, 3, 4, 5, 1000 ns -> log2 0, 1, 2, 2, 3, 10 */
	uint64_t d[] = {1, 2, 3, 4, 5, 1000, 4};
	char *text;

	(void)state;
	one_hist(&set, "vfs_read:hist:keys=duration.log2:vals=duration:sort=duration", 0);
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		struct hvt_record r =
		    rec_of(9, "a", 0, 0xffffffff81000000, 0, d[i], HVT_REC_RETURN);
		struct hvt_record e = rec_of(9, "a", 0, 0xffffffff81000000, 0, 0, HVT_REC_ENTRY);

		feed(&set, &p, &e, 1); /* a duration hist counts returns only */
		feed(&set, &p, &r, 1);
	}
	text = print_of(&set.v[0], true);
	assert_string_equal(text,
			    "# event histogram\n"
			    "#\n"
			    "# trigger info: hist:keys=duration.log2:vals=hitcount,duration:"
			    "sort=duration.log2:size=2048 [active]\n"
			    "#\n"
			    "\n"
			    "{ duration: ~ 2^0  } hitcount:          1  duration:          1\n"
			    "{ duration: ~ 2^1  } hitcount:          1  duration:          2\n"
			    "{ duration: ~ 2^2  } hitcount:          3  duration:         11\n"
			    "{ duration: ~ 2^3  } hitcount:          1  duration:          5\n"
			    "{ duration: ~ 2^10 } hitcount:          1  duration:       1000\n"
			    "\n"
			    "Totals:\n"
			    "    Hits: 7\n"
			    "    Entries: 5\n"
			    "    Dropped: 0\n");
	free(text);
	hist_set_free(&set);

	/* .sym and .sym-offset as the kernel's %ps / %pS in 45 and 55 columns, .hex, descending */
	one_hist(&set,
		 "vfs_read:hist:keys=ip.sym,parent_ip.sym-offset,common_cpu.hex:sort=hitcount."
		 "descending",
		 0);
	struct hvt_record r[] = {
	    rec_of(9, "a", 10, 0xffffffff81000000, 0xffffffff81000123, 0, HVT_REC_ENTRY),
	    rec_of(9, "a", 10, 0xffffffff81000000, 0xffffffff81000123, 0, HVT_REC_ENTRY),
	    rec_of(9, "a", 10, 0xffffffff81000000, 0x1234, 0, HVT_REC_ENTRY),
	};
	feed(&set, &p, r, 3);
	char line[512];
	int n = hist_entry_format(line, sizeof(line), &set.v[0].spec, &set.v[0].elts[0], &syms);

	assert_int_equal(n, (int)strlen(line));
	/* vfs_read in 45 columns (8 + 37 blanks), ksys_read+0x23/0x80 in 55 (19 + 36) */
	assert_string_equal(line, "{ ip: [ffffffff81000000] vfs_read            "
				  "                         , parent_ip: [ffffffff81000123] "
				  "ksys_read+0x23/0x80                     "
				  "               , common_cpu: a } hitcount:          2\n");
	text = print_of(&set.v[0], true);
	/* the busier entry first; an address no symbol holds as %pS prints it */
	assert_non_null(strstr(text, "} hitcount:          2\n{ ip: [ffffffff81000000] vfs_read"));
	assert_non_null(strstr(text, "parent_ip: [1234] 0x1234 "));
	free(text);
	hist_set_free(&set);
}

/* A stack record of task @pid/@comm for a hist's key (@for_hist) or the stacktrace trigger, with
 * @n frames of @frames. */
static void feed_stack(struct hist_set *set, const struct probe *p, int pid, const char *comm,
		       const uint64_t *frames, size_t n, bool for_hist)
{
	struct hvt_record r = rec_of(pid, comm, 0, 0xffffffff81000000, 0, 0, HVT_REC_STACK);
	struct sink_rec sr = {.r = &r, .probe = p, .payload = (const uint8_t *)frames};

	r.parent = for_hist ? HVT_STACK_FOR_HIST : 0;
	r.value = n * sizeof(*frames);
	hist_add(set, &sr);
}

/* keys=common_pid.execname,stacktrace: the host's stack records made for it (not the
 * stacktrace trigger's, not the calls themselves), told apart frame by frame, each printed as the
 * kernel's hist_trigger_stacktrace_print (%pS a line, nine spaces in, the brace after the last);
 * frames past HIST_STACK_DEPTH left out */
static void test_stacktrace_text(void **state)
{
	static const uint64_t a[] = {0xffffffff81000000, 0xffffffff81000123, 0xffffffff81000140};
	static const uint64_t b[] = {0xffffffff81000000, 0xffffffff81000150};
	uint64_t deep[HIST_STACK_DEPTH + 4];
	struct probe p = {.id = 2};
	struct hvt_record call = rec_of(120, "dd", 0, 0xffffffff81000000, 0, 0, HVT_REC_ENTRY);
	struct sink_rec sr = {.r = &call, .probe = &p};
	struct hist_set set;
	char *text;

	(void)state;
	one_hist(&set, "vfs_read:hist:keys=common_pid.execname,stacktrace", 2);
	for (int i = 0; i < 3; i++)
		feed_stack(&set, &p, 120, "dd", a, 3, true);
	feed_stack(&set, &p, 120, "dd", b, 2, true);
	feed_stack(&set, &p, 120, "dd", a, 2, true); /* a prefix of a: another stack */
	feed_stack(&set, &p, 120, "dd", a, 3, false); /* the stacktrace trigger's */
	hist_add(&set, &sr);			      /* the call itself */
	text = print_of(&set.v[0], true);
	assert_string_equal(text,
			    "# event histogram\n"
			    "#\n"
			    "# trigger info: hist:keys=common_pid.execname,stacktrace:vals=hitcount:"
			    "sort=hitcount:size=2048 [active]\n"
			    "#\n"
			    "\n"
			    "{ common_pid: dd              [       120], stacktrace:\n"
			    "         vfs_read+0x0/0x100\n"
			    "         ksys_read+0x50/0x80\n"
			    "} hitcount:          1\n"
			    "{ common_pid: dd              [       120], stacktrace:\n"
			    "         vfs_read+0x0/0x100\n"
			    "         ksys_read+0x23/0x80\n"
			    "} hitcount:          1\n"
			    "{ common_pid: dd              [       120], stacktrace:\n"
			    "         vfs_read+0x0/0x100\n"
			    "         ksys_read+0x23/0x80\n"
			    "         ksys_read+0x40/0x80\n"
			    "} hitcount:          3\n"
			    "\n"
			    "Totals:\n"
			    "    Hits: 5\n"
			    "    Entries: 3\n"
			    "    Dropped: 0\n");
	free(text);
	hist_set_free(&set);

	one_hist(&set, "f:hist:keys=stacktrace", 2);
	for (size_t i = 0; i < sizeof(deep) / sizeof(deep[0]); i++)
		deep[i] = 0xffffffff81000000 + i;
	feed_stack(&set, &p, 1, "init", deep, sizeof(deep) / sizeof(deep[0]), true);
	assert_int_equal(set.v[0].nr_elts, 1);
	assert_int_equal(set.v[0].elts[0].stack[HIST_STACK_DEPTH - 1],
			 0xffffffff81000000 + HIST_STACK_DEPTH - 1);
	text = print_of(&set.v[0], true);
	assert_int_equal(count_lines(text, "         vfs_read+0x"), HIST_STACK_DEPTH);
	assert_non_null(strstr(text, "\n{ stacktrace:\n         vfs_read+0x0/0x100\n"));
	free(text);
	hist_set_free(&set);
}

/* a guest's task name is escaped, as in every line of the trace */
static void test_hostile_comm(void **state)
{
	struct probe p = {.id = 0};
	struct hist_set set;
	struct hvt_record r = rec_of(7, "a\nb\x1b[2J", 0, 0x10, 0, 0, HVT_REC_ENTRY);
	char line[256];

	(void)state;
	one_hist(&set, "f:hist:keys=common_pid.execname", 0);
	feed(&set, &p, &r, 1);
	hist_entry_format(line, sizeof(line), &set.v[0].spec, &set.v[0].elts[0], NULL);
	assert_string_equal(
	    line, "{ common_pid: a\\nb\\x1b[2J     [         7] } hitcount:          1\n");
	hist_set_free(&set);
}

static void test_dropped(void **state)
{
	struct probe p = {.id = 1};
	struct hist_set set;
	char *text;

	(void)state;
	one_hist(&set, "f:hist:keys=common_pid:size=128", 1);
	for (int pid = 1; pid <= 200; pid++) {
		struct hvt_record r = rec_of(pid, "t", 0, 0x10, 0, 0, HVT_REC_ENTRY);

		feed(&set, &p, &r, 1);
		feed(&set, &p, &r, 1);
	}
	assert_int_equal(set.v[0].nr_elts, 128);
	assert_int_equal(set.v[0].hits, 256);
	assert_int_equal(set.v[0].dropped, 144);
	text = print_of(&set.v[0], true);
	assert_non_null(strstr(text, "{ common_pid:        128 } hitcount:          2\n\nTotals:\n"
				     "    Hits: 256\n    Entries: 128\n    Dropped: 144\n"));
	free(text);
	hist_set_free(&set);
}

/* -e fields as keys and values, read from the payload by the binding's offsets */
static void test_event_field(void **state)
{
	static struct fe_spec ev;
	struct probe_table *t = NULL;
	struct hist_spec spec;
	struct hist_set set;
	char err[256];
	size_t pos;

	(void)state;
	assert_int_equal(fe_parse("vfs_read(u64 file, s32 count)", &ev, err, sizeof(err), &pos), 0);
	/* binding by hand as hist_set_init does it for the probe's event */
	assert_int_equal(
	    hist_parse("vfs_read:hist:keys=count:vals=file.hex", &spec, err, sizeof(err)), 0);
	(void)t;
	struct vmi_sym fsym = {.addr = 0x1000, .size = 0x10, .name = "vfs_read"};
	struct vmi_site site = {.addr = 0x1000, .func = &fsym};
	const struct vmi_site *sel[] = {&site};
	struct probe_table probes;

	assert_int_equal(probe_table_init(&probes, sel, 1), 0);
	probe_at(&probes, 0)->event = &ev;
	assert_int_equal(hist_set_init(&set, &spec, 1, &probes, false, err, sizeof(err)), 0);
	/* payload: [status][u64 file][status][s32 count] */
	uint8_t payload[1 + 8 + 1 + 4] = {0};
	uint64_t file = 0xabc;
	int32_t count = -2;

	memcpy(payload + 1, &file, 8);
	memcpy(payload + 10, &count, 4);
	struct hvt_record r = rec_of(1, "a", 0, 0x1000, 0, 0, HVT_REC_EVENT);

	r.value = sizeof(payload);
	struct sink_rec sr = {.r = &r, .payload = payload, .probe = probe_at(&probes, 0)};

	hist_add(&set, &sr);
	hist_add(&set, &sr);
	assert_int_equal(set.v[0].nr_elts, 1);
	assert_int_equal(set.v[0].elts[0].key[0], (uint64_t)-2);
	assert_int_equal(set.v[0].elts[0].sum[1], 2 * 0xabc);
	hist_set_free(&set);

	/* a field the event has not, a string field, a duration on a function without returns */
	assert_int_equal(hist_parse("vfs_read:hist:keys=nope", &spec, err, sizeof(err)), 0);
	assert_int_equal(hist_set_init(&set, &spec, 1, &probes, false, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--trigger vfs_read:hist: no field nope (common_pid, common_cpu, "
				 "ip, parent_ip, duration, or a field of the function's -e event)");
	hist_set_free(&set);
	assert_int_equal(hist_parse("vfs_read:hist:keys=duration.log2", &spec, err, sizeof(err)),
			 0);
	assert_int_equal(hist_set_init(&set, &spec, 1, &probes, false, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--trigger vfs_read:hist: duration: the returns of vfs_read are "
				 "not hooked (-r vfs_read, -p function_graph; an entry probe with "
				 "no return cannot)");
	hist_set_free(&set);
	assert_int_equal(hist_set_init(&set, &spec, 1, &probes, true, err, sizeof(err)), 0);
	hist_set_free(&set);
	assert_int_equal(hist_parse("nosuch:hist:keys=ip", &spec, err, sizeof(err)), 0);
	assert_int_equal(hist_set_init(&set, &spec, 1, &probes, false, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--trigger nosuch:hist: nosuch is not a traced function (-l, -g, "
				 "-e)");
	hist_set_free(&set);
	probe_table_free(&probes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_good),	  cmocka_unit_test(test_parse_bad),
	    cmocka_unit_test(test_execname_text), cmocka_unit_test(test_log2_sym_text),
	    cmocka_unit_test(test_dropped),	  cmocka_unit_test(test_hostile_comm),
	    cmocka_unit_test(test_event_field),	  cmocka_unit_test(test_stacktrace_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
