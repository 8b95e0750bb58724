/* host/gdbstub: packet framing, escapes, run lengths, stop replies, the x86_64 `g` layout, and the
 * client's wire behaviour against a scripted stub on a socketpair (acks, resends, chunking, P->G).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/trace/clock.h"
#include "host/vmm/gdbstub.h"
#include "host/qemu/target_qemu_run.h"
#include "host/vmm/tcp.h"
#include "tests/common/fake_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- an independent packet builder for expectations ------------------------------------------ */

static char *pool[1024]; /* pk() strings, freed after the group */
static size_t pool_len;

static int free_pool(void **state)
{
	(void)state;
	while (pool_len > 0)
		free(pool[--pool_len]);
	return 0;
}

/* "pre" + "$payload#cs" + "post", computed here without the code under test. */
static char *pk(const char *pre, const char *payload, const char *post)
{
	size_t n = strlen(pre) + strlen(payload) + strlen(post) + 8;
	char *s = malloc(n);
	unsigned sum = 0;

	assert_true(pool_len < sizeof(pool) / sizeof(pool[0]));
	pool[pool_len++] = s;

	for (const char *p = payload; *p; p++)
		sum += (unsigned char)*p;
	snprintf(s, n, "%s$%s#%02x%s", pre, payload, sum & 0xff, post);
	return s;
}

/* ---- gdb_packet_frame ------------------------------------------------------------------------------- */

static void assert_frame(const char *payload, const char *want)
{
	char out[64];
	ssize_t n = gdb_packet_frame(payload, strlen(payload), out, sizeof(out));

	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, (size_t)n);
}

static void test_frame_checksum(void **state)
{
	(void)state;
	assert_frame("g", "$g#67");
	assert_frame("?", "$?#3f");
	assert_frame("OK", "$OK#9a");
	assert_frame("qSupported", "$qSupported#37");
	assert_frame("vCont;c", "$vCont;c#a8");
	assert_frame("", "$#00");
}

static void test_frame_escapes(void **state)
{
	const char data[] = {'a', '$', '#', '}', '*', 'b'};
	const char want[] = "$a}\x04}\x03}]}\nb#25";
	char out[64];
	ssize_t n;

	(void)state;
	n = gdb_packet_frame(data, sizeof(data), out, sizeof(out));
	assert_int_equal(n, sizeof(want) - 1);
	assert_memory_equal(out, want, (size_t)n);
	/* Too small: "$" + payload + "#cs" does not fit. */
	assert_int_equal(gdb_packet_frame("abc", 3, out, 6), -ENOSPC);
	assert_int_equal(gdb_packet_frame("abc", 3, out, 7), 7);
	assert_int_equal(gdb_packet_frame("$", 1, out, 6), 6);
	assert_int_equal(gdb_packet_frame("$", 1, out, 5), -ENOSPC);
	assert_int_equal(gdb_packet_frame("$", 1, out, 3), -ENOSPC);
}

static void test_frame_roundtrip_all_bytes(void **state)
{
	unsigned char data[256];
	char framed[600], out[300];
	size_t len, used;
	ssize_t n;

	(void)state;
	for (int i = 0; i < 256; i++)
		data[i] = (unsigned char)i;
	n = gdb_packet_frame(data, sizeof(data), framed, sizeof(framed));
	assert_int_equal(n, 1 + 256 + 4 + 3); /* four escapes */
	assert_int_equal(gdb_packet_unframe(framed, (size_t)n, out, sizeof(out), &len, &used), 0);
	assert_int_equal(len, 256);
	assert_int_equal(used, n);
	assert_memory_equal(out, data, 256);
}

/* ---- gdb_packet_unframe ----------------------------------------------------------------------------- */

static void test_unframe_plain(void **state)
{
	char out[64];
	size_t len = 99, used;

	(void)state;
	assert_int_equal(gdb_packet_unframe("$OK#9a+$E01", 11, out, sizeof(out), &len, &used), 0);
	assert_string_equal(out, "OK");
	assert_int_equal(len, 2);
	assert_int_equal(used, 6);
	assert_int_equal(gdb_packet_unframe("$#00", 4, out, sizeof(out), &len, &used), 0);
	assert_int_equal(len, 0);
	assert_string_equal(out, "");
	/* Incomplete: no '#', or the checksum is not all there. */
	assert_int_equal(gdb_packet_unframe("$OK", 3, out, sizeof(out), &len, &used), -EAGAIN);
	assert_int_equal(gdb_packet_unframe("$OK#9", 5, out, sizeof(out), &len, &used), -EAGAIN);
	/* Bad checksum: the packet is still consumed so the reader can skip it. */
	assert_int_equal(gdb_packet_unframe("$OK#9b", 6, out, sizeof(out), &len, &used), -EBADMSG);
	assert_int_equal(used, 6);
	assert_int_equal(gdb_packet_unframe("$OK#zz", 6, out, sizeof(out), &len, &used), -EBADMSG);
	assert_int_equal(gdb_packet_unframe("OK#9a", 5, out, sizeof(out), &len, &used), -EPROTO);
	/* Capacity counts the NUL. */
	assert_int_equal(gdb_packet_unframe("$OK#9a", 6, out, 2, &len, &used), -EMSGSIZE);
	assert_int_equal(gdb_packet_unframe("$OK#9a", 6, out, 3, &len, &used), 0);
}

static void test_unframe_run_length(void **state)
{
	char out[64], *p;
	size_t len, used;

	(void)state;
	/* "0* " = '0' and 3 more ("0000"), the GDB manual's example. */
	p = pk("", "0* ", "");
	assert_int_equal(gdb_packet_unframe(p, strlen(p), out, sizeof(out), &len, &used), 0);
	assert_string_equal(out, "0000");
	/* '!' = 33: 4 more. Repeats of what precedes, then more data. */
	p = pk("", "xa*!b", "");
	assert_int_equal(gdb_packet_unframe(p, strlen(p), out, sizeof(out), &len, &used), 0);
	assert_string_equal(out, "xaaaaab");
	assert_int_equal(len, 7);
	/* Longest legal run: '~' = 126 -> 97 more. */
	p = pk("", "f*~", "");
	assert_int_equal(gdb_packet_unframe(p, strlen(p), out, sizeof(out), &len, &used), -EMSGSIZE);
	{
		char big[128];

		assert_int_equal(gdb_packet_unframe(p, strlen(p), big, sizeof(big), &len, &used), 0);
		assert_int_equal(len, 98);
		for (int i = 0; i < 98; i++)
			assert_int_equal(big[i], 'f');
	}
	/* An escaped byte can be repeated. */
	p = pk("", "}]*!", "");
	assert_int_equal(gdb_packet_unframe(p, strlen(p), out, sizeof(out), &len, &used), 0);
	assert_string_equal(out, "}}}}}");
	/* A run with nothing before it, or without its count. */
	p = pk("", "*!", "");
	assert_int_equal(gdb_packet_unframe(p, strlen(p), out, sizeof(out), &len, &used), -EPROTO);
	p = pk("", "a*", "");
	assert_int_equal(gdb_packet_unframe(p, strlen(p), out, sizeof(out), &len, &used), -EPROTO);
	/* A '}' escape at the very end. */
	p = pk("", "a}", "");
	assert_int_equal(gdb_packet_unframe(p, strlen(p), out, sizeof(out), &len, &used), -EPROTO);
}

/* ---- gdb_packet_parse_stop -------------------------------------------------------------------------- */

static void test_parse_stop(void **state)
{
	struct gdb_stop st;

	(void)state;
	assert_int_equal(gdb_packet_parse_stop("T05thread:01;", &st), 0);
	assert_int_equal(st.kind, GDB_STOP_SIGNAL);
	assert_int_equal(st.code, 5);
	assert_int_equal(st.thread, 1);
	assert_int_equal(gdb_packet_parse_stop("T02thread:p1.2;core:1;", &st), 0);
	assert_int_equal(st.code, 2);
	assert_int_equal(st.thread, 2);
	assert_int_equal(gdb_packet_parse_stop("T05swbreak:;thread:0a;", &st), 0);
	assert_int_equal(st.thread, 10);
	assert_int_equal(gdb_packet_parse_stop("T0506:0000000000000000;07:10ffffff;thread:1f", &st), 0);
	assert_int_equal(st.code, 5);
	assert_int_equal(st.thread, 31);
	assert_int_equal(gdb_packet_parse_stop("T11", &st), 0);
	assert_int_equal(st.code, 17);
	assert_int_equal(st.thread, 0);
	assert_int_equal(gdb_packet_parse_stop("S05", &st), 0);
	assert_int_equal(st.kind, GDB_STOP_SIGNAL);
	assert_int_equal(st.code, 5);
	assert_int_equal(st.thread, 0);
	assert_int_equal(gdb_packet_parse_stop("W00", &st), 0);
	assert_int_equal(st.kind, GDB_STOP_EXITED);
	assert_int_equal(st.code, 0);
	assert_int_equal(gdb_packet_parse_stop("W01;process:1", &st), 0);
	assert_int_equal(st.kind, GDB_STOP_EXITED);
	assert_int_equal(st.code, 1);
	assert_int_equal(gdb_packet_parse_stop("X09", &st), 0);
	assert_int_equal(st.kind, GDB_STOP_KILLED);
	assert_int_equal(st.code, 9);

	assert_int_equal(gdb_packet_parse_stop("OK", &st), -EPROTO);
	assert_int_equal(gdb_packet_parse_stop("", &st), -EPROTO);
	assert_int_equal(gdb_packet_parse_stop("T5", &st), -EPROTO);
	assert_int_equal(gdb_packet_parse_stop("Tzz", &st), -EPROTO);
	assert_int_equal(gdb_packet_parse_stop("T05thread", &st), -EPROTO);
	assert_int_equal(gdb_packet_parse_stop("T05thread:;", &st), -EPROTO);
	assert_int_equal(gdb_packet_parse_stop("S05x", &st), -EPROTO);
	assert_int_equal(gdb_packet_parse_stop("W", &st), -EPROTO);
}

/* ---- gdb_packet_decode_regs ------------------------------------------------------------------------- */

/* QEMU 7.2's `g` reply for vCPU 1 of `-cpu qemu64` at reset (captured): rdx = CPUID 1 EAX, rip =
 * 0xfff0, eflags 2, cs 0xf000, cr0 0x60000010; then st0-7, x87 control (fctrl 0x37f), xmm, mxcsr
 * 0x1f80. 608 bytes. */
static const char g_reset[] =
    "000000000000000000000000000000000000000000000000b10f060000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000f0ff0000"
    "000000000200000000f000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000001000006000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000007f0300000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000801f0000";

static void test_decode_qemu_reset(void **state)
{
	struct gdb_regs r;

	(void)state;
	assert_int_equal(strlen(g_reset), 1216);
	assert_int_equal(gdb_packet_decode_regs(&x86_gdb_layout, g_reset, strlen(g_reset), &r), 0);
	assert_int_equal(r.gp.r[X86_RAX], 0);
	assert_int_equal(r.gp.r[X86_RDX], 0x60fb1);
	assert_int_equal(r.gp.r[X86_RSP], 0);
	assert_int_equal(r.gp.r[X86_R15], 0);
	assert_int_equal(r.gp.r[X86_RIP], 0xfff0);
	assert_int_equal(r.gp.r[X86_RFLAGS], 2);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CS)], 0xf000);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_SS)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_GS)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_FS_BASE)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_K_GS_BASE)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR0)], 0x60000010);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR2)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR3)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR4)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR8)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_EFER)], 0);
}

/* Little-endian hex of @v over @n bytes, appended at @p. */
static char *put_le(char *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		p += sprintf(p, "%02x", (unsigned)(v & 0xff));
	return p;
}

/* A `g` reply where register i holds 0x1111111111111111 * (i + 1) truncated to its size (QEMU's
 * order: rax rbx rcx rdx rsi rdi rbp rsp r8-r15 rip, eflags, 6 selectors, fs_base gs_base
 * k_gs_base, cr0 cr2 cr3 cr4 cr8, efer), followed by @tail. */
static void build_g(char *buf, const char *tail)
{
	char *p = buf;

	for (unsigned i = 0; i < 17; i++)
		p = put_le(p, 0x0111111111111111ull * (i + 1), 8);
	for (unsigned i = 17; i < 24; i++)
		p = put_le(p, 0x01111111u * (i + 1), 4);
	for (unsigned i = 24; i < 33; i++)
		p = put_le(p, 0x0111111111111111ull * (i + 1), 8);
	strcpy(p, tail);
}

/* Hex-digit offset of register @regno in a `g` reply, counted here independently. */
static size_t hexoff(unsigned regno)
{
	size_t off = 0;

	for (unsigned i = 0; i < regno; i++)
		off += (i >= 17 && i <= 23) ? 4 : 8;
	return 2 * off;
}

#define V8(i) (0x0111111111111111ull * ((i) + 1))
#define V4(i) (0x01111111u * ((i) + 1))

static void test_decode_layout(void **state)
{
	char hex[1300];
	struct gdb_regs r;

	(void)state;
	build_g(hex, "");
	assert_int_equal(strlen(hex), 2 * X86_GDB_DECODED_BYTES);
	assert_int_equal(gdb_packet_decode_regs(&x86_gdb_layout, hex, strlen(hex), &r), 0);
	assert_int_equal(r.gp.r[X86_RAX], V8(0));
	assert_int_equal(r.gp.r[X86_RBX], V8(1));
	assert_int_equal(r.gp.r[X86_RCX], V8(2));
	assert_int_equal(r.gp.r[X86_RDX], V8(3));
	assert_int_equal(r.gp.r[X86_RSI], V8(4));
	assert_int_equal(r.gp.r[X86_RDI], V8(5));
	assert_int_equal(r.gp.r[X86_RBP],
			 V8(6)); /* g has rbp before rsp; struct arch_regs the reverse */
	assert_int_equal(r.gp.r[X86_RSP], V8(7));
	assert_int_equal(r.gp.r[X86_R8], V8(8));
	assert_int_equal(r.gp.r[X86_R9], V8(9));
	assert_int_equal(r.gp.r[X86_R10], V8(10));
	assert_int_equal(r.gp.r[X86_R11], V8(11));
	assert_int_equal(r.gp.r[X86_R12], V8(12));
	assert_int_equal(r.gp.r[X86_R13], V8(13));
	assert_int_equal(r.gp.r[X86_R14], V8(14));
	assert_int_equal(r.gp.r[X86_R15], V8(15));
	assert_int_equal(r.gp.r[X86_RIP], V8(16));
	assert_int_equal(r.gp.r[X86_RFLAGS], V4(17));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CS)], V4(18));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_SS)], V4(19));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_DS)], V4(20));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_ES)], V4(21));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_FS)], V4(22));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_GS)], V4(23));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_FS_BASE)], V8(24));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_GS_BASE)], V8(25));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_K_GS_BASE)], V8(26));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR0)], V8(27));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR2)], V8(28));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR3)], V8(29));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR4)], V8(30));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR8)], V8(31));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_EFER)], V8(32));
	/* A real 0xffffffff81000000-style kernel address decodes to all 64 bits. */
	memcpy(hex + hexoff(X86_GDB_RIP), "00000081ffffffff", 16);
	assert_int_equal(gdb_packet_decode_regs(&x86_gdb_layout, hex, strlen(hex), &r), 0);
	assert_int_equal(r.gp.r[X86_RIP], 0xffffffff81000000ull);
}

static void test_decode_errors(void **state)
{
	char hex[1300];
	struct gdb_regs r;

	(void)state;
	build_g(hex, "");
	assert_int_equal(gdb_packet_decode_regs(&x86_gdb_layout, hex, strlen(hex) - 2, &r),
			 -EPROTO);
	assert_int_equal(gdb_packet_decode_regs(&x86_gdb_layout, hex, strlen(hex) - 1, &r),
			 -EPROTO);
	hex[10] = 'g';
	assert_int_equal(gdb_packet_decode_regs(&x86_gdb_layout, hex, strlen(hex), &r), -EPROTO);
	/* "xx" (unavailable) bytes read as zero. */
	build_g(hex, "");
	memcpy(hex + hexoff(X86_GDB_CR3), "xxxxxxxxxxxxxxxx", 16);
	assert_int_equal(gdb_packet_decode_regs(&x86_gdb_layout, hex, strlen(hex), &r), 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR3)], 0);
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_CR4)], V8(30));
}

static void test_reg_size(void **state)
{
	(void)state;
	assert_int_equal(gdb_packet_reg_size(&x86_gdb_layout, X86_GDB_RAX), 8);
	assert_int_equal(gdb_packet_reg_size(&x86_gdb_layout, X86_GDB_RIP), 8);
	assert_int_equal(gdb_packet_reg_size(&x86_gdb_layout, X86_GDB_EFLAGS), 4);
	assert_int_equal(gdb_packet_reg_size(&x86_gdb_layout, X86_GDB_CS), 4);
	assert_int_equal(gdb_packet_reg_size(&x86_gdb_layout, X86_GDB_GS), 4);
	assert_int_equal(gdb_packet_reg_size(&x86_gdb_layout, X86_GDB_FS_BASE), 8);
	assert_int_equal(gdb_packet_reg_size(&x86_gdb_layout, X86_GDB_EFER), 8);
	assert_int_equal(gdb_packet_reg_size(&x86_gdb_layout, X86_GDB_NR_REGS), 0);
	assert_int_equal(X86_GDB_RIP, 16);
	assert_int_equal(X86_GDB_CR3, 29);
	assert_int_equal(X86_GDB_EFER, 32);
}

/* ---- scripted stub on a socketpair (tests/common/fake_server.h) ------------------------------ */

/* QEMU 7.2's answers to the negotiation: no-ack mode refused, target.xml served. */
static size_t qemu72_hello(struct fake_step *st, const char *pre1, const char *pre2)
{
	size_t n = 0;

	st[n++] = (struct fake_step){
	    pk(pre1, "qSupported", ""),
	    pk("+", "PacketSize=1000;qXfer:features:read+;vContSupported+;multiprocess+", "")};
	st[n++] = (struct fake_step){pk(pre2, "QStartNoAckMode", ""), pk("+", "", "")};
	st[n++] = (struct fake_step){pk("+", "vCont?", ""), pk("+", "vCont;c;C;s;S", "")};
	st[n++] = (struct fake_step){pk("+", "qXfer:features:read:target.xml:0,ffb", ""),
				     pk("+", "l<?xml version=\"1.0\"?><target/>", "")};
	st[n++] = (struct fake_step){pk("+", "?", ""), pk("+", "T05thread:01;", "")};
	return n;
}

static struct gdb *new_gdb(void)
{
	struct gdb *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	return g;
}

static void test_session_qemu72(void **state)
{
	char synth[1300], err[128];
	struct fake_step st[32];
	size_t n;
	struct fake_server s;
	struct gdb *g = new_gdb();
	struct gdb_regs r;
	int tids[4];
	unsigned nr;
	uint8_t mem[4];

	(void)state;
	build_g(synth, "");
	n = qemu72_hello(st, "", "+");
	st[n++] = (struct fake_step){pk("+", "qfThreadInfo", ""), pk("+", "m01,02", "")};
	st[n++] = (struct fake_step){pk("+", "qsThreadInfo", ""), pk("+", "mp1.3", "")};
	st[n++] = (struct fake_step){pk("+", "qsThreadInfo", ""), pk("+", "l", "")};
	st[n++] = (struct fake_step){pk("+", "Hg2", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", synth, "")};
	/* Thread 2 is still selected: no second Hg. */
	st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", synth, "")};
	st[n++] = (struct fake_step){pk("+", "P10=efbeadde00000000", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "P11=02020000", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "m1000,4", ""), pk("+", "E14", "")};
	st[n++] = (struct fake_step){pk("+", "m1000,4", ""), pk("+", "01020304", "")};
	st[n++] = (struct fake_step){pk("+", "M2000,2:abcd", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "Qqemu.PhyMemMode:1", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "Z0,7c01,1", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "z0,7c01,1", ""), pk("+", "E22", "")};
	st[n++] = (struct fake_step){pk("+", "Z0,ffffffff81000000,1", ""), pk("+", "", "")};
	st[n++] = (struct fake_step){pk("+", "D", ""), pk("+", "OK", "")};

	assert_int_equal(gdb_attach_fd(g, fake_server_start(&s, NULL, st, n, FAKE_SERVER_HOLD), err,
				       sizeof(err)),
			 0);
	assert_int_equal(g->packet_size, 4096);
	assert_true(g->ack);
	assert_true(g->vcont);
	assert_false(g->running);
	assert_int_equal(g->last_stop.kind, GDB_STOP_SIGNAL);
	assert_int_equal(g->last_stop.code, 5);
	assert_int_equal(g->last_stop.thread, 1);

	assert_int_equal(gdb_threads(g, tids, 4, &nr), 0);
	assert_int_equal(nr, 3);
	assert_int_equal(tids[0], 1);
	assert_int_equal(tids[1], 2);
	assert_int_equal(tids[2], 3);

	assert_int_equal(gdb_read_regs(g, 2, &r), 0);
	assert_int_equal(r.gp.r[X86_RIP], V8(16));
	assert_int_equal(r.sys[X86_GDB_SYS(X86_GDB_EFER)], V8(32));
	assert_int_equal(gdb_read_regs(g, 2, &r), 0);
	assert_int_equal(gdb_write_reg(g, 2, X86_GDB_RIP, 0xdeadbeef), 0);
	assert_int_equal(g->p_state, 1);
	assert_int_equal(gdb_write_reg(g, 2, X86_GDB_EFLAGS, 0x202), 0);
	assert_int_equal(gdb_write_reg(g, 2, X86_GDB_NR_REGS, 0), -EINVAL);

	assert_int_equal(gdb_read_mem(g, 0, 0x1000, mem, 4), -EFAULT);
	assert_int_equal(g->last_error, 0x14);
	assert_int_equal(gdb_read_mem(g, 2, 0x1000, mem, 4), 0);
	assert_int_equal(mem[0], 1);
	assert_int_equal(mem[3], 4);
	assert_int_equal(gdb_write_mem(g, 0, 0x2000, "\xab\xcd", 2), 0);
	assert_int_equal(gdb_set_phys_mode(g, true), 0);
	assert_int_equal(gdb_set_phys_mode(g, true), 0); /* cached: no packet */

	assert_int_equal(gdb_insert_bp(g, 0x7c01), 0);
	assert_int_equal(gdb_remove_bp(g, 0x7c01), -EIO);
	assert_int_equal(g->last_error, 0x22);
	assert_int_equal(gdb_insert_bp(g, 0xffffffff81000000ull), -ENOTSUP);

	assert_int_equal(gdb_detach(g), 0);
	assert_int_equal(g->fd, -1);
	fake_server_finish(&s);
	assert_string_equal(s.tail, "+"); /* the ack of D's OK, flushed at close */
	free(g);
}

static void test_noack_mode(void **state)
{
	struct fake_step st[8];
	struct fake_server s;
	struct gdb *g = new_gdb();
	char err[128];
	size_t n = 0;

	(void)state;
	st[n++] = (struct fake_step){pk("", "qSupported", ""),
				     pk("+", "PacketSize=4000;QStartNoAckMode+", "")};
	st[n++] = (struct fake_step){pk("+", "QStartNoAckMode", ""), pk("+", "OK", "")};
	/* The OK itself is still acknowledged; then no more acks either way. */
	st[n++] = (struct fake_step){pk("+", "vCont?", ""), pk("", "", "")};
	st[n++] = (struct fake_step){pk("", "?", ""), pk("", "S05", "")};
	st[n++] = (struct fake_step){pk("", "c", ""), pk("", "T05thread:02;", "")};
	st[n++] = (struct fake_step){pk("", "Hc2", ""), pk("", "OK", "")};
	st[n++] = (struct fake_step){pk("", "s", ""), pk("", "T05thread:02;", "")};

	assert_int_equal(gdb_attach_fd(g, fake_server_start(&s, NULL, st, n, FAKE_SERVER_HOLD), err,
				       sizeof(err)),
			 0);
	assert_false(g->ack);
	assert_false(g->vcont);
	assert_int_equal(g->packet_size, 0x4000);
	assert_int_equal(g->last_stop.code, 5);
	assert_int_equal(g->last_stop.thread, 0);
	{
		struct gdb_stop stop;

		assert_int_equal(gdb_continue(g), 0);
		assert_int_equal(gdb_wait_stop(g, 1000, &stop), 0);
		assert_int_equal(stop.thread, 2);
		assert_int_equal(gdb_step(g, 2, &stop), 0);
		assert_int_equal(stop.thread, 2);
	}
	gdb_close(g);
	fake_server_finish(&s);
	assert_string_equal(s.tail, "");
	free(g);
}

/* A packet with a bad checksum is answered '-' and read again; a '-' from the stub makes the client
 * send its packet again; console output packets are skipped; an unasked stop reply at connect (QEMU
 * stopping a running VM for the debugger) is recorded and skipped. */
static void test_resend_console_unasked_stop(void **state)
{
	struct fake_step st[16];
	struct fake_server s;
	struct gdb *g = new_gdb();
	char err[128], bad[64];
	size_t n;
	uint8_t b;

	(void)state;
	n = qemu72_hello(st, "", "++");
	snprintf(bad, sizeof(bad), "+$2a#00");
	st[n++] = (struct fake_step){pk("+", "m10,1", ""), bad};
	st[n++] = (struct fake_step){"-", pk("", "2a", "")};
	st[n++] = (struct fake_step){pk("+", "m11,1", ""), "-"};
	st[n++] =
	    (struct fake_step){pk("", "m11,1", ""), pk("+", "O48656c6c6f0a", pk("", "7f", ""))};
	st[n++] = (struct fake_step){pk("++", "Hg1", ""), pk("+", "OK", "")};

	assert_int_equal(gdb_attach_fd(g,
				       fake_server_start(&s, pk("", "T02thread:02;", ""), st, n,
							 FAKE_SERVER_HOLD),
				       err, sizeof(err)),
			 0);
	/* The answer to '?' (T05, thread 1) came after the unasked T02. */
	assert_int_equal(g->last_stop.code, 5);
	assert_int_equal(g->last_stop.thread, 1);
	assert_int_equal(gdb_read_mem(g, 0, 0x10, &b, 1), 0);
	assert_int_equal(b, 0x2a);
	assert_int_equal(gdb_read_mem(g, 0, 0x11, &b, 1), 0);
	assert_int_equal(b, 0x7f);
	assert_int_equal(gdb_select_thread(g, 1), 0);
	gdb_close(g);
	fake_server_finish(&s);
	assert_string_equal(s.tail, "+");
	free(g);
}

/* No P: the register is written by reading `g`, patching it and sending `G`; P is not tried again.
 */
static void test_write_reg_g_fallback(void **state)
{
	char orig[1300], with_cr3[1300], with_rip[1300], g1[1400], g2[1400], err[128];
	struct fake_step st[16];
	struct fake_server s;
	struct gdb *g = new_gdb();
	size_t n;

	(void)state;
	/* The registers QEMU sends after efer (x87, xmm, mxcsr) go back unchanged. */
	build_g(orig, "0011223344556677");
	strcpy(with_cr3, orig);
	memcpy(with_cr3 + hexoff(X86_GDB_CR3), "0010000000000000", 16);
	strcpy(with_rip, with_cr3);
	memcpy(with_rip + hexoff(X86_GDB_RIP), "0000000000000000", 16);
	snprintf(g1, sizeof(g1), "G%s", with_cr3);
	snprintf(g2, sizeof(g2), "G%s", with_rip);
	n = qemu72_hello(st, "", "+");
	st[n++] = (struct fake_step){pk("+", "Hg1", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "P1d=0010000000000000", ""), pk("+", "", "")};
	st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", orig, "")};
	st[n++] = (struct fake_step){pk("+", g1, ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", with_cr3, "")};
	st[n++] = (struct fake_step){pk("+", g2, ""), pk("+", "E01", "")};

	assert_int_equal(gdb_attach_fd(g, fake_server_start(&s, NULL, st, n, FAKE_SERVER_HOLD), err,
				       sizeof(err)),
			 0);
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_CR3, 0x1000), 0);
	assert_int_equal(g->p_state, 0);
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RIP, 0), -EIO);
	assert_int_equal(g->last_error, 1);
	gdb_close(g);
	fake_server_finish(&s);
	free(g);
}

/* Reads and writes are cut to the stub's PacketSize; a short read continues where it stopped. */
static void test_memory_chunks(void **state)
{
	struct fake_step st[16];
	struct fake_server s;
	struct gdb *g = new_gdb();
	char err[128], hex[128];
	uint8_t buf[40], want[40];
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 40; i++)
		want[i] = (uint8_t)(0xa0 + i);
	st[n++] = (struct fake_step){pk("", "qSupported", ""), pk("+", "PacketSize=40", "")};
	st[n++] = (struct fake_step){pk("+", "QStartNoAckMode", ""), pk("+", "", "")};
	st[n++] = (struct fake_step){pk("+", "vCont?", ""), pk("+", "", "")};
	st[n++] = (struct fake_step){pk("+", "?", ""), pk("+", "S05", "")};
	/* PacketSize 0x40: reads of (64 - 8) / 2 = 28 bytes, writes of (64 - 48) / 2 = 8. */
	for (int i = 0; i < 28; i++)
		sprintf(hex + 2 * i, "%02x", want[i]);
	st[n++] = (struct fake_step){pk("+", "mfffff000,1c", ""), pk("+", hex, "")};
	for (int i = 0; i < 5; i++) /* short answer: 5 of 12 */
		sprintf(hex + 2 * i, "%02x", want[28 + i]);
	st[n++] = (struct fake_step){pk("+", "mfffff01c,c", ""), pk("+", hex, "")};
	for (int i = 0; i < 7; i++)
		sprintf(hex + 2 * i, "%02x", want[33 + i]);
	st[n++] = (struct fake_step){pk("+", "mfffff021,7", ""), pk("+", hex, "")};
	st[n++] = (struct fake_step){pk("+", "M10,8:a0a1a2a3a4a5a6a7", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "M18,2:a8a9", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "M0,1:00", ""), pk("+", "E0e", "")};

	assert_int_equal(gdb_attach_fd(g, fake_server_start(&s, NULL, st, n, FAKE_SERVER_HOLD), err,
				       sizeof(err)),
			 0);
	assert_int_equal(g->packet_size, 0x40);
	assert_int_equal(gdb_read_mem(g, 0, 0xfffff000, buf, 40), 0);
	assert_memory_equal(buf, want, 40);
	assert_int_equal(gdb_write_mem(g, 0, 0x10, want, 10), 0);
	assert_int_equal(gdb_write_mem(g, 0, 0, "", 1), -EFAULT);
	assert_int_equal(g->last_error, 0x0e);
	gdb_close(g);
	fake_server_finish(&s);
	free(g);
}

/* Continue, time out, refuse commands while running, interrupt with 0x03, step one thread, and the
 * VM process exiting (W). */
static void test_execution(void **state)
{
	struct fake_step st[16];
	struct fake_server s;
	struct gdb *g = new_gdb();
	struct gdb_stop stop;
	struct gdb_regs r;
	char err[128];
	size_t n;

	(void)state;
	n = qemu72_hello(st, "", "+");
	st[n++] = (struct fake_step){pk("+", "vCont;c", ""), "+"};
	st[n++] = (struct fake_step){"\x03", pk("", "T02thread:01;", "")};
	st[n++] = (struct fake_step){pk("+", "vCont;s:2", ""), pk("+", "T05thread:02;", "")};
	st[n++] = (struct fake_step){pk("+", "vCont;c", ""), pk("+", "O6869", pk("", "W00", ""))};

	assert_int_equal(gdb_attach_fd(g, fake_server_start(&s, NULL, st, n, FAKE_SERVER_HOLD), err,
				       sizeof(err)),
			 0);
	assert_int_equal(gdb_wait_stop(g, 10, &stop), -EINVAL); /* not running */
	assert_int_equal(gdb_continue(g), 0);
	assert_true(g->running);
	assert_int_equal(gdb_continue(g), -EBUSY);
	assert_int_equal(gdb_wait_stop(g, 50, &stop), -ETIMEDOUT);
	assert_int_equal(gdb_read_regs(g, 1, &r), -EBUSY);
	assert_int_equal(gdb_command(g, "g"), -EBUSY);
	assert_int_equal(gdb_interrupt(g, 1000, &stop), 0);
	assert_int_equal(stop.kind, GDB_STOP_SIGNAL);
	assert_int_equal(stop.code, 2);
	assert_int_equal(stop.thread, 1);
	assert_false(g->running);
	/* Already stopped: the last stop again, nothing sent. */
	memset(&stop, 0, sizeof(stop));
	assert_int_equal(gdb_interrupt(g, 1000, &stop), 0);
	assert_int_equal(stop.code, 2);
	assert_int_equal(gdb_step(g, 2, &stop), 0);
	assert_int_equal(stop.code, 5);
	assert_int_equal(stop.thread, 2);
	assert_int_equal(gdb_continue(g), 0);
	assert_int_equal(gdb_wait_stop(g, 1000, &stop), 0);
	assert_int_equal(stop.kind, GDB_STOP_EXITED);
	assert_int_equal(stop.code, 0);
	assert_true(g->gone);
	assert_int_equal(gdb_command(g, "?"), -ECONNRESET);
	assert_int_equal(gdb_detach(g), 0);
	fake_server_finish(&s);
	free(g);
}

/* QEMU's current CPU for breakpoints (c_cpu, issue 40): the thread the last stop reply named, or the
 * last Hc; gdb_select_bp_thread sends Hc only for another thread, and an error leaves it as it was. */
static void test_bp_thread(void **state)
{
	struct fake_step st[16];
	struct fake_server s;
	struct gdb *g = new_gdb();
	struct gdb_stop stop;
	char err[128];
	size_t n;

	(void)state;
	n = qemu72_hello(st, "", "+");
	st[n++] = (struct fake_step){pk("+", "Hc2", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "Z0,7c01,1", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "vCont;c", ""), "+"};
	st[n++] = (struct fake_step){"\x03", pk("", "T02thread:02;", "")};
	st[n++] = (struct fake_step){pk("+", "Hc1", ""), pk("+", "E22", "")};
	st[n++] = (struct fake_step){pk("+", "D", ""), pk("+", "OK", "")};

	assert_int_equal(gdb_attach_fd(g, fake_server_start(&s, NULL, st, n, FAKE_SERVER_HOLD), err,
				       sizeof(err)),
			 0);
	assert_int_equal(g->bp_thread, 1); /* the stop reply to '?' named thread 1 */
	assert_int_equal(gdb_select_bp_thread(g, 1), 0); /* no packet */
	assert_int_equal(gdb_select_bp_thread(g, 0), -EINVAL);
	assert_int_equal(gdb_select_bp_thread(g, 2), 0);
	assert_int_equal(g->bp_thread, 2);
	assert_int_equal(gdb_select_bp_thread(g, 2), 0); /* no packet */
	assert_int_equal(gdb_insert_bp(g, 0x7c01), 0);
	assert_int_equal(gdb_continue(g), 0);
	assert_int_equal(g->bp_thread, 0); /* running: unknown until the stop */
	assert_int_equal(gdb_interrupt(g, 1000, &stop), 0);
	assert_int_equal(stop.thread, 2);
	assert_int_equal(g->bp_thread, 2);
	assert_int_equal(gdb_select_bp_thread(g, 2), 0); /* no packet */
	assert_int_equal(gdb_select_bp_thread(g, 1), -EIO);
	assert_int_equal(g->bp_thread, 2);
	assert_int_equal(gdb_detach(g), 0);
	fake_server_finish(&s);
	free(g);
}

/* The '+' owed for the reply to a P sent with a continue is not sent while the VM runs: an interrupt
 * is the 0x03 byte alone (QEMU 8.1 and later stop on the '+' without a stop reply and drop the 0x03,
 * seen on QEMU 10.0 and 11.1), and that '+' is never sent: the first command after the stop carries
 * only the one owed for the stop reply. */
static void test_interrupt_alone_while_running(void **state)
{
	struct fake_step st[16];
	struct fake_server s;
	struct gdb *g = new_gdb();
	struct gdb_stop stop;
	char err[128], cont[128];
	size_t n;

	(void)state;
	n = qemu72_hello(st, "", "+");
	st[n++] = (struct fake_step){pk("+", "Hg1", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "P10=0010000000000000", ""), pk("+", "OK", "")};
	snprintf(cont, sizeof(cont), "%s%s", pk("+", "P10=0020000000000000", ""), pk("", "vCont;c", ""));
	st[n++] = (struct fake_step){cont, pk("+", "OK", "+")};
	st[n++] = (struct fake_step){"\x03", pk("", "T02thread:01;", "")};
	st[n++] = (struct fake_step){pk("+", "?", ""), pk("+", "T02thread:01;", "")};

	assert_int_equal(gdb_attach_fd(g, fake_server_start(&s, NULL, st, n, FAKE_SERVER_HOLD), err,
				       sizeof(err)),
			 0);
	assert_int_equal(gdb_write_reg(g, 1, X86_GDB_RIP, 0x1000), 0);
	assert_int_equal(gdb_write_pc_continue(g, 1, 0x2000), 0);
	assert_true(g->running);
	assert_int_equal(gdb_interrupt(g, 1000, &stop), 0);
	assert_int_equal(stop.code, 2);
	assert_int_equal(gdb_stop_reason(g, &stop), 0);
	gdb_close(g);
	fake_server_finish(&s);
	assert_int_equal(s.failed, -1);
	free(g);
}

static void test_connection_lost(void **state)
{
	struct fake_step st[8];
	struct fake_server s;
	struct gdb *g = new_gdb();
	struct gdb_stop stop;
	char err[128];
	size_t n;

	(void)state;
	n = qemu72_hello(st, "", "+");
	st[n++] = (struct fake_step){pk("+", "vCont;c", ""), "+"};
	/* The stub hangs up right after acking vCont;c (QEMU killed while the VM runs). */
	assert_int_equal(gdb_attach_fd(g, fake_server_start(&s, NULL, st, n, 0), err, sizeof(err)),
			 0);
	assert_int_equal(gdb_continue(g), 0);
	assert_int_equal(gdb_wait_stop(g, 1000, &stop), -ECONNRESET);
	assert_true(g->gone);
	gdb_close(g);
	fake_server_finish(&s);
	free(g);
}

static void test_connect_refused(void **state)
{
	struct gdb *g = new_gdb();
	char err[128];

	(void)state;
	/* Port 1 on loopback: nothing listens there. */
	assert_int_equal(gdb_connect(g, "127.0.0.1", 1, err, sizeof(err)), -ECONNREFUSED);
	assert_string_equal(err, "gdbstub 127.0.0.1:1: connect: Connection refused");
	assert_int_equal(g->fd, -1);
	free(g);
}

/* The stub acks qSupported and hangs up: the reason names the step, the fd is closed. */
static void test_negotiation_fails(void **state)
{
	struct fake_step st[1];
	struct fake_server s;
	struct gdb *g = new_gdb();
	char err[128];
	int fd;

	(void)state;
	st[0] = (struct fake_step){pk("", "qSupported", ""), "+"};
	fd = fake_server_start(&s, NULL, st, 1, 0);
	assert_int_equal(gdb_attach_fd(g, fd, err, sizeof(err)), -ECONNRESET);
	assert_string_equal(err, "gdbstub: qSupported: Connection reset by peer");
	assert_int_equal(g->fd, -1);
	fake_server_finish(&s);
	free(g);
}

/* ---- hostile stubs: floods, stalls, lies (issue #10) ----------------------------------------- */

/* A hostile peer must never hang the test: a client that would wait forever dies here instead. */
static void watchdog(unsigned seconds)
{
	alarm(seconds);
}

static double elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A connected client after QEMU 7.2's negotiation, whose stub then plays @st (its last steps). */
static struct gdb *hostile(struct fake_server *s, struct fake_step *st, size_t n, unsigned flags)
{
	struct gdb *g = new_gdb();
	char err[128];

	assert_int_equal(
	    gdb_attach_fd(g, fake_server_start(s, NULL, st, n, flags), err, sizeof(err)), 0);
	return g;
}

/* Runs gdb_command(g, "g") against a stub that answers it with @reply then @flood (@every_ms apart,
 * or a stall with FAKE_SERVER_HOLD when @flood is NULL), the client waiting @timeout_ms at most:
 * returns its code, g->why in @why. */
static int hostile_g(const char *reply, const char *flood, unsigned every_ms, int timeout_ms,
		     char *why, size_t whylen, const char *label)
{
	struct fake_step st[8];
	struct fake_server s;
	struct timespec t0;
	struct gdb *g;
	size_t n = qemu72_hello(st, "", "+");
	int rc;

	st[n++] = (struct fake_step){pk("+", "g", ""), reply, flood, every_ms};
	g = hostile(&s, st, n, flood ? 0 : FAKE_SERVER_HOLD);
	g->timeout_ms = timeout_ms;
	watchdog(20);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = gdb_command(g, "g");
	print_message("%s: %s after %.0f ms\n", label, strerror(-rc), elapsed_ms(&t0));
	alarm(0);
	snprintf(why, whylen, "%s", g->why);
	/* whatever failed that way leaves the connection unusable, not hanging */
	assert_true(g->broken);
	assert_int_equal(gdb_command(g, "?"), -ECONNABORTED);
	gdb_close(g);
	fake_server_finish(&s);
	free(g);
	return rc;
}

#define A64 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

/* The stub answers 'g' with floods and stalls: every case ends with its one error, never a hang. */
static void test_hostile_replies(void **state)
{
	const struct {
		const char *label, *reply, *flood;
		unsigned every_ms;
		int timeout_ms, rc;
		const char *why;
	} cases[] = {
	    /* `O` console packets as fast as the socket takes them: the client used to wait forever
	     * (each packet restarted the timeout); now GDB_MAX_SKIPPED of them end it */
	    {"console flood", "+", pk("", "O6869", ""), 0, 5000, -EPROTO,
	     "gdbstub: 257 console or stop packets and no reply to 'g'"},
	    /* the same every 20 ms (fewer than the bound): one deadline whatever arrives */
	    {"console trickle", "+", pk("", "O6869", ""), 20, 300, -ETIMEDOUT,
	     "gdbstub: no reply to 'g' within 300 ms"},
	    /* unasked stop replies without end while the VM is stopped */
	    {"stop flood", "+", pk("", "T05thread:01;", ""), 0, 5000, -EPROTO,
	     "gdbstub: 257 console or stop packets and no reply to 'g'"},
	    /* half a packet, then nothing */
	    {"stall", "+$0011", NULL, 0, 300, -ETIMEDOUT,
	     "gdbstub: no reply to 'g' within 300 ms (5 bytes of a packet, then nothing)"},
	    /* a packet that never ends: refused once it outgrows the buffer */
	    {"endless packet", "+$", A64 A64 A64 A64, 0, 5000, -EMSGSIZE,
	     "gdbstub: a packet longer than 16384 bytes"},
	    /* '-' without end (each asks for our packet again), and bytes outside any packet */
	    {"nak flood", "+", "-", 0, 5000, -EPROTO, "gdbstub: our packet refused ('-') 9 times"},
	    {"junk flood", "+", "xxxxxxxxxxxxxxxx", 0, 5000, -EPROTO,
	     "gdbstub: 16385 bytes outside any packet"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[192];

		assert_int_equal(hostile_g(cases[i].reply, cases[i].flood, cases[i].every_ms,
					   cases[i].timeout_ms, why, sizeof(why), cases[i].label),
				 cases[i].rc);
		assert_string_equal(why, cases[i].why);
	}
}

/* Replies of the wrong shape: one error naming what was wrong; the connection stays usable. */
static void test_hostile_lies(void **state)
{
	struct fake_step st[16];
	struct fake_server s;
	struct gdb_regs r;
	struct gdb *g;
	uint8_t mem[4];
	int tids[4];
	unsigned nr;
	size_t n = qemu72_hello(st, "", "+");

	(void)state;
	st[n++] = (struct fake_step){pk("+", "Hg1", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", "0011", "")};
	st[n++] = (struct fake_step){pk("+", "m1000,4", ""), pk("+", "0102zz04", "")};
	st[n++] = (struct fake_step){pk("+", "m1000,4", ""), pk("+", "0102030405", "")};
	st[n++] = (struct fake_step){pk("+", "qfThreadInfo", ""), pk("+", "m01,01", "")};
	st[n++] = (struct fake_step){pk("+", "qfThreadInfo", ""), pk("+", "m0", "")};
	st[n++] = (struct fake_step){pk("+", "?", ""), pk("+", "\x1b[2J\x1b[31mOK", "")};
	st[n++] = (struct fake_step){pk("+", "m1000,4", ""), pk("+", "01020304", "")};
	g = hostile(&s, st, n, FAKE_SERVER_HOLD);

	assert_int_equal(gdb_read_regs(g, 1, &r), -EPROTO);
	assert_string_equal(g->why, "gdbstub: 'g' reply of 4 bytes for thread 1, not 472 hex "
				    "digits or more");
	assert_int_equal(gdb_read_mem(g, 0, 0x1000, mem, 4), -EPROTO);
	assert_string_equal(g->why, "gdbstub: 'm1000,4' answered with a byte that is not hex at 4");
	assert_int_equal(gdb_read_mem(g, 0, 0x1000, mem, 4), -EPROTO);
	assert_string_equal(g->why, "gdbstub: 'm1000,4' answered with 10 hex digits");
	assert_int_equal(gdb_threads(g, tids, 4, &nr), -EPROTO);
	assert_string_equal(g->why, "gdbstub: thread 1 listed twice");
	assert_int_equal(gdb_threads(g, tids, 4, &nr), -EPROTO);
	assert_string_equal(g->why, "gdbstub: 'm0' in the thread list");
	assert_int_equal(gdb_stop_reason(g, &g->last_stop), -EPROTO);
	/* the peer's bytes shown, never sent to a terminal as they are */
	assert_string_equal(g->why, "gdbstub: '\\x1b[2J\\x1b[31mOK' in reply to '?'");
	/* still in step with the stub */
	assert_false(g->broken);
	assert_int_equal(gdb_read_mem(g, 0, 0x1000, mem, 4), 0);
	assert_int_equal(mem[3], 4);
	gdb_close(g);
	fake_server_finish(&s);
	free(g);
}

static int intr_pipe[2];

static void *interrupt_later(void *arg)
{
	struct timespec ts = {0, 100 * 1000 * 1000};

	(void)arg;
	nanosleep(&ts, NULL);
	assert_int_equal(write(intr_pipe[1], "x", 1), 1);
	return NULL;
}

/* A stop (the session's signalfd becoming readable) ends a wait that has no deadline at all, while
 * console packets keep coming. */
static void test_interrupt_ends_endless_wait(void **state)
{
	struct fake_step st[8];
	struct fake_server s;
	struct gdb_stop stop;
	struct timespec t0;
	pthread_t th;
	struct gdb *g;
	size_t n = qemu72_hello(st, "", "+");
	char c;

	(void)state;
	st[n++] = (struct fake_step){pk("+", "vCont;c", ""), "+", pk("", "O6869", ""), 10};
	g = hostile(&s, st, n, 0);
	assert_int_equal(pipe(intr_pipe), 0);
	tcp_set_interrupt(intr_pipe[0]);
	assert_int_equal(gdb_continue(g), 0);
	assert_int_equal(pthread_create(&th, NULL, interrupt_later, NULL), 0);
	watchdog(20);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(gdb_wait_stop(g, -1, &stop), -EINTR);
	print_message("endless wait: interrupted after %.0f ms\n", elapsed_ms(&t0));
	alarm(0);
	pthread_join(th, NULL);
	assert_true(g->running); /* nothing stopped it: the caller decides */
	assert_false(g->broken);
	assert_true(tcp_interrupted());
	assert_int_equal(read(intr_pipe[0], &c, 1), 1);
	assert_false(tcp_interrupted());
	tcp_set_interrupt(-1);
	close(intr_pipe[0]);
	close(intr_pipe[1]);
	gdb_close(g);
	fake_server_finish(&s);
	free(g);
}

/* A command a stop interrupted still gets its reply later: the next command skips it and reads its
 * own. */
static void test_interrupted_command_reply_skipped(void **state)
{
	struct fake_step st[8];
	struct fake_server s;
	struct gdb *g;
	size_t n = qemu72_hello(st, "", "+");
	char c;

	(void)state;
	st[n++] = (struct fake_step){pk("+", "g", ""), ""};
	st[n++] = (struct fake_step){pk("", "Hg1", ""), pk("+", "0011", pk("+", "OK", ""))};
	g = hostile(&s, st, n, FAKE_SERVER_HOLD);
	assert_int_equal(pipe(intr_pipe), 0);
	assert_int_equal(write(intr_pipe[1], "x", 1), 1);
	tcp_set_interrupt(intr_pipe[0]);
	assert_int_equal(gdb_command(g, "g"), -EINTR);
	assert_string_equal(g->why, "gdbstub: interrupted waiting for the reply to 'g'");
	assert_int_equal(g->owed, 1);
	assert_int_equal(read(intr_pipe[0], &c, 1), 1);
	tcp_set_interrupt(-1);
	assert_int_equal(gdb_select_thread(g, 1), 0);
	assert_int_equal(g->owed, 0);
	close(intr_pipe[0]);
	close(intr_pipe[1]);
	gdb_close(g);
	fake_server_finish(&s);
	assert_string_equal(s.tail, "++");
	free(g);
}

/* A connect that would hang (a listener whose backlog is full drops the SYN) ends on a stop. */
static void test_connect_interrupted(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), c[4], p[2];
	struct gdb *g = new_gdb();
	char err[128], want[128];

	(void)state;
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 0), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	/* fill the accept queue with connections nobody accepts */
	for (int i = 0; i < 4; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(c[i], (struct sockaddr *)&a, sizeof(a));
	}
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	tcp_set_interrupt(p[0]);
	alarm(20);
	assert_int_equal(gdb_connect(g, "127.0.0.1", ntohs(a.sin_port), err, sizeof(err)), -EINTR);
	alarm(0);
	tcp_set_interrupt(-1);
	snprintf(want, sizeof(want), "gdbstub 127.0.0.1:%d: connect: Interrupted system call",
		 ntohs(a.sin_port));
	assert_string_equal(err, want);
	assert_int_equal(g->fd, -1);
	for (int i = 0; i < 4; i++)
		close(c[i]);
	close(l);
	close(p[0]);
	close(p[1]);
	free(g);
}

static unsigned polls;

static bool stop_after_many(void *ctx)
{
	(void)ctx;
	return ++polls > 100;
}

/* The target over such a stub: a stop of a thread that is no vCPU ends the run with an error that
 * says so (it used to be taken for vCPU 0's). */
static void test_target_stop_of_unknown_thread(void **state)
{
	struct fake_step st[12];
	struct fake_server s;
	struct target_qemu *q = calloc(1, sizeof(*q));
	struct gdb *g;
	char err[256];
	size_t n = qemu72_hello(st, "", "+");

	(void)state;
	st[n++] = (struct fake_step){pk("+", "qfThreadInfo", ""), pk("+", "m01,02", "")};
	st[n++] = (struct fake_step){pk("+", "qsThreadInfo", ""), pk("+", "l", "")};
	st[n++] = (struct fake_step){pk("+", "qXfer:features:read:target.xml:0,ffb", ""),
				     pk("+", "l<target><architecture>i386:x86-64</architecture></target>", "")};
	st[n++] = (struct fake_step){pk("+", "Qqemu.PhyMemMode:1", ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "vCont;c", ""), pk("+", "T05thread:09;", "")};
	g = hostile(&s, st, n, FAKE_SERVER_HOLD);
	assert_non_null(q);
	assert_int_equal(target_qemu_init(q, g, getpid(), NULL, NULL, NULL, true, err, sizeof(err)), 0);
	assert_int_equal(q->t.nr_cpus, 2);
	polls = 0;
	watchdog(20);
	assert_int_equal(target_qemu_run(q, stop_after_many, NULL), QEMU_RUN_ERROR);
	alarm(0);
	assert_string_equal(q->err, "gdbstub: a stop of thread 9, which is no vCPU of this VM (2 "
				    "threads)");
	target_qemu_close(q);
	gdb_close(g);
	fake_server_finish(&s);
	free(g);
	free(q);
}

/* ---- the trap-probe hit path of target_qemu over a scripted stub ---------------------------- */

#define HIT_RIP 0x401000ull /* PML4 0, PDPT 0, PD 2, PT 1 under CR3 0x1000: code at 0x5000 */

static unsigned hit_calls;
static uint64_t hit_at_min, hit_at_max; /* the hits' at_ns: when the stops came */

/* The tracer's part of a hit on a function entry: emulate the NOP5 (RIP + 5). Each hit is handed
 * the time its stop came (at_ns), read before the register round trip: never 0, never later than
 * now. */
static int emulate_nop5(void *ctx, unsigned cpu, uint64_t addr, struct arch_regs *regs,
			uint64_t at_ns)
{
	(void)ctx, (void)cpu;
	if (addr != HIT_RIP)
		return -ENOENT;
	assert_true(at_ns != 0 && at_ns <= clock_now_ns());
	hit_at_min = hit_at_min && hit_at_min < at_ns ? hit_at_min : at_ns;
	hit_at_max = hit_at_max > at_ns ? hit_at_max : at_ns;
	hit_calls++;
	regs->r[X86_RIP] = addr + 5;
	return 0;
}

static unsigned run_polls;

/* target_qemu_run polls before each wait and again at each stop: three stops handled, then the
 * seventh poll ends the run. */
static bool stop_on_seventh_poll(void *ctx)
{
	(void)ctx;
	return ++run_polls >= 7;
}


/* The page walk of HIT_RIP through the gdbstub (physical mode), then its 5 code bytes @code. */
static size_t walk_steps(struct fake_step *st, const char *code)
{
	size_t n = 0;

	st[n++] = (struct fake_step){pk("+", "m1000,8", ""), pk("+", "0720000000000000", "")};
	st[n++] = (struct fake_step){pk("+", "m2000,8", ""), pk("+", "0730000000000000", "")};
	st[n++] = (struct fake_step){pk("+", "m3010,8", ""), pk("+", "0740000000000000", "")};
	st[n++] = (struct fake_step){pk("+", "m4008,8", ""), pk("+", "0750000000000000", "")};
	st[n++] = (struct fake_step){pk("+", "m5000,5", ""), pk("+", code, "")};
	return n;
}

/* Three hits on a function entry: the first RIP write is a plain P (P not known to work yet), then
 * P and vCont;c go out together (the stub answers only once it has both: had the client waited for
 * P's OK first, the run would time out); no Hg after any debug stop (QEMU made the stopping vCPU
 * the register thread); the third hit's bytes are a CALL, not the NOP5: the emulation is refused
 * and that vCPU steps the real instruction instead (each hit handed when its stop came): under TCG (@tcg) with the breakpoint left in
 * (a step ignores it), else (KVM, or QEMU did not say) with it taken out for the step and put
 * back, as its INT3 would trap again. */
static void hits_pipelined_nop5_checked(bool tcg)
{
	char g[1300], g_after[1300], set_pc[64], rip_hex[20], bp[48];
	struct fake_step st[48];
	struct fake_server s;
	struct target_qemu *q = calloc(1, sizeof(*q));
	struct gdb *gdb;
	char err[256];
	size_t n = qemu72_hello(st, "", "+");
	uint64_t t0;

	build_g(g, "");
	put_le(rip_hex, HIT_RIP, 8);
	memcpy(g + hexoff(X86_GDB_RIP), rip_hex, 16);
	put_le(rip_hex, 0x1000, 8);
	memcpy(g + hexoff(X86_GDB_CR3), rip_hex, 16);
	put_le(rip_hex, 0x20, 8); /* PAE, no LA57 */
	memcpy(g + hexoff(X86_GDB_CR4), rip_hex, 16);
	put_le(rip_hex, HIT_RIP + 5, 8);
	snprintf(set_pc, sizeof(set_pc), "P10=%s", rip_hex);
	memcpy(g_after, g, sizeof(g));
	memcpy(g_after + hexoff(X86_GDB_RIP), rip_hex, 16);

	st[n++] = (struct fake_step){pk("+", "qfThreadInfo", ""), pk("+", "m01,02", "")};
	st[n++] = (struct fake_step){pk("+", "qsThreadInfo", ""), pk("+", "l", "")};
	st[n++] = (struct fake_step){pk("+", "qXfer:features:read:target.xml:0,ffb", ""),
				     pk("+", "l<target><architecture>i386:x86-64</architecture></target>", "")};
	st[n++] = (struct fake_step){pk("+", "Qqemu.PhyMemMode:1", ""), pk("+", "OK", "")};
	/* hit 1, vCPU 0 */
	st[n++] = (struct fake_step){pk("+", "vCont;c", ""), pk("+", "T05thread:01;", "")};
	st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", g, "")};
	n += walk_steps(st + n, "0f1f440000");
	st[n++] = (struct fake_step){pk("+", set_pc, ""), pk("+", "OK", "")};
	/* hit 2, vCPU 0 again */
	st[n++] = (struct fake_step){pk("+", "vCont;c", ""), pk("+", "T05thread:01;", "")};
	st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", g, "")};
	n += walk_steps(st + n, "0f1f440000");
	/* hit 3, vCPU 1: its RIP moved with the continue of hit 2, no round trip between */
	st[n++] = (struct fake_step){pk("+", set_pc, pk("", "vCont;c", "")),
				     pk("+", "OK", pk("+", "T05thread:02;", ""))};
	st[n++] = (struct fake_step){pk("++", "g", ""), pk("+", g, "")};
	n += walk_steps(st + n, "e8fbffffff");
	snprintf(bp, sizeof(bp), "z0,%llx,1", (unsigned long long)HIT_RIP);
	if (!tcg)
		st[n++] = (struct fake_step){pk("+", bp, ""), pk("+", "OK", "")};
	st[n++] = (struct fake_step){pk("+", "vCont;s:2", ""), pk("+", "T05thread:02;", "")};
	if (!tcg) {
		bp[0] = 'Z';
		st[n++] = (struct fake_step){pk("+", bp, ""), pk("+", "OK", "")};
	}
	/* where the step left the vCPU: past the instruction */
	st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", g_after, "")};
	assert_true(n <= FAKE_NSTEPS(st));

	gdb = hostile(&s, st, n, FAKE_SERVER_HOLD);
	assert_non_null(q);
	assert_int_equal(target_qemu_init(q, gdb, getpid(), NULL, NULL, NULL, true, err, sizeof(err)), 0);
	target_qemu_set_tcg(q, tcg);
	q->t.ops->set_bp_handler(&q->t, emulate_nop5, NULL);
	hit_calls = run_polls = 0;
	hit_at_min = hit_at_max = 0;
	watchdog(20);
	t0 = clock_now_ns();
	if (target_qemu_run(q, stop_on_seventh_poll, NULL) != QEMU_RUN_STOP_ASKED)
		fail_msg("run: %s (hits %u, polls %u)", q->err, hit_calls, run_polls);
	alarm(0);
	assert_int_equal(hit_calls, 3);
	assert_true(hit_at_min >= t0 && hit_at_max >= hit_at_min);
	assert_int_equal(q->hits, 3);
	assert_int_equal(q->stops, 3);
	assert_int_equal(q->nop5_refused, 1);
	assert_true(q->vm.stopped);
	target_qemu_close(q);
	gdb_close(gdb);
	fake_server_finish(&s);
	assert_string_equal(s.tail, "+"); /* the ack of the register reply, at close */
	free(gdb);
	free(q);
}

/* The tracer's part of a hit on an entry probe: RIP stays, the instruction there runs in place. */
static int in_place(void *ctx, unsigned cpu, uint64_t addr, struct arch_regs *regs, uint64_t at_ns)
{
	(void)ctx, (void)cpu, (void)regs, (void)at_ns;
	if (addr != HIT_RIP)
		return -ENOENT;
	hit_calls++;
	return TARGET_BP_IN_PLACE;
}

/* The tracer's part of a trampoline hit that pops a tail call's second frame: RIP stays on the
 * breakpoint, which is to be executed (and hit) again, not stepped over. */
static int hit_again(void *ctx, unsigned cpu, uint64_t addr, struct arch_regs *regs,
		     uint64_t at_ns)
{
	(void)ctx, (void)cpu, (void)regs, (void)at_ns;
	if (addr != HIT_RIP)
		return -ENOENT;
	hit_calls++;
	return 0;
}



static unsigned stop_polls; /* stop_after_polls ends a run at this poll */

static bool stop_after_polls(void *ctx)
{
	(void)ctx;
	return ++run_polls >= stop_polls;
}

/* @hits stops of one vCPU on HIT_RIP, each handed to @cb, which leaves RIP there. After each,
 * with @step, that vCPU steps the instruction at once, no register written, no NOP5 looked for
 * (under KVM, !@tcg, with the breakpoint out for the step); without, the VM simply continues. */
static void hits_leaving_rip_ending(target_bp_fn cb, bool tcg, unsigned hits, bool step,
				   bool end_at_last);

static void hits_leaving_rip(target_bp_fn cb, bool tcg, unsigned hits, bool step)
{
	hits_leaving_rip_ending(cb, tcg, hits, step, false);
}

/* Steps of the first hit that QEMU reports done with the vCPU still on HIT_RIP (seen with QEMU 7.2
 * under TCG on a loaded host): each is taken again. */
static unsigned stalled_steps;

/* ... and with @end_at_last, the run is asked to end at the last stop (a guest reset seen
 * meanwhile): that stop is left unhandled, its registers not even read. After each step the
 * vCPU's registers are read: RIP past the instruction, or still on it for a stalled step. */
static void hits_leaving_rip_ending(target_bp_fn cb, bool tcg, unsigned hits, bool step,
				   bool end_at_last)
{
	char g[1300], g_after[1300], rip_hex[20], bp[48];
	struct fake_step st[48];
	struct fake_server s;
	struct target_qemu *q = calloc(1, sizeof(*q));
	struct gdb *gdb;
	char err[256];
	size_t n = qemu72_hello(st, "", "+");

	build_g(g, "");
	put_le(rip_hex, HIT_RIP, 8);
	memcpy(g + hexoff(X86_GDB_RIP), rip_hex, 16);
	memcpy(g_after, g, sizeof(g));
	put_le(rip_hex, HIT_RIP + 1, 8); /* PUSH RBP stepped */
	memcpy(g_after + hexoff(X86_GDB_RIP), rip_hex, 16);
	st[n++] = (struct fake_step){pk("+", "qfThreadInfo", ""), pk("+", "m01", "")};
	st[n++] = (struct fake_step){pk("+", "qsThreadInfo", ""), pk("+", "l", "")};
	st[n++] = (struct fake_step){pk("+", "qXfer:features:read:target.xml:0,ffb", ""),
				     pk("+", "l<target><architecture>i386:x86-64</architecture></target>", "")};
	st[n++] = (struct fake_step){pk("+", "Qqemu.PhyMemMode:1", ""), pk("+", "OK", "")};
	for (unsigned h = 0; h < hits; h++) {
		st[n++] = (struct fake_step){pk("+", "vCont;c", ""), pk("+", "T05thread:01;", "")};
		if (end_at_last && h == hits - 1)
			break;
		st[n++] = (struct fake_step){pk("+", "g", ""), pk("+", g, "")};
		if (!step)
			continue;
		for (unsigned k = 0; k <= (h ? 0 : stalled_steps); k++) {
			snprintf(bp, sizeof(bp), "z0,%llx,1", (unsigned long long)HIT_RIP);
			if (!tcg)
				st[n++] = (struct fake_step){pk("+", bp, ""), pk("+", "OK", "")};
			st[n++] = (struct fake_step){pk("+", "vCont;s:1", ""),
						     pk("+", "T05thread:01;", "")};
			bp[0] = 'Z';
			if (!tcg)
				st[n++] = (struct fake_step){pk("+", bp, ""), pk("+", "OK", "")};
			st[n++] = (struct fake_step){
			    pk("+", "g", ""),
			    pk("+", k < (h ? 0 : stalled_steps) ? g : g_after, "")};
		}
	}
	assert_true(n <= FAKE_NSTEPS(st));

	gdb = hostile(&s, st, n, FAKE_SERVER_HOLD);
	assert_non_null(q);
	assert_int_equal(target_qemu_init(q, gdb, getpid(), NULL, NULL, NULL, true, err, sizeof(err)), 0);
	target_qemu_set_tcg(q, tcg);
	q->t.ops->set_bp_handler(&q->t, cb, NULL);
	hit_calls = run_polls = 0;
	stop_polls = 2 * hits + (end_at_last ? 0 : 1); /* a poll before each wait, one at each stop */
	watchdog(20);
	if (target_qemu_run(q, stop_after_polls, NULL) != QEMU_RUN_STOP_ASKED)
		fail_msg("run: %s (hits %u, polls %u)", q->err, hit_calls, run_polls);
	alarm(0);
	assert_int_equal(hit_calls, hits - end_at_last);
	assert_int_equal(q->hits, hits - end_at_last);
	assert_int_equal(q->nop5_refused, 0);
	assert_int_equal(q->steps_again, step && hits > end_at_last ? stalled_steps : 0);
	assert_true(q->vm.stopped);
	target_qemu_close(q);
	gdb_close(gdb);
	fake_server_finish(&s);
	free(gdb);
	free(q);
}

/* Two hits, the run asked to end at the second stop: it is not handled. */
static void test_target_end_asked_at_stop(void **state)
{
	(void)state;
	hits_leaving_rip_ending(in_place, true, 2, true, true);
}

/* An entry probe's hit: the instruction under it is stepped, under TCG and under KVM. */
static void test_target_hit_in_place_tcg(void **state)
{
	(void)state;
	hits_leaving_rip(in_place, true, 1, true);
}

static void test_target_hit_in_place_kvm(void **state)
{
	(void)state;
	hits_leaving_rip(in_place, false, 1, true);
}

/* The step over an entry probe's instruction reported done with the vCPU still on it: stepped
 * again (twice here), so that the next continue does not hit the same breakpoint for the same
 * execution; the next hit's step goes through at once. */
static void test_target_hit_in_place_step_stalled(void **state)
{
	(void)state;
	stalled_steps = 2;
	hits_leaving_rip(in_place, true, 2, true);
	hits_leaving_rip(in_place, false, 2, true);
	stalled_steps = 0;
}

/* A hit whose callback leaves RIP on the breakpoint and returns 0 (the trampoline's tail-call
 * case): the VM simply continues there and hits it again, no step (a step would run the RET under
 * the trampoline and return through whatever the stack holds next). */
static void test_target_hit_again_no_step(void **state)
{
	(void)state;
	hits_leaving_rip(hit_again, true, 2, false);
}

static void test_target_hits_pipelined_nop5_checked(void **state)
{
	(void)state;
	hits_pipelined_nop5_checked(true);
}

static void test_target_hits_pipelined_nop5_checked_kvm(void **state)
{
	(void)state;
	hits_pipelined_nop5_checked(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame_checksum),
	    cmocka_unit_test(test_frame_escapes),
	    cmocka_unit_test(test_frame_roundtrip_all_bytes),
	    cmocka_unit_test(test_unframe_plain),
	    cmocka_unit_test(test_unframe_run_length),
	    cmocka_unit_test(test_parse_stop),
	    cmocka_unit_test(test_decode_qemu_reset),
	    cmocka_unit_test(test_decode_layout),
	    cmocka_unit_test(test_decode_errors),
	    cmocka_unit_test(test_reg_size),
	    cmocka_unit_test(test_session_qemu72),
	    cmocka_unit_test(test_noack_mode),
	    cmocka_unit_test(test_resend_console_unasked_stop),
	    cmocka_unit_test(test_write_reg_g_fallback),
	    cmocka_unit_test(test_memory_chunks),
	    cmocka_unit_test(test_execution),
	    cmocka_unit_test(test_bp_thread),
	    cmocka_unit_test(test_interrupt_alone_while_running),
	    cmocka_unit_test(test_connection_lost),
	    cmocka_unit_test(test_connect_refused),
	    cmocka_unit_test(test_negotiation_fails),
	    cmocka_unit_test(test_hostile_replies),
	    cmocka_unit_test(test_hostile_lies),
	    cmocka_unit_test(test_interrupt_ends_endless_wait),
	    cmocka_unit_test(test_interrupted_command_reply_skipped),
	    cmocka_unit_test(test_target_stop_of_unknown_thread),
	    cmocka_unit_test(test_target_hits_pipelined_nop5_checked),
	    cmocka_unit_test(test_target_hits_pipelined_nop5_checked_kvm),
	    cmocka_unit_test(test_target_hit_in_place_tcg),
	    cmocka_unit_test(test_target_end_asked_at_stop),
	    cmocka_unit_test(test_target_hit_in_place_kvm),
	    cmocka_unit_test(test_target_hit_in_place_step_stalled),
	    cmocka_unit_test(test_target_hit_again_no_step),
	    cmocka_unit_test(test_connect_interrupted),
	};

	signal(SIGPIPE, SIG_IGN);
	if (getenv("HVT_TEST_FILTER")) /* e.g. HVT_TEST_FILTER='test_hostile*' */
		cmocka_set_test_filter(getenv("HVT_TEST_FILTER"));
	return cmocka_run_group_tests_name("gdbstub", tests, NULL, free_pool);
}
