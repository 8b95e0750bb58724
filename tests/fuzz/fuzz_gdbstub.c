/* libFuzzer harness for the gdbstub client: what a (hostile) stub sends. The input is a script, one
 * piece per line: a line starting with '!' goes out raw (bad checksums, run lengths, escapes,
 * acks), any other line is framed as a packet with its right checksum, so the fuzzer reaches every
 * reply of the handshake and of the commands. First the pure decoders get the raw input
 * (gdb_packet_unframe on it, then gdb_packet_parse_stop and gdb_packet_decode_regs on each decoded payload); then the
 * whole client talks to the script over a socketpair: connect, threads, registers, memory,
 * breakpoints, run (also a RIP write pipelined with the continue), detach. */
#include "host/vmm/gdbstub.h"
#include "tests/fuzz/fuzz_peer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The decoders on the input as received bytes. */
static void decode(const uint8_t *data, size_t size)
{
	static char pkt[GDB_MAX_PACKET + 1];
	const char *in = (const char *)data;
	size_t pos = 0;

	while (pos < size) {
		const char *d = memchr(in + pos, '$', size - pos);
		size_t len, used;
		int rc;

		if (!d)
			break;
		pos = (size_t)(d - in);
		rc = gdb_packet_unframe(in + pos, size - pos, pkt, sizeof(pkt), &len, &used);
		if (rc == -EAGAIN || used == 0) {
			pos++;
			continue;
		}
		pos += used;
		if (rc == 0) {
			struct gdb_stop st;
			struct gdb_regs r;

			if (len > GDB_MAX_PACKET || pkt[len] != 0)
				abort(); /* the payload fits and is terminated */
			gdb_packet_parse_stop(pkt, &st);
			gdb_packet_decode_regs(&x86_gdb_layout, pkt, len, &r);
		}
	}
}

/* The script turned into the bytes the stub sends. Returns their length in @out. */
static size_t script(const uint8_t *data, size_t size, char *out, size_t cap)
{
	size_t o = 0, i = 0;

	while (i < size) {
		const uint8_t *nl = memchr(data + i, '\n', size - i);
		size_t n = nl ? (size_t)(nl - (data + i)) : size - i;

		if (n && data[i] == '!') {
			if (o + n - 1 > cap)
				break;
			memcpy(out + o, data + i + 1, n - 1);
			o += n - 1;
		} else {
			ssize_t f = gdb_packet_frame(data + i, n, out + o, cap - o);

			if (f < 0)
				break;
			o += (size_t)f;
		}
		i += n + 1;
	}
	return o;
}

/* A session against the script, as target_qemu uses the client. */
static void session(int fd)
{
	struct gdb g;
	struct gdb_regs r;
	struct gdb_stop st;
	char err[256];
	uint8_t mem[300];
	int tids[8];
	unsigned nr = 0;

	if (gdb_attach_fd(&g, fd, err, sizeof(err)) < 0)
		return;
	g.timeout_ms = 0; /* everything is sent already: never wait */
	gdb_threads(&g, tids, 8, &nr);
	if (nr > 8)
		abort();
	gdb_read_regs(&g, nr ? tids[0] : 1, &r);
	gdb_write_reg(&g, 1, X86_GDB_RIP, 0xffffffff81000000ull);
	gdb_read_mem(&g, 1, 0xffffffff81000000ull, mem, sizeof(mem));
	gdb_set_phys_mode(&g, true);
	gdb_write_mem(&g, 0, 0x1000, mem, 16);
	gdb_insert_bp(&g, 0xffffffff81000010ull);
	gdb_step(&g, 2, &st);
	if (gdb_continue(&g) == 0)
		gdb_wait_stop(&g, 0, &st);
	/* a hit's RIP with the continue (P and vCont;c together), as target_qemu resumes */
	gdb_write_pc_continue(&g, st.thread > 0 ? st.thread : 1, 0xffffffff81000015ull);
	if (g.running)
		gdb_wait_stop(&g, 0, &st);
	gdb_interrupt(&g, 0, &st);
	gdb_remove_bp(&g, 0xffffffff81000010ull);
	gdb_stop_reason(&g, &st);
	gdb_detach(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char wire[1 << 17];
	int peer;

	decode(data, size);
	session(fuzz_peer(wire, script(data, size, wire, sizeof(wire)), &peer));
	close(peer);
	return 0;
}
