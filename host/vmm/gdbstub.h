/* Client of QEMU's gdbstub (GDB Remote Serial Protocol over TCP) for x86_64 system emulation: vCPU
 * threads, registers, guest memory (virtual or physical), Z0 breakpoints, continue/step/interrupt.
 * All-stop mode only. One struct gdb is one connection; it is not thread-safe: one thread at a
 * time.
 *
 * The stub is a peer, not trusted: every command has one deadline (g->timeout_ms) whatever arrives
 * meanwhile, puts up with at most GDB_MAX_SKIPPED packets that are not its reply, and checks the
 * reply's shape; every wait also ends at once with -EINTR on a stop (tcp_set_interrupt). A failure
 * leaves one line in g->why. */
#ifndef HVT_GDBSTUB_H
#define HVT_GDBSTUB_H

#include "host/vmm/gdb_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- connection (the thread owning @g) ------------------------------------------------------ */

/* Connects to host:port with TCP_NODELAY and negotiates (qSupported, QStartNoAckMode, vCont?, and
 * target.xml, which QEMU requires before it answers p/P). QEMU stops the VM when a debugger
 * connects. Returns 0 or a negative errno with a one-line reason in @err; on failure nothing needs
 * closing. */
int gdb_connect(struct gdb *g, const char *host, int port, char *err, size_t errlen);

/* Same negotiation over an already connected stream @fd, which @g takes over (closed on failure).
 */
int gdb_attach_fd(struct gdb *g, int fd, char *err, size_t errlen);

/* Sends `D` (QEMU then removes every breakpoint and resumes the VM) and closes. 0 or -errno; the
 * connection is closed in every case. */
int gdb_detach(struct gdb *g);

/* Closes without detaching (QEMU also drops its gdb breakpoints when the connection goes). */
void gdb_close(struct gdb *g);

/* Sends @cmd and reads its reply into g->pkt (console `O` packets and unasked stop replies skipped,
 * GDB_MAX_SKIPPED at most), all before one deadline. Replies "E NN" are returned as -EIO with
 * g->last_error = NN. -EBUSY while the VM runs (in QEMU any byte received then stops the VM),
 * -ETIMEDOUT (no reply in time: the connection is then broken), -EINTR (a stop: the reply is
 * skipped when it comes), -ECONNABORTED once broken, -ECONNRESET, -EPROTO; g->why says which. */
int gdb_command(struct gdb *g, const char *cmd);

/* ---- threads and registers (VM stopped) ------------------------------------------------------ */

/* Lists the vCPU thread ids (QEMU: 1..N) into @tids. 0, -ENOSPC if more than @max, -EPROTO for an
 * id that is not positive or comes twice, or -errno. */
int gdb_threads(struct gdb *g, int *tids, unsigned max, unsigned *nr);

/* Makes @tid the thread for registers and virtual memory (`Hg`, skipped when already selected). */
int gdb_select_thread(struct gdb *g, int tid);

/* Reads all registers of thread @tid. 0, -EPROTO for a reply shorter than its layout's
 * decoded_bytes or not hex, or -errno. */
int gdb_read_regs(struct gdb *g, int tid, struct gdb_regs *r);

/* Reads register @regno (of 1 to 8 bytes) of thread @tid with `p` into *@v. 0, -EPROTO for a reply
 * that is no such value, or -errno. */
int gdb_read_reg(struct gdb *g, int tid, unsigned regno, uint64_t *v);

/* Writes register @regno (enum gdb_reg) of thread @tid: `P`, or read-modify-write `g`/`G` when the
 * stub refuses P. 0, -EINVAL for an unknown regno, or -errno. */
int gdb_write_reg(struct gdb *g, int tid, unsigned regno, uint64_t value);

/* ---- memory (VM stopped) --------------------------------------------------------------------- */

/* Reads/writes guest memory through thread @tid's page tables (@tid <= 0: the selected thread), or
 * physical memory after gdb_set_phys_mode(g, true). Chunked to the stub's PacketSize. 0, -EFAULT
 * when the stub refuses an address (g->last_error says why), or -errno. */
int gdb_read_mem(struct gdb *g, int tid, uint64_t addr, void *buf, size_t len);
int gdb_write_mem(struct gdb *g, int tid, uint64_t addr, const void *buf, size_t len);

/* Switches QEMU's memory accesses to physical (true) or virtual addresses (qemu.PhyMemMode). 0,
 * -ENOTSUP when the stub does not know the packet, or -errno. */
int gdb_set_phys_mode(struct gdb *g, bool phys);

/* ---- breakpoints and execution --------------------------------------------------------------- */

/* Inserts/removes a software breakpoint (Z0/z0, kind 1) at virtual address @addr. QEMU owns it (its
 * TCG/KVM breakpoint, guest memory untouched under TCG) and drops it when the connection goes.
 * Continuing from a breakpoint's own address hits it again at once: step first. 0, -ENOTSUP, -EIO.
 */
int gdb_insert_bp(struct gdb *g, uint64_t addr);
int gdb_remove_bp(struct gdb *g, uint64_t addr);

/* Makes thread @tid QEMU's current CPU (`Hc`, c_cpu), the one its gdbstub inserts and removes
 * breakpoints through: under KVM QEMU writes the INT3 through that vCPU's page tables, so a vCPU
 * not started yet (paging off) answers E22. Nothing sent when @tid is it already (the last Hc, or
 * the thread the last stop reply named: QEMU stops on c_cpu). The VM stopped. 0 or -errno. */
int gdb_select_bp_thread(struct gdb *g, int tid);

/* Lets every vCPU run (`vCont;c` or `c`). No reply: wait with gdb_wait_stop. 0 or -errno. */
int gdb_continue(struct gdb *g);

/* Writes @pc into thread @tid's RIP and lets every vCPU run: `P` and `vCont;c` go out back to back
 * in one segment (no round trip between them), then P's reply is read (it comes before any stop
 * reply). Pipelined only once P is known to work and @tid is the selected thread (as after its own
 * debug stop); else gdb_write_reg then gdb_continue. Whenever the continue went out the VM runs
 * (g->running), also when P's reply is an error. 0 or -errno; wait with gdb_wait_stop. */
int gdb_write_pc_continue(struct gdb *g, int tid, uint64_t pc);

/* Single-steps thread @tid only (`vCont;s:tid`; a step ignores a breakpoint at RIP) and waits up to
 * g->timeout_ms for its stop reply into @st. 0 or -errno. */
int gdb_step(struct gdb *g, int tid, struct gdb_stop *st);

/* Waits up to @timeout_ms (< 0: until a stop, tcp_set_interrupt) for the stop reply of a running
 * VM; after a debug stop (T05 naming a thread) that thread is the selected one (no Hg needed). 0
 * with @st filled (also for W/X: the VM process is gone), -ETIMEDOUT (still running), -EINTR (a
 * stop), -EINVAL when not running, -EPROTO for a packet that is no stop reply, -errno. */
int gdb_wait_stop(struct gdb *g, int timeout_ms, struct gdb_stop *st);

/* Stops a running VM (byte 0x03) and waits up to @timeout_ms for the stop reply, which may also be
 * a breakpoint hit that raced with it. When the VM is already stopped, returns 0 and the last stop.
 */
int gdb_interrupt(struct gdb *g, int timeout_ms, struct gdb_stop *st);

/* Asks why the VM is stopped (`?`). 0 or -errno. */
int gdb_stop_reason(struct gdb *g, struct gdb_stop *st);

#endif
