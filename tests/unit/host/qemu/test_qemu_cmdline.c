/* host/qemu/qemu_cmdline: what a QEMU command line says about its QMP monitor, gdbstub and UUID, in
 * every form QEMU takes (-qmp, -qmp-pretty, -mon + -chardev, chardev:ID, -s, -gdb), in the forms
 * libvirt writes (a monitor passed by fd), and hostile ones (unterminated, huge, many options, cut
 * values, bad ports). Table-driven: each case is a command line with its arguments separated by
 * '\n' (NUL in /proc/PID/cmdline), and exactly what the parser must report. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/qemu/qemu_cmdline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cmdline_case {
	const char *args;     /* '\n' between arguments */
	const char *qmp;      /* the monitor address, "" none */
	const char *why;      /* in c.why ("" : c.why is "") */
	const char *gdb_host; /* with gdb_port */
	int gdb_port;
	const char *uuid;
};

#define Q    "qemu-system-x86_64\n"
#define UUID "4f0e6f1c-1b38-4c38-9a1b-6ad2e0a1f00d"

/* clang-format off */
static const struct cmdline_case cases[] = {
	/* -qmp and -qmp-pretty, unix and tcp, old and new flag spellings */
	{Q "-qmp\nunix:/tmp/q.sock,server=on,wait=off", "unix:/tmp/q.sock", ""},
	{Q "-qmp\nunix:/tmp/q.sock,server,nowait", "unix:/tmp/q.sock", ""},
	{Q "--qmp\nunix:/tmp/q.sock,server=yes", "unix:/tmp/q.sock", ""},
	{Q "-qmp-pretty\nunix:/run/x/qmp,server=on,wait=off", "unix:/run/x/qmp", ""},
	{Q "-qmp\ntcp:127.0.0.1:4444,server=on,wait=off", "tcp:127.0.0.1:4444", ""},
	{Q "-qmp\ntcp::4444,server,nowait", "tcp:127.0.0.1:4444", ""},
	{Q "-qmp\ntcp:0.0.0.0:4444,server=on", "tcp:127.0.0.1:4444", ""},
	{Q "-qmp\ntcp:localhost:4444,server=on", "tcp:127.0.0.1:4444", ""},
	/* a comma in a path is written ",," */
	{Q "-qmp\nunix:/tmp/a,,b.sock,server=on", "unix:/tmp/a,b.sock", ""},
	/* -mon + -chardev, in either order, unix or tcp, implied or named keys */
	{Q "-chardev\nsocket,id=mon0,path=/tmp/m.sock,server=on,wait=off\n-mon\nchardev=mon0,mode=control",
	 "unix:/tmp/m.sock", ""},
	{Q "-mon\nchardev=mon0,mode=control,pretty=on\n-chardev\nsocket,path=/tmp/m.sock,server=on,id=mon0",
	 "unix:/tmp/m.sock", ""},
	{Q "-chardev\nsocket,id=c,host=127.0.0.1,port=5555,server=on,wait=off\n-mon\nc,mode=control",
	 "tcp:127.0.0.1:5555", ""},
	{Q "-chardev\nbackend=socket,id=c,host=::1,port=5555,server=on\n-mon\nchardev=c,mode=control",
	 "tcp:::1:5555", ""},
	{Q "-chardev\nsocket,id=c,path=/tmp/m.sock,server=on\n-qmp\nchardev:c", "unix:/tmp/m.sock", ""},
	/* the first usable QMP monitor wins; an unusable one before it is skipped */
	{Q "-qmp\nstdio\n-qmp\nunix:/tmp/2.sock,server=on", "unix:/tmp/2.sock", ""},
	{Q "-qmp\nunix:/tmp/1.sock,server=on\n-qmp\nunix:/tmp/2.sock,server=on", "unix:/tmp/1.sock", ""},
	/* libvirt's own monitor: a socket passed by fd */
	{Q "-chardev\nsocket,id=charmonitor,fd=31,server=on,wait=off\n-mon\nchardev=charmonitor,id=monitor,mode=control",
	 "", "its QMP monitor (-mon chardev charmonitor): a socket passed by fd (libvirt's own): attach by domain name"},
	/* monitors hvtrace cannot use, each with its reason */
	{Q "-qmp\nunix:/tmp/q.sock", "", "its QMP monitor (-qmp): not a server (QEMU connects out)"},
	{Q "-qmp\nstdio", "", "its QMP monitor (-qmp): a 'stdio' chardev, not a socket"},
	{Q "-mon\nchardev=nope,mode=control", "", "its QMP monitor (-mon chardev nope): no -chardev with that id"},
	{Q "-chardev\npty,id=p\n-mon\nchardev=p,mode=control", "", "its QMP monitor (-mon chardev p): a 'pty' chardev, not a socket"},
	{Q "-chardev\nsocket,id=s,server=on\n-mon\ns,mode=control", "", "a socket with neither path nor port"},
	{Q "-qmp\ntcp:127.0.0.1:99999,server=on", "", "no valid tcp HOST:PORT"},
	{Q "-qmp\ntcp:127.0.0.1:,server=on", "", "no valid tcp HOST:PORT"},
	{Q "-qmp\ntcp:127.0.0.1:12x,server=on", "", "no valid tcp HOST:PORT"},
	{Q "-qmp\ntcp:evil;host:4444,server=on", "", "no valid tcp HOST:PORT"},
	{Q "-qmp\ntcp:4444", "", "no valid tcp HOST:PORT"},
	/* human monitors only */
	{Q "-monitor\nunix:/tmp/h.sock,server,nowait", "", "its only monitor is a human one (-monitor, HMP)"},
	/* -monitor none (with -nodefaults): no monitor, not a human one (issue 41) */
	{Q "-nodefaults\n-monitor\nnone", "", ""},
	{Q "-monitor\nnone\n-qmp\nunix:/tmp/q.sock,server=on,wait=off", "unix:/tmp/q.sock", ""},
	{Q "-chardev\nsocket,id=h,path=/tmp/h.sock,server=on\n-mon\nchardev=h", "", "its only monitor is a human one (-mon, HMP)"},
	{Q "-chardev\nsocket,id=h,path=/tmp/h.sock,server=on\n-mon\nchardev=h,mode=readline", "", "(-mon, HMP)"},
	{Q "-readconfig\n/etc/vm.cfg", "", "hvtrace does not read -readconfig"},
	/* gdbstubs: -s is tcp::1234; the last one wins; only tcp is reusable */
	{Q "-s", "", "", "127.0.0.1", 1234},
	{Q "-gdb\ntcp::5678", "", "", "127.0.0.1", 5678},
	{Q "-gdb\ntcp:127.0.0.2:5678", "", "", "127.0.0.2", 5678},
	{Q "-gdb\ntcp:[::1]:5678", "", "", "::1", 5678},
	{Q "-s\n-gdb\ntcp::5678", "", "", "127.0.0.1", 5678},
	{Q "-gdb\ntcp::5678\n-s", "", "", "127.0.0.1", 1234},
	{Q "-s\n-gdb\nunix:/tmp/g,server=on", "", "", "", 0},
	{Q "-gdb\ntcp::0", "", "", "", 0},
	{Q "-gdb\ntcp:[:5678", "", "", "", 0},
	{Q "-gdb\ntcp::5678,server=off", "", "", "127.0.0.1", 5678},
	{Q "-gdb\ntcp:[::1]t,id=m,path=/tmp:5644,server", "", "", "", 0},
	{Q "-qmp\ntcp::4444,path=/tmp/x,server=on", "tcp:127.0.0.1:4444", ""},
	{Q "-qmp\ntcp::4444,server=off", "", "not a server"},
	{Q "-gdb\ntcp:[]:5678", "", "", "", 0},
	{Q "-gdb\ntcp:[::1:5678", "", "", "", 0},
	{Q "-qmp\ntcp:[::1]:4444,server=on", "tcp:::1:4444", ""},
	{Q "-gdb\ntcp::70000", "", "", "", 0},
	{Q "-qmp\nunix:/tmp/q.sock,server=on\n-s", "unix:/tmp/q.sock", "", "127.0.0.1", 1234},
	/* -uuid, and a value that is not one */
	{Q "-uuid\n" UUID, "", "", "", 0, UUID},
	{Q "-uuid\nnot-a-uuid", "", "", "", 0, ""},
	{Q "-uuid\n" UUID "0", "", "", "", 0, ""},
	/* hostile: an option without its value, a value that is itself an option, empty arguments */
	{Q "-qmp", "", ""},
	{Q "-qmp\n-s", "", "its QMP monitor (-qmp): a '-s' chardev, not a socket"},
	{Q "\n\n\n-qmp\n\nunix:/x", "", "a '' chardev, not a socket"},
	{"", "", ""},
	{"-", "", ""},
	{"--", "", ""},
	{"-chardev\nsocket", "", ""},
	{"-chardev\n,,,,,,=,=,=", "", ""},
	{"-mon\n=,=,mode=control", "", ""},
	{"-mon\nchardev=,mode=control", "", ""},
	/* an option name is never taken from inside a value */
	{Q "-name\n-qmp\nunix:/tmp/q.sock,server=on", "unix:/tmp/q.sock", ""},
	{Q "-append\nconsole=ttyS0 -qmp unix:/tmp/q.sock,server=on", "", ""},
};
/* clang-format on */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The case's arguments as /proc/PID/cmdline has them (each NUL-terminated). */
static char *to_cmdline(const char *args, size_t *len)
{
	size_t n = strlen(args);
	char *b = malloc(n + 1);

	memcpy(b, args, n + 1);
	for (size_t i = 0; i < n; i++)
		if (b[i] == '\n')
			b[i] = 0;
	*len = n ? n + 1 : 0;
	return b;
}

static void test_forms(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct cmdline_case *k = &cases[i];
		struct qemu_cmdline c;
		size_t len;
		char *b = to_cmdline(k->args, &len);

		qemu_cmdline_parse(b, len, &c);
		if (strcmp(c.qmp, k->qmp))
			fail_msg("case %zu: qmp '%s', not '%s'", i, c.qmp, k->qmp);
		if (k->why[0] ? !strstr(c.why, k->why) : c.why[0] != 0)
			fail_msg("case %zu: why '%s', not '%s'", i, c.why, k->why);
		if (c.gdb_port != k->gdb_port || strcmp(c.gdb_host, k->gdb_host ? k->gdb_host : ""))
			fail_msg("case %zu: gdb '%s' %d, not '%s' %d", i, c.gdb_host, c.gdb_port,
				 k->gdb_host ? k->gdb_host : "", k->gdb_port);
		if (strcmp(c.uuid, k->uuid ? k->uuid : ""))
			fail_msg("case %zu: uuid '%s'", i, c.uuid);
		free(b);
	}
}

/* The last argument without its NUL (a cmdline cut at QEMU_CMDLINE_MAX): read to the end, no
 * further. */
static void test_unterminated(void **state)
{
	static const char b[] = "qemu\0-qmp\0unix:/tmp/q.sock,server=on";
	struct qemu_cmdline c;

	(void)state;
	qemu_cmdline_parse(b, sizeof(b) - 1, &c);
	assert_string_equal(c.qmp, "unix:/tmp/q.sock");
	/* cut inside the value: the shorter path, never a byte past @len */
	qemu_cmdline_parse(b, sizeof(b) - 1 - strlen(",server=on") - 2, &c);
	assert_string_equal(c.qmp, "");
	assert_string_equal(c.why, "its QMP monitor (-qmp): not a server (QEMU connects out)");
}

/* Values too long for what they name: a unix path over sun_path, a chardev id over 63 bytes (cut
 * short, it could match another), an argument over 4 KiB. */
static void test_too_long(void **state)
{
	char buf[9000], path[200];
	struct qemu_cmdline c;
	int n;

	(void)state;
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = 0;
	n = snprintf(buf, sizeof(buf), "qemu%c-qmp%cunix:/%s,server=on", 0, 0, path);
	qemu_cmdline_parse(buf, (size_t)n, &c);
	assert_string_equal(c.qmp, "");
	assert_non_null(strstr(c.why, "too long"));

	n = snprintf(buf, sizeof(buf),
		     "qemu%c-chardev%csocket,id=%0100d,path=/tmp/a,server=on%c-mon%cchardev=%099d1,"
		     "mode=control",
		     0, 0, 0, 0, 0, 0);
	qemu_cmdline_parse(buf, (size_t)n, &c);
	assert_string_equal(c.qmp, "");

	memset(buf, 'x', sizeof(buf));
	memcpy(buf, "q\0-qmp\0unix:/", 13);
	qemu_cmdline_parse(buf, sizeof(buf), &c);
	assert_string_equal(c.qmp, "");
	assert_string_equal(c.why, "");
}

/* More monitors and chardevs than the parser keeps: bounded, and the first ones still count. */
static void test_many(void **state)
{
	size_t cap = 1 << 20, len = 0;
	char *b = malloc(cap);
	struct qemu_cmdline c;

	(void)state;
	len += (size_t)sprintf(b + len, "qemu%c-qmp%cunix:/tmp/first,server=on%c", 0, 0, 0);
	for (int i = 0; i < 5000; i++)
		len += (size_t)sprintf(b + len,
				       "-chardev%csocket,id=c%d,path=/tmp/%d,server=on%c-mon%c"
				       "c%d,mode=control%c",
				       0, i, i, 0, 0, i, 0);
	qemu_cmdline_parse(b, len, &c);
	assert_string_equal(c.qmp, "unix:/tmp/first");
	free(b);
}

static void test_has_uuid(void **state)
{
	static const char b[] = "qemu\0-name\0guest=x\0-uuid\0" UUID "\0-m\0256";
	static const char upper[] = "qemu\0--uuid\0"
				    "4F0E6F1C-1B38-4C38-9A1B-6AD2E0A1F00D";
	static const char inside[] = "sh\0-c\0qemu -uuid " UUID;
	static const char last[] = "qemu\0" UUID "\0-uuid";

	(void)state;
	assert_int_equal(qemu_cmdline_has_uuid(b, sizeof(b), UUID), 1);
	assert_int_equal(qemu_cmdline_has_uuid(upper, sizeof(upper) - 1, UUID), 1);
	assert_int_equal(qemu_cmdline_has_uuid(inside, sizeof(inside), UUID), 0);
	assert_int_equal(qemu_cmdline_has_uuid(last, sizeof(last), UUID), 0);
	assert_int_equal(qemu_cmdline_has_uuid(b, sizeof(b), "4f0e6f1c"), 0);
}

/* qemu_cmdline_tcp, as `info chardev` shows a gdbstub ("tcp:0.0.0.0:1234,server=on"). */
static void test_tcp(void **state)
{
	static const struct {
		const char *spec, *host;
		int port;
	} ok[] = {
	    {"tcp:0.0.0.0:1234,server=on", "127.0.0.1", 1234},
	    {"tcp:127.0.0.1:1,server=on,wait=off", "127.0.0.1", 1},
	    {"tcp::65535", "127.0.0.1", 65535},
	    {"tcp:[::]:5", "::1", 5},
	    {"tcp:::1:5", "::1", 5},
	    {"tcp:10.0.0.5:22", "10.0.0.5", 22}, /* a host is a host: the caller decides */
	};
	static const char *const bad[] = {
	    "tcp:",
	    "tcp::",
	    "tcp::0",
	    "tcp::65536",
	    "tcp:a b:1",
	    "tcp:h:1x",
	    "unix:/x",
	    "tcp:[::1:5",
	    /* a host over 63 bytes: */
	    ("tcp:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:1"),
	};
	char host[64];
	int port;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(ok); i++) {
		assert_int_equal(qemu_cmdline_tcp(ok[i].spec, host, sizeof(host), &port), 0);
		assert_string_equal(host, ok[i].host);
		assert_int_equal(port, ok[i].port);
	}
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		if (qemu_cmdline_tcp(bad[i], host, sizeof(host), &port) != -EINVAL)
			fail_msg("'%s' taken as %s:%d", bad[i], host, port);
}

/* This very process's command line, read back whole. */
static void test_read_self(void **state)
{
	char *buf;
	size_t len;

	(void)state;
	assert_int_equal(qemu_cmdline_read(getpid(), &buf, &len), 0);
	assert_true(len > 0);
	assert_non_null(strstr(buf, "test_qemu_cmdline"));
	free(buf);
	assert_int_equal(qemu_cmdline_read(0x3fffffff, &buf, &len), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forms),    cmocka_unit_test(test_unterminated),
	    cmocka_unit_test(test_too_long), cmocka_unit_test(test_many),
	    cmocka_unit_test(test_has_uuid), cmocka_unit_test(test_read_self),
	    cmocka_unit_test(test_tcp),
	};

	return cmocka_run_group_tests_name("qemu_cmdline", tests, NULL, NULL);
}
