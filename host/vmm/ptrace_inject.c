/* A syscall made by a thread of another process, through ptrace, and the thread put back. */
#include "host/vmm/ptrace_inject.h"
#include "host/vmm/proc_maps.h"
#include "host/vmm/seccomp_check.h"
#include "host/util/msg_fmt.h"
#include "host/util/proc_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SEIZE_ROUNDS 64		 /* listings of the threads until no new one shows */
#define SCAN_MAX     (64u << 20) /* bytes of executable mappings searched for a syscall instruction */
#define STEP_TRIES   8		 /* stops before the syscall instruction ran, tolerated */
#define POLL_NS	     1000000	 /* at most between two looks at a thread that has not stopped */

#define LINGER_MAX 64 /* threads seized that never stopped, remembered to be let go later */

/* Main thread only (as every function here). */
static struct {
	pid_t tid;
	int sig;
} linger[LINGER_MAX];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits for @tid's next ptrace report until @deadline (ms): 1 with *@st, or -ETIMEDOUT, or -ECHILD
 * (not ours any more). */
static int wait_tid(pid_t tid, uint64_t deadline, int *st)
{
	for (long ns = 1000;; ns = ns * 2 < POLL_NS ? ns * 2 : POLL_NS) {
		pid_t r = waitpid(tid, st, __WALL | WNOHANG);

		if (r == tid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -ECHILD;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){0, ns}, NULL); /* 1 us, doubling up to POLL_NS */
	}
}

static struct ptrace_inject_thread *thread_of(struct ptrace_inject *pi, pid_t tid)
{
	for (unsigned i = 0; i < pi->nr; i++)
		if (pi->thr[i].tid == tid)
			return &pi->thr[i];
	return NULL;
}

/* Is thread @tid a zombie (exited, not reaped: it can never stop)? From /proc/PID/task/TID/stat,
 * whose state follows the last ')' (the comm may hold any byte). */
static bool zombie(pid_t pid, pid_t tid)
{
	char state;
	int ret = proc_state(pid, tid, &state);

	return ret == 0 ? PROC_STATE_EXITED(state) : ret != -EBADMSG;
}

/* "Name:\tVALUE" of /proc/PID/task/TID/status (TID 0: the process's) as a number; -1 if absent. */
static long status_field(pid_t pid, pid_t tid, const char *name)
{
	char path[80], buf[4096], *p;
	int fd;
	ssize_t n;
	size_t nl = strlen(name);

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, nl) == 0 && p[nl] == ':')
			return strtol(p + nl + 1, NULL, 10);
	return -1;
}

/* Whether thread @tid of the process, whose seize was refused with EPERM while another of its
 * threads is held already (so not for want of permission), is only exiting: no other tracer holds
 * it (its TracerPid 0, gone, or a thread of this process). */
static bool exiting_thread(const struct ptrace_inject *pi, pid_t tid)
{
	long tracer = status_field(pi->pid, tid, "TracerPid");
	char path[64];

	if (!pi->nr)
		return false;
	if (tracer <= 0)
		return true;
	snprintf(path, sizeof(path), "/proc/self/task/%ld", tracer);
	return access(path, F_OK) == 0;
}

/* The line for a PTRACE_SEIZE refused with EPERM: who holds the process, or what forbids it. */
static void why_eperm(const struct ptrace_inject *pi, const char *comm, char *err, size_t errlen)
{
	long tracer = status_field(pi->pid, 0, "TracerPid");
	char scope[16] = "";
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t n = read(fd, scope, sizeof(scope) - 1);

		scope[n > 0 ? n : 0] = 0;
		scope[strcspn(scope, "\n")] = 0;
		close(fd);
	}
	if (tracer > 0)
		msg_fmt(
		    err, errlen,
		    "pid %d (%s): ptrace refused: the process is traced already (TracerPid %ld: a "
		    "debugger, strace, or another hvtrace)",
		    (int)pi->pid, comm, tracer);
	else
		msg_fmt(
		    err, errlen,
		    "pid %d (%s): ptrace refused (Operation not permitted): run hvtrace as root or "
		    "as the VMM's user with CAP_SYS_PTRACE%s%s%s",
		    (int)pi->pid, comm, scope[0] ? " (kernel.yama.ptrace_scope is " : "", scope,
		    scope[0] ? ")" : "");
}

/* Seizes and interrupts every thread of the process not held yet: how many were new (0: none), or
 * a negative errno with one line. */
static int seize_new(struct ptrace_inject *pi, const char *comm, char *err, size_t errlen)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	int added = 0, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pi->pid);
	d = opendir(path);
	if (!d) {
		msg_fmt(err, errlen, "pid %d: no such process", (int)pi->pid);
		return -ESRCH;
	}
	while ((de = readdir(d))) {
		char *endp;
		long tid = strtol(de->d_name, &endp, 10);

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *endp || tid <= 0 ||
		    tid > INT32_MAX || thread_of(pi, (pid_t)tid) || zombie(pi->pid, (pid_t)tid))
			continue;
		if (pi->nr >= PTRACE_INJECT_MAX_THREADS) {
			msg_fmt(err, errlen, "pid %d (%s): more than %u threads", (int)pi->pid,
				comm, PTRACE_INJECT_MAX_THREADS);
			rc = -E2BIG;
			break;
		}
		if (ptrace(PTRACE_SEIZE, (pid_t)tid, NULL, NULL) != 0) {
			/* gone meanwhile (ESRCH), or exited and not reaped yet (EPERM then) */
			if (errno == ESRCH || (errno == EPERM && (zombie(pi->pid, (pid_t)tid) ||
								  exiting_thread(pi, (pid_t)tid))))
				continue;
			rc = -errno;
			if (rc == -EPERM)
				why_eperm(pi, comm, err, errlen);
			else
				msg_fmt(err, errlen, "pid %d (%s): thread %ld: ptrace: %s",
					(int)pi->pid, comm, tid, strerror(-rc));
			break;
		}
		pi->thr[pi->nr++] = (struct ptrace_inject_thread){.tid = (pid_t)tid};
		if (ptrace(PTRACE_INTERRUPT, (pid_t)tid, NULL, NULL) != 0 && errno != ESRCH) {
			rc = -errno;
			msg_fmt(err, errlen, "pid %d (%s): thread %ld: PTRACE_INTERRUPT: %s",
				(int)pi->pid, comm, tid, strerror(-rc));
			break;
		}
		added++;
	}
	closedir(d);
	return rc ? rc : added;
}

/* Waits for every seized thread to stop: 0, or a negative errno with one line. */
/* Where thread @tid sleeps (/proc/PID/task/TID/wchan: a kernel function's name, "0" when it
 * runs, "?" when unreadable), printable bytes only, into @buf. */
static void thread_wchan(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[80];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	if (n <= 0)
		n = snprintf(buf, len, "?");
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] < 0x21 || buf[i] > 0x7e)
			buf[i] = '?';
}

static int stop_all(struct ptrace_inject *pi, const char *comm, char *err, size_t errlen)
{
	uint64_t deadline = now_ms() + (uint64_t)pi->timeout_ms;

	for (unsigned i = 0; i < pi->nr; i++) {
		struct ptrace_inject_thread *t = &pi->thr[i];
		int st, rc;

		while (t->tid && !t->stopped) {
			rc = wait_tid(t->tid, deadline, &st);
			if (rc == -ETIMEDOUT) {
				char state = '?', wchan[64];

				proc_state(pi->pid, t->tid, &state);
				thread_wchan(pi->pid, t->tid, wchan, sizeof(wchan));
				msg_fmt(err, errlen,
					"pid %d (%s): thread %d did not stop within %d ms of "
					"PTRACE_INTERRUPT (state %c, in %s)",
					(int)pi->pid, comm, (int)t->tid, pi->timeout_ms,
					state ? state : '?', wchan);
				return rc;
			}
			if (rc < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
				if (t->tid == pi->pid || kill(pi->pid, 0) != 0) {
					msg_fmt(err, errlen, "pid %d (%s) exited during the attach",
						(int)pi->pid, comm);
					t->tid = 0;
					return -ESRCH;
				}
				t->tid = 0; /* a thread that ended: forgotten */
				break;
			}
			if (!WIFSTOPPED(st))
				continue;
			t->stopped = true;
			if ((st >> 16) == 0 && WSTOPSIG(st) != SIGTRAP && !t->sig)
				t->sig = WSTOPSIG(
				    st); /* a signal's delivery stop: delivered at the detach */
		}
	}
	return 0;
}

int ptrace_inject_attach(struct ptrace_inject *pi, pid_t pid, int timeout_ms, char *err,
			 size_t errlen)
{
	char comm[72], path[64];
	int rc = 0, round;

	memset(pi, 0, offsetof(struct ptrace_inject, thr));
	pi->tid = 0;
	pi->have_saved = false;
	pi->syscall_at = pi->scratch = 0;
	pi->scratch_len = 0;
	pi->injected = 0;
	pi->seccomp_unchecked = false;
	ptrace_inject_release(0);
	pi->pid = pid;
	pi->mem_fd = -1;
	pi->timeout_ms = timeout_ms > 0 ? timeout_ms : PTRACE_INJECT_TIMEOUT_MS;
	if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
		msg_fmt(err, errlen, "pid %d: no such process", (int)pid);
		return -ESRCH;
	}
	proc_comm(pid, 0, comm, sizeof(comm));
	for (round = 0; round < SEIZE_ROUNDS; round++) {
		rc = seize_new(pi, comm, err, errlen);
		if (rc <= 0)
			break;
		rc = stop_all(pi, comm, err, errlen);
		if (rc)
			break;
	}
	if (rc == 0 && round == SEIZE_ROUNDS) {
		msg_fmt(err, errlen, "pid %d (%s): still making threads after %d looks", (int)pid,
			comm, SEIZE_ROUNDS);
		rc = -EAGAIN;
	}
	if (rc == 0 && !thread_of(pi, pid) && pi->nr == 0) {
		msg_fmt(err, errlen, "pid %d: no such process", (int)pid);
		rc = -ESRCH;
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		pi->mem_fd = open(path, O_RDWR | O_CLOEXEC);
		if (pi->mem_fd < 0) {
			rc = -errno;
			msg_fmt(err, errlen, "pid %d (%s): %s: %s", (int)pid, comm, path,
				strerror(-rc));
		}
	}
	if (rc)
		ptrace_inject_detach(pi);
	return rc;
}

int ptrace_inject_read(const struct ptrace_inject *pi, uint64_t addr, void *buf, size_t len)
{
	if (pi->mem_fd < 0 || addr > INT64_MAX || len > INT64_MAX - addr)
		return -EFAULT;
	return pread(pi->mem_fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EFAULT;
}

int ptrace_inject_write(const struct ptrace_inject *pi, uint64_t addr, const void *buf, size_t len)
{
	if (pi->mem_fd < 0 || addr > INT64_MAX || len > INT64_MAX - addr)
		return -EFAULT;
	return pwrite(pi->mem_fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EFAULT;
}

struct scan {
	struct ptrace_inject *pi;
	uint64_t found, budget;
};

/* Looks for 0f 05 in an executable mapping (read through /proc/PID/mem, 64 KiB at a time). */
static int scan_exec(void *ctx, const struct proc_maps_entry *e)
{
	struct scan *s = ctx;
	static uint8_t buf[65536 + 1]; /* main thread only (ptrace_inject_select) */
	uint8_t last = 0;

	if (!e->x || !e->r || strcmp(e->name, "[vsyscall]") == 0)
		return 0;
	for (uint64_t a = e->lo; a < e->hi && s->budget;) {
		size_t n = e->hi - a < 65536 ? (size_t)(e->hi - a) : 65536;

		if (n > s->budget)
			n = (size_t)s->budget;
		if (ptrace_inject_read(s->pi, a, buf + 1, n) != 0)
			return 0; /* unmapped meanwhile, or unreadable: the next mapping */
		buf[0] = last;
		for (size_t i = a == e->lo ? 1 : 0; i < n; i++)
			if (buf[i] == 0x0f && buf[i + 1] == 0x05) {
				s->found = a + i - 1;
				return 1;
			}
		last = buf[n];
		a += n;
		s->budget -= n;
	}
	return 0;
}

int ptrace_inject_select(struct ptrace_inject *pi, pid_t tid, char *err, size_t errlen)
{
	struct ptrace_inject_thread *t = thread_of(pi, tid);
	struct scan s = {pi, 0, SCAN_MAX};
	uint8_t insn[2];

	if (pi->tid)
		ptrace_inject_restore(pi);
	pi->tid = 0;
	pi->have_saved = false;
	if (!t || !t->stopped) {
		if (kill(pi->pid, 0) != 0 || zombie(pi->pid, pi->pid))
			msg_fmt(err, errlen, "pid %d exited during the attach", (int)pi->pid);
		else
			msg_fmt(err, errlen, "pid %d: thread %d is not one of its stopped threads",
				(int)pi->pid, (int)tid);
		return -ESRCH;
	}
	if (ptrace(PTRACE_GETREGS, tid, NULL, &pi->saved) != 0 ||
	    ptrace(PTRACE_GETFPREGS, tid, NULL, &pi->saved_fp) != 0) {
		int rc = -errno;

		msg_fmt(err, errlen, "pid %d: thread %d: reading its registers: %s", (int)pi->pid,
			(int)tid, strerror(-rc));
		return rc;
	}
	pi->tid = tid;
	pi->have_saved = true;
	pi->syscall_at = 0;
	/* stopped in or after a syscall: the instruction it made it with */
	if ((int64_t)pi->saved.orig_rax >= 0 && pi->saved.rip >= 2 &&
	    ptrace_inject_read(pi, pi->saved.rip - 2, insn, 2) == 0 && insn[0] == 0x0f &&
	    insn[1] == 0x05)
		pi->syscall_at = pi->saved.rip - 2;
	if (!pi->syscall_at && proc_maps_each(pi->pid, scan_exec, &s) == 1)
		pi->syscall_at = s.found;
	if (!pi->syscall_at) {
		msg_fmt(
		    err, errlen,
		    "pid %d: no syscall instruction in its executable mappings (%u MiB searched)",
		    (int)pi->pid, SCAN_MAX >> 20);
		pi->tid = 0;
		pi->have_saved = false;
		return -ENOEXEC;
	}
	return 0;
}

/* The thread @tid ended: forgotten, with nothing to restore. */
static void thread_gone(struct ptrace_inject *pi, pid_t tid)
{
	struct ptrace_inject_thread *t = thread_of(pi, tid);

	if (t)
		*t = (struct ptrace_inject_thread){0};
	if (pi->tid == tid) {
		pi->tid = 0;
		pi->have_saved = false;
		pi->scratch = 0;
	}
}

/* Would the thread's seccomp refuse the call? -EPERM with one line if so (nothing injected); 0 if
 * it allows it, or if that cannot be known (filters unreadable without CAP_SYS_ADMIN, an eBPF
 * filter): the call's result is checked after it then. */
static int seccomp_refuses(struct ptrace_inject *pi, pid_t tid, const char *name, long nr,
			   const uint64_t args[6], char *err, size_t errlen)
{
	long mode = status_field(pi->pid, tid, "Seccomp");
	uint32_t action;
	char comm[72];

	if (mode == 1 && nr != SYS_read && nr != SYS_write && nr != SYS_exit &&
	    nr != SYS_rt_sigreturn) {
		msg_fmt(
		    err, errlen,
		    "pid %d thread %d (%s): it runs in seccomp's strict mode, which would kill it "
		    "for %s: not injected",
		    (int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)), name);
		return -EPERM;
	}
	if (mode != 2 || seccomp_check_thread(tid, nr, args, pi->syscall_at + 2, &action) != 0)
		return 0;
	action &= SECCOMP_RET_ACTION_FULL;
	if (action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG)
		return 0;
	msg_fmt(err, errlen,
		"pid %d thread %d (%s): its seccomp filter would answer %s with %s: not injected",
		(int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)), name,
		seccomp_check_action_name(action));
	return -EPERM;
}

/* Takes PTRACE_SINGLESTEP's trap flag off stopped thread @tid without letting it run an instruction
 * of its own: the flag stays on a thread that stays stopped, and a tracer that dies does not take
 * it off (the kernel drops its ptrace links without a detach), so the thread, let go, would trap
 * after one instruction, and an untraced SIGTRAP dumps the whole process's core. PTRACE_INTERRUPT,
 * then PTRACE_CONT (which takes the flag off): the thread stops again in the kernel's signal
 * handling, as the attach's PTRACE_INTERRUPT left it, before any instruction of its own. 0, or a
 * negative errno (-ESRCH: it ended; -ETIMEDOUT; -EIO: it did not come to that stop). */
static int unstep(struct ptrace_inject *pi, pid_t tid)
{
	struct ptrace_inject_thread *t = thread_of(pi, tid);
	uint64_t deadline = now_ms() + (uint64_t)pi->timeout_ms;
	int st, rc;

	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0)
		return -errno;
	for (int tries = 0; tries < STEP_TRIES; tries++) {
		if (ptrace(PTRACE_CONT, tid, NULL, NULL) != 0)
			return -errno;
		/* in slices: a process that exits meanwhile (a leader's exit is not reported
		 * while its other threads are unreaped) is said at once, not at the deadline */
		do
			rc =
			    wait_tid(tid, now_ms() + 10 < deadline ? now_ms() + 10 : deadline, &st);
		while (rc == -ETIMEDOUT && now_ms() < deadline && !zombie(pi->pid, tid) &&
		       !zombie(pi->pid, pi->pid));
		if (rc == -ETIMEDOUT && now_ms() < deadline)
			return -ESRCH;
		if (rc < 0)
			return rc;
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return -ESRCH;
		if (!WIFSTOPPED(st))
			continue;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			return 0;
		/* a signal that came meanwhile, stopped at: delivered at the detach */
		if ((st >> 16) == 0 && WSTOPSIG(st) != SIGTRAP && t && !t->sig)
			t->sig = WSTOPSIG(st);
	}
	return -EIO;
}

/* ptrace_inject_syscall's end, the thread stopped: the trap flag off (unstep), @rc kept, or the
 * failure to take it off said in @err. */
static int call_end(struct ptrace_inject *pi, pid_t tid, const char *name, int rc, char *err,
		    size_t errlen)
{
	char comm[72];
	int u = unstep(pi, tid);

	if (u == 0)
		return rc;
	if (u == -ESRCH)
		thread_gone(pi, tid);
	if (rc == 0 || rc == -EPERM) { /* (other failures said more already) */
		msg_fmt(
		    err, errlen,
		    "pid %d thread %d (%s): after the injected %s, its single step could not be "
		    "taken off: %s",
		    (int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)), name,
		    strerror(-u));
		return u;
	}
	return rc;
}

int ptrace_inject_syscall(struct ptrace_inject *pi, const char *name, long nr,
			  const uint64_t args[6], int64_t *ret, char *err, size_t errlen)
{
	struct user_regs_struct r;
	pid_t tid = pi->tid;
	uint64_t deadline;
	char comm[72];
	int st, rc;

	if (!tid || !pi->have_saved) {
		msg_fmt(err, errlen, "pid %d: no thread chosen for %s", (int)pi->pid, name);
		return -EINVAL;
	}
	rc = pi->seccomp_unchecked ? 0 : seccomp_refuses(pi, tid, name, nr, args, err, errlen);
	if (rc)
		return rc;
	r = pi->saved;
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1; /* no syscall to restart on the way out of this stop */
	r.rdi = args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.r10 = args[3];
	r.r8 = args[4];
	r.r9 = args[5];
	r.rip = pi->syscall_at;
	if (ptrace(PTRACE_SETREGS, tid, NULL, &r) != 0) {
		rc = -errno;
		msg_fmt(err, errlen, "pid %d thread %d (%s): setting its registers for %s: %s",
			(int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)), name,
			strerror(-rc));
		return rc;
	}
	pi->injected++;
	for (int tries = 0;; tries++) {
		if (ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL) != 0) {
			rc = -errno;
			msg_fmt(err, errlen, "pid %d thread %d (%s): PTRACE_SINGLESTEP for %s: %s",
				(int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)),
				name, strerror(-rc));
			if (rc == -ESRCH)
				thread_gone(pi, tid);
			return rc;
		}
		deadline = now_ms() + (uint64_t)pi->timeout_ms;
		rc = wait_tid(tid, deadline, &st);
		if (rc == -ETIMEDOUT) {
			ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
			rc = wait_tid(tid, now_ms() + (uint64_t)pi->timeout_ms, &st);
			msg_fmt(
			    err, errlen,
			    "pid %d thread %d (%s): the injected %s did not return within %d ms",
			    (int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)),
			    name, pi->timeout_ms);
			if (rc != 1 || !WIFSTOPPED(st)) {
				thread_gone(pi, tid);
				return -ETIMEDOUT;
			}
			return call_end(pi, tid, name, -ETIMEDOUT, err, errlen);
		}
		if (rc < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			bool sys = rc == 1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS;

			msg_fmt(err, errlen, "pid %d thread %d (%s) %s at the injected %s%s",
				(int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)),
				sys ? "was killed by SIGSYS" : "ended", name,
				sys ? " (its seccomp filter forbids it)" : "");
			thread_gone(pi, tid);
			return -ESRCH;
		}
		if (!WIFSTOPPED(st))
			continue;
		if (ptrace(PTRACE_GETREGS, tid, NULL, &r) != 0) {
			rc = -errno;
			msg_fmt(err, errlen,
				"pid %d thread %d (%s): reading its registers after %s: %s",
				(int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)),
				name, strerror(-rc));
			if (rc == -ESRCH)
				thread_gone(pi, tid);
			return rc;
		}
		if ((st >> 16) == 0 && WSTOPSIG(st) == SIGSYS) {
			/* SECCOMP_RET_TRAP: the signal is not delivered (the VMM never sees it) */
			msg_fmt(err, errlen,
				"pid %d thread %d (%s): its seccomp filter trapped the injected %s "
				"(SIGSYS)",
				(int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)),
				name);
			return call_end(pi, tid, name, -EPERM, err, errlen);
		}
		if (r.rip == pi->syscall_at + 2)
			break;
		if (r.rip == pi->syscall_at && tries < STEP_TRIES) {
			struct ptrace_inject_thread *t = thread_of(pi, tid);

			/* stopped before the instruction ran (a pending interrupt, a signal) */
			if ((st >> 16) == 0 && WSTOPSIG(st) != SIGTRAP && t && !t->sig)
				t->sig = WSTOPSIG(st);
			continue;
		}
		msg_fmt(
		    err, errlen,
		    "pid %d thread %d (%s): after the injected %s it stopped at 0x%llx, not 0x%llx",
		    (int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)), name,
		    (unsigned long long)r.rip, (unsigned long long)pi->syscall_at + 2);
		return call_end(pi, tid, name, -EIO, err, errlen);
	}
	rc = call_end(pi, tid, name, 0, err, errlen);
	if (rc)
		return rc;
	*ret = (int64_t)r.rax;
	if ((*ret == -EPERM || *ret == -EACCES || *ret == -ENOSYS) &&
	    status_field(pi->pid, tid, "Seccomp") > 0) {
		msg_fmt(
		    err, errlen,
		    "pid %d thread %d (%s): the injected %s returned %s under the thread's seccomp "
		    "filter: refused there",
		    (int)pi->pid, (int)tid, proc_comm(pi->pid, tid, comm, sizeof(comm)), name,
		    *ret == -EPERM    ? "EPERM"
		    : *ret == -EACCES ? "EACCES"
				      : "ENOSYS");
		return -EPERM;
	}
	return 0;
}

/* Is [lo, hi) inside one writable mapping? */
struct span {
	uint64_t lo, hi;
	bool ok;
};

static int in_writable(void *ctx, const struct proc_maps_entry *e)
{
	struct span *s = ctx;

	if (e->lo <= s->lo && s->hi <= e->hi) {
		s->ok = e->r && e->w;
		return 1;
	}
	return 0;
}

int ptrace_inject_scratch(struct ptrace_inject *pi, size_t len, uint64_t *addr, char *err,
			  size_t errlen)
{
	struct span s;
	uint64_t rsp = pi->saved.rsp;

	if (!pi->tid || !pi->have_saved || pi->scratch || len == 0 ||
	    len > PTRACE_INJECT_SCRATCH_MAX) {
		msg_fmt(err, errlen, "pid %d: no scratch memory of %zu bytes to be had",
			(int)pi->pid, len);
		return -EINVAL;
	}
	if (rsp < PTRACE_INJECT_RED_ZONE + len + 64) {
		msg_fmt(err, errlen, "pid %d thread %d: its stack pointer 0x%llx is no stack",
			(int)pi->pid, (int)pi->tid, (unsigned long long)rsp);
		return -EFAULT;
	}
	s = (struct span){(rsp - PTRACE_INJECT_RED_ZONE - len) & ~63ull, rsp, false};
	proc_maps_each(pi->pid, in_writable, &s);
	if (!s.ok || ptrace_inject_read(pi, s.lo, pi->scratch_saved, len) != 0) {
		msg_fmt(err, errlen,
			"pid %d thread %d: no %zu writable bytes below its stack's red zone (RSP "
			"0x%llx)",
			(int)pi->pid, (int)pi->tid, len, (unsigned long long)rsp);
		return -EFAULT;
	}
	pi->scratch = s.lo;
	pi->scratch_len = len;
	*addr = s.lo;
	return 0;
}

int ptrace_inject_restore(struct ptrace_inject *pi)
{
	int rc = 0;

	if (!pi->tid || !pi->have_saved)
		return 0;
	if (pi->scratch &&
	    ptrace_inject_write(pi, pi->scratch, pi->scratch_saved, pi->scratch_len) != 0)
		rc = -EFAULT;
	pi->scratch = 0;
	if (ptrace(PTRACE_SETFPREGS, pi->tid, NULL, &pi->saved_fp) != 0 ||
	    ptrace(PTRACE_SETREGS, pi->tid, NULL, &pi->saved) != 0)
		rc = -errno;
	return rc;
}

void ptrace_inject_detach(struct ptrace_inject *pi)
{
	ptrace_inject_restore(pi);
	pi->tid = 0;
	pi->have_saved = false;
	uint64_t deadline = now_ms() + (uint64_t)pi->timeout_ms;

	for (unsigned i = 0; i < pi->nr; i++) {
		struct ptrace_inject_thread *t = &pi->thr[i];
		int st;

		/* seized but not seen stopped (an attach that failed half-way): PTRACE_DETACH needs
		 * a stop, so wait for the one its PTRACE_INTERRUPT brings (bounded; a thread left
		 * so is let go by the kernel when hvtrace exits) */
		while (t->tid && !t->stopped && wait_tid(t->tid, deadline, &st) == 1)
			if (WIFSTOPPED(st))
				t->stopped = true;
			else if (WIFEXITED(st) || WIFSIGNALED(st))
				t->tid = 0;
		if (t->tid && !t->stopped) {
			for (unsigned k = 0; k < LINGER_MAX; k++)
				if (!linger[k].tid) {
					linger[k].tid = t->tid;
					linger[k].sig = t->sig;
					break;
				}
		} else if (t->tid &&
			   ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(uintptr_t)t->sig) != 0 &&
			   errno == ESRCH) {
			/* no longer stopped: killed meanwhile (the VMM exited), its exit ours to
			 * reap (else its process could never be reaped), or stopped again: let go
			 * then */
			if (wait_tid(t->tid, deadline, &st) == 1 && WIFSTOPPED(st))
				ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(uintptr_t)t->sig);
		}
		*t = (struct ptrace_inject_thread){0};
	}
	pi->nr = 0;
	if (pi->mem_fd >= 0)
		close(pi->mem_fd);
	pi->mem_fd = -1;
}

unsigned ptrace_inject_release(int wait_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)(wait_ms > 0 ? wait_ms : 0);
	unsigned held = 0;

	for (unsigned k = 0; k < LINGER_MAX; k++) {
		int st, rc;

		if (!linger[k].tid)
			continue;
		rc = wait_tid(linger[k].tid, deadline, &st);
		if (rc == -ETIMEDOUT) {
			held++;
			continue;
		}
		if (rc == 1 && WIFSTOPPED(st))
			ptrace(PTRACE_DETACH, linger[k].tid, NULL,
			       (void *)(uintptr_t)linger[k].sig);
		linger[k].tid = 0;
	}
	return held;
}
