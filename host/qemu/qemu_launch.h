/* Starting a QEMU for `hvtrace run --qemu`: the command line, the process, and its serial console
 * (forwarded to a FILE by a thread that also watches for a kernel panic). */
#ifndef HVT_QEMU_LAUNCH_H
#define HVT_QEMU_LAUNCH_H

#include <pthread.h>
#include <stdatomic.h>
#include "arch/arch.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct qemu_launch_cfg {
	const char *binary; /* default qemu_launch_binary(isa) */
	const struct arch *isa; /* the guest's (arm64: -M virt, console ttyAMA0); NULL: x86_64 */
	const char *accel;  /* "tcg" (default) or "kvm" */
	const char *machine; /* -M: "pc" (default) or "q35"; arm64: "virt" */
	const char *kernel, *initrd, *append;
	unsigned smp, mem_mb;
	const char *qmp_path; /* unix socket QEMU listens on (NULL: in a private directory of its
			       * own, qemu_proc's run_dir) */
	int nice; /* QEMU runs this much nicer than hvtrace (stub probes: the drain and the writer
		   * go first, so a busy host slows the guest rather than letting its rings
		   * overflow) */
	/* -no-shutdown: a guest that powers off leaves QEMU running, the VM stopped, until it is
	 * told to quit (the stub's counting tables are read after the guest's end) */
	bool no_shutdown;
	uint64_t reserve_gpa,
	    reserve_size;     /* nonzero: memmap=SIZE$ADDR on the kernel command line
			       * (qemu_launch_reserve), RAM the kernel keeps out of use */
	FILE *console;	      /* serial console goes here; borrowed */
};

struct qemu_proc {
	pid_t pid;
	int console_fd; /* read end of QEMU's stdout (serial) */
	int err_fd;	/* read end of QEMU's stderr */
	pthread_t console_thread;
	bool console_running;
	FILE *console;
	int console_err;   /* errno of the first failed console write, 0 none (console thread) */
	atomic_bool panic; /* "Kernel panic" seen on the console */
	char err_text[512]; /* the start of what QEMU wrote to stderr */
	/* the run-time directory (mode 0700, under $TMPDIR or /tmp) holding QEMU's QMP socket, ""
	 * none; removed, socket and all, once QEMU is reaped or could not start */
	char run_dir[96];
	char qmp_path[108]; /* the socket QEMU listens on: @cfg's, or "run_dir/qmp.sock" (sun_path) */
};

/* The QEMU `run --qemu` starts for a guest of ISA @isa (NULL: x86_64): $HVTRACE_QEMU (arm64:
 * $HVTRACE_QEMU_AARCH64; a path, or a name looked up in $PATH) when set and not empty, else
 * qemu-system-x86_64 (qemu-system-aarch64) from $PATH. */
const char *qemu_launch_binary(const struct arch *isa);

/* Whether the QEMU @binary is, by its name, the system emulator of another ISA than @isa
 * (qemu-system-x86_64 for an arm64 guest, or the reverse): its name then into @other. A name that
 * says nothing (a wrapper called "qemu") passes. Pure. */
bool qemu_launch_other_isa(const char *binary, const struct arch *isa, char *other, size_t len);

/* Builds the argv for @cfg into @argv (at most @max entries, NULL-terminated; strings are static or
 * point into @buf). Returns the number of arguments or -E2BIG. Pure but for $HVTRACE_QEMU (for tests). */
int qemu_launch_argv(const struct qemu_launch_cfg *cfg, const char **argv, int max, char *buf,
		     size_t buflen);

/* The granule of the RAM the stub's range is reserved in for a guest of @cfg: the span of a
 * level-2 block of the arm64 kernel's page size, which its Image header gives (2 MiB for 4 KiB
 * pages or a size the header leaves unspecified, 32 MiB for 16 KiB, 512 MiB for 64 KiB); 2 MiB
 * (a PMD) for x86. Reads the head of cfg->kernel; any thread. */
uint64_t qemu_launch_block_span(const struct qemu_launch_cfg *cfg);

/* Where @size bytes (a multiple of 2 MiB; arm64: of qemu_launch_block_span) of guest RAM can be reserved for hvtrace by memmap=, so
 * that nothing before the kernel proper reads that kernel parameter writes there either: below the
 * RAM under 4 GiB (either machine type), below where QEMU loads the initrd (the top of that RAM,
 * less its ACPI room) with 2 MiB to spare, and above where the decompressor puts the kernel without
 * KASLR (16 MiB + the bzImage's init_size; KASLR itself avoids memmap= ranges). Reads the kernel's
 * header and the initrd's size. 0 with *@gpa (2 MiB aligned; arm64: at the top of the RAM, aligned
 * to qemu_launch_block_span), or -errno with the reason in @why. */
int qemu_launch_reserve(const struct qemu_launch_cfg *cfg, uint64_t size, uint64_t *gpa, char *why,
			size_t whylen);

/* Starts QEMU and the console thread, then waits (up to 10 s) for the QMP socket (p->qmp_path: a
 * private directory's when @cfg names none). Returns 0, or a negative errno with a reason in @err
 * (-ENOENT: no QEMU binary; -EIO: QEMU exited, with its message); nothing is left on failure. */
int qemu_launch(const struct qemu_launch_cfg *cfg, struct qemu_proc *p, char *err, size_t errlen);

/* Waits up to @timeout_ms for QEMU to exit. Returns its exit status (>= 0), 128 + signal, or -ETIMEDOUT.
 * The console thread is joined when QEMU has exited. */
int qemu_proc_wait(struct qemu_proc *p, int timeout_ms);

/* Removes @p's run-time directory and what QEMU left in it (its socket), if there is one (reaped
 * and failed launches do; the guardian calls it for a QEMU it cannot reap). Idempotent. */
void qemu_proc_remove_run_dir(struct qemu_proc *p);

/* Kills QEMU (SIGKILL) if it still runs and reaps it; its run-time directory is removed. (A QEMU
 * with a monitor is asked to quit first: qemu_attach_end.) */
void qemu_proc_kill(struct qemu_proc *p);

/* Where QEMU's arm64 `virt` machine puts RAM (its memory map: RAM from 1 GiB). */
#define QEMU_VIRT_RAM_BASE 0x40000000ull

#endif
