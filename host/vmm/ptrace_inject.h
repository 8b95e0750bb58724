/* A system call made by another process's own thread (VMSH's method: KVM answers a vCPU's ioctls
 * only from the VM's process): every thread of the process seized and interrupted by ptrace, one
 * thread's registers saved, the call run there (at a `syscall` instruction of the process's own
 * text), its result read, the thread put back exactly as it was (registers, FPU state, the bytes
 * of any scratch memory used), every thread let go. x86_64 hosts. Every wait has a deadline; a
 * process that exits, a ptrace refusal, a seccomp refusal is one line in the caller's buffer. */
#ifndef HVT_PTRACE_INJECT_H
#define HVT_PTRACE_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define PTRACE_INJECT_MAX_THREADS 4096 /* threads of the process held at most */
#define PTRACE_INJECT_SCRATCH_MAX 4096 /* bytes of scratch memory on the thread's stack */
#define PTRACE_INJECT_RED_ZONE	  128  /* the x86_64 ABI's red zone below RSP, left alone */
#define PTRACE_INJECT_TIMEOUT_MS  2000 /* the default deadline of each wait */

struct ptrace_inject_thread {
	pid_t tid;
	bool stopped; /* in a ptrace stop of ours */
	int sig;      /* a signal it was stopped with, delivered again at the detach */
};

struct ptrace_inject {
	pid_t pid;
	int timeout_ms;
	int mem_fd; /* /proc/PID/mem, -1: closed */
	unsigned nr;
	struct ptrace_inject_thread thr[PTRACE_INJECT_MAX_THREADS];
	/* the chosen thread */
	pid_t tid;
	bool have_saved;
	struct user_regs_struct saved;
	struct user_fpregs_struct saved_fp;
	uint64_t syscall_at; /* a `syscall` instruction (0f 05) in the process's text */
	uint64_t scratch;    /* scratch memory on its stack, 0: none */
	size_t scratch_len;
	uint8_t scratch_saved[PTRACE_INJECT_SCRATCH_MAX];
	unsigned injected; /* syscalls injected */
	/* false (the default): each call is first run through the thread's seccomp filters
	 * (seccomp_check) and not made if they would refuse it; true: made without that look, a
	 * refusal then seen in its result (for tests, and where the filters cannot be read) */
	bool seccomp_unchecked;
};

/* Seizes and interrupts every thread of @pid (threads born meanwhile too), each wait bounded by
 * @timeout_ms (0: PTRACE_INJECT_TIMEOUT_MS). 0 with all of them stopped; else a negative errno
 * with one line in @err and nothing held: -EPERM (another tracer, kernel.yama.ptrace_scope, not
 * privileged), -ESRCH (no such process, or it exited meanwhile), -ETIMEDOUT, -E2BIG (too many
 * threads). @pi is caller-owned (about 5 KiB + 48 KiB of threads). Main thread. */
int ptrace_inject_attach(struct ptrace_inject *pi, pid_t pid, int timeout_ms, char *err,
			 size_t errlen);

/* Chooses thread @tid (one of the process's) for injection: saves its registers and FPU state and
 * finds a `syscall` instruction (the one it stopped after, else one in an executable mapping). 0 or
 * a negative errno with one line. */
int ptrace_inject_select(struct ptrace_inject *pi, pid_t tid, char *err, size_t errlen);

/* Runs syscall @nr(@args) on the chosen thread; its return value (a negative errno included) in
 * *@ret. 0, or a negative errno with one line naming @name: -EPERM when the thread's seccomp
 * filter would refuse it (its filters run on the call first: nothing is injected then, the VMM
 * untouched; where they cannot be read, the call made and a refusal seen in its result: EPERM,
 * EACCES or ENOSYS returned while a filter is on, or SIGSYS raised and not delivered),
 * -ESRCH when the thread or the process died (killed by a filter, or exited), -ETIMEDOUT when the
 * call did not come back (the thread is interrupted again). The thread's registers hold the call's
 * state until ptrace_inject_restore; it is left stopped as the attach stopped it, with no single
 * step pending (a tracer that dies leaves it so: it runs on, not trapped). */
int ptrace_inject_syscall(struct ptrace_inject *pi, const char *name, long nr,
			  const uint64_t args[6], int64_t *ret, char *err, size_t errlen);

/* Scratch memory for a call's buffers: @len (<= PTRACE_INJECT_SCRATCH_MAX) bytes below the chosen
 * thread's red zone on its stack (a writable mapping, checked), its bytes saved first. The address
 * in *@addr; 0 or a negative errno with one line. One scratch area at a time. */
int ptrace_inject_scratch(struct ptrace_inject *pi, size_t len, uint64_t *addr, char *err,
			  size_t errlen);

/* Reads/writes the process's memory at @addr (its address space): 0 or -EFAULT. */
int ptrace_inject_read(const struct ptrace_inject *pi, uint64_t addr, void *buf, size_t len);
int ptrace_inject_write(const struct ptrace_inject *pi, uint64_t addr, const void *buf, size_t len);

/* Puts the chosen thread back as ptrace_inject_select found it: the scratch bytes, FPU state and
 * registers. 0 or a negative errno (the thread is gone). Idempotent. */
int ptrace_inject_restore(struct ptrace_inject *pi);

/* Restores the chosen thread (ptrace_inject_restore) and lets every thread go, each with the
 * signal it was stopped with. Idempotent; safe on a process that died. A thread that has not
 * stopped by the deadline (one in a killable wait, such as a parent in vfork) cannot be detached
 * before it stops: it is remembered, and let go by ptrace_inject_release as soon as it stops (or
 * by the kernel when hvtrace exits). */
void ptrace_inject_detach(struct ptrace_inject *pi);

/* Lets go every remembered thread (above) that has stopped meanwhile, waiting up to @wait_ms for
 * the others. Returns how many are still held. Main thread. */
unsigned ptrace_inject_release(int wait_ms);

#endif
