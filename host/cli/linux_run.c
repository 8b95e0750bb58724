#include "host/cli/linux_run.h"
#include "host/cli/events.h"
#include "host/cli/cmd_common.h"
#include "host/cli/exitcode.h"
#include "host/out/expect.h"
#include "host/trace/clock.h"
#include "host/trace/filter.h"
#include "host/qemu/gdbstub.h"
#include "host/qemu/guardian.h"
#include "host/qemu/libvirt_dom.h"
#include "host/out/profile.h"
#include "host/qemu/qemu_launch.h"
#include "host/qemu/qmp.h"
#include "host/out/sink.h"
#include "host/qemu/target_qemu.h"
#include "host/trace/tracer.h"
#include "host/out/writer.h"
#include "vmi/vmi_linux.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BOOT_WAIT_SEC 120  /* how long a booting kernel may take to get its ftrace sites in place */
#define MIN_SITES 1000	   /* fewer NOP5 entries: ftrace has not converted the call sites yet */
#define QEMU_EXIT_WAIT_MS 10000
/* -g without -l: probe what the graph functions reach through direct calls, this many calls deep
 * (--max-depth lowers it). Every gdbstub breakpoint slows all of a TCG guest's translation. */
#define GRAPH_STATIC_DEPTH 3

typedef int (*hmp_fn)(void *ctx, const char *cmd, char *out, size_t len);

struct linux_run {
	const struct session *s;
	struct vmi_linux l;
	struct vmi_sites sites;
	FILE *out, *con;
	int sfd;
	struct qemu_proc proc;
	bool launched;
	struct qmp qmp;
	bool have_qmp;
	struct libvirt_dom dom;
	bool have_dom;
	hmp_fn hmp;
	void *hmp_ctx;
	pid_t pid;
	uint64_t ram;
	struct gdb gdb;
	bool have_gdb;
	struct target_qemu tq;
	bool have_tq;
	struct tracer tr;
	bool have_tr;
	struct sink sink;
	struct writer w;
	bool writing;
	struct profile prof;
	bool profiling;
	const struct vmi_site **sel;
	size_t nr_sel;
	struct guardian guard; /* restores and detaches the guest if hvtrace dies */
	uint8_t *text; /* --verify-text: the kernel text before attach */
	bool text_changed;
	/* how the run ends */
	double start, detach_at, timeout_at;
	int sig;
	bool timed_out, detached;
};



static int qmp_hmp_fn(void *ctx, const char *cmd, char *out, size_t len)
{
	return qmp_hmp(ctx, cmd, out, len);
}

/* The process at the other end of the QMP unix socket (SO_PEERCRED). */
static pid_t qmp_peer_pid(const struct qmp *q)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(q->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -1;
	return cred.pid;
}

/* A free TCP port on loopback for the gdbstub. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* The unix socket of a `-qmp unix:PATH,...` on QEMU @pid's command line. */
static int qmp_path_of(pid_t pid, char *path, size_t len)
{
	char f[64], *buf = NULL, *prev = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *cmd;
	int found = -ENOENT;

	snprintf(f, sizeof(f), "/proc/%d/cmdline", (int)pid);
	cmd = fopen(f, "r");
	if (!cmd)
		return -errno;
	while ((n = getdelim(&buf, &cap, 0, cmd)) > 0) {
		if (prev && !strcmp(prev, "-qmp") && !strncmp(buf, "unix:", 5)) {
			snprintf(path, len, "%.*s", (int)strcspn(buf + 5, ","), buf + 5);
			found = 0;
		}
		free(prev);
		prev = strdup(buf);
	}
	free(prev);
	free(buf);
	fclose(cmd);
	return found;
}

/* Reaches the VM's monitor: launches QEMU (run --qemu), or finds it (attach). */
static int connect_monitor(struct linux_run *r, char *err, size_t errlen)
{
	const struct session *s = r->s;
	char path[256];
	int ret;

	if (s->domain) {
		ret = libvirt_dom_open(&r->dom, s->domain, err, errlen);
		if (ret < 0)
			return ret;
		r->have_dom = true;
		r->pid = r->dom.pid;
		r->ram = r->dom.ram_size;
		r->hmp = libvirt_dom_hmp;
		r->hmp_ctx = &r->dom;
		return 0;
	}
	if (s->qemu) {
		struct qemu_launch_cfg cfg = {
			.accel = s->accel,
			.kernel = s->kernel,
			.initrd = s->initrd,
			.append = s->append,
			.smp = s->smp,
			.mem_mb = s->mem_mb,
			.qmp_path = path,
			.console = r->con,
		};

		snprintf(path, sizeof(path), "/tmp/hvtrace-qmp-%d.sock", (int)getpid());
		ret = qemu_launch(&cfg, &r->proc, err, errlen);
		if (ret < 0)
			return ret;
		r->launched = true;
		r->pid = r->proc.pid;
		r->ram = (uint64_t)s->mem_mb << 20;
	} else if (s->pid) {
		r->pid = s->pid;
		if (qmp_path_of(r->pid, path, sizeof(path)) < 0) {
			snprintf(err, errlen, "--pid %d: no -qmp unix:SOCKET on its command line", s->pid);
			return -ENOENT;
		}
	} else {
		snprintf(path, sizeof(path), "%s", s->qmp);
	}
	ret = qmp_connect(&r->qmp, path, err, errlen);
	if (ret < 0)
		return ret;
	r->have_qmp = true;
	r->hmp = qmp_hmp_fn;
	r->hmp_ctx = &r->qmp;
	if (!r->pid) {
		r->pid = qmp_peer_pid(&r->qmp);
		if (r->pid <= 0) {
			snprintf(err, errlen, "--qmp %s: cannot tell the QEMU process", path);
			return -ENOENT;
		}
	}
	if (!r->ram)
		r->ram = qemu_mem_ram_size(r->pid);
	return 0;
}

/* The loopback port of a gdbstub QEMU already listens on ("gdb: filename=...tcp:HOST:PORT,server=on" in
 * `info chardev`), or -1. */
static int existing_gdbstub(struct linux_run *r)
{
	char out[4096], *line, *save;
	int port;

	if (r->hmp(r->hmp_ctx, "info chardev", out, sizeof(out)) < 0)
		return -1;
	for (line = strtok_r(out, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		const char *tcp = strstr(line, "tcp:127.0.0.1:");

		if (!strncmp(line, "gdb: filename=", 14) && tcp && sscanf(tcp + 14, "%d", &port) == 1)
			return port;
	}
	return -1;
}

/* Connects to QEMU's gdbstub: the one already listening (QEMU 7.2 cannot open a second TCP gdbserver:
 * "duplicate yank instance"), or a new one on a free loopback port started through the monitor. */
static int connect_gdbstub(struct linux_run *r, char *err, size_t errlen)
{
	char cmd[64], out[512];
	int port = existing_gdbstub(r), ret;

	if (port < 0) {
		port = free_port();
		if (port < 0) {
			snprintf(err, errlen, "no free loopback port for the gdbstub");
			return -EADDRINUSE;
		}
		snprintf(cmd, sizeof(cmd), "gdbserver tcp:127.0.0.1:%d", port);
		ret = r->hmp(r->hmp_ctx, cmd, out, sizeof(out));
		if (ret < 0 || !strstr(out, "Waiting for gdb connection")) {
			out[strcspn(out, "\r\n")] = 0;
			snprintf(err, errlen, "monitor '%s': %.200s", cmd, out);
			return ret < 0 ? ret : -EIO;
		}
	}
	ret = gdb_connect(&r->gdb, "127.0.0.1", port, err, errlen);
	if (ret < 0)
		return ret;
	r->have_gdb = true;
	return 0;
}

static bool signalled(struct linux_run *r)
{
	struct pollfd p = {.fd = r->sfd, .events = POLLIN};
	struct signalfd_siginfo si;

	if (r->sig)
		return true;
	if (poll(&p, 1, 0) == 1 && read(r->sfd, &si, sizeof(si)) == sizeof(si))
		r->sig = (int)si.ssi_signo;
	return r->sig != 0;
}

/* Waits (letting the guest run) until its kernel is up with ftrace's NOPs in place, then reads what the
 * tracer needs: KASLR slide, BTF offsets, sites, task layout. */
static int learn_kernel(struct linux_run *r, struct vmi_task_layout *task, char *err, size_t errlen)
{
	double give_up = clock_now_s() + BOOT_WAIT_SEC;
	size_t last = 0;
	int ret;

	for (;;) {
		if (!r->l.slid)
			vmi_linux_find_slide(&r->l, target_qemu_read_kernel, &r->tq, err, errlen);
		if (r->l.slid) {
			vmi_sites_free(&r->sites);
			ret = vmi_linux_sites(&r->l, target_qemu_read_kernel, &r->tq, &r->sites);
			/* the same count twice: ftrace is not converting call sites right now */
			if (ret == 0 && r->sites.nr >= MIN_SITES && r->sites.nr == last)
				break;
			last = ret == 0 ? r->sites.nr : 0;
		}
		if (clock_now_s() > give_up || signalled(r) ||
		    (r->timeout_at && clock_now_s() > r->timeout_at)) {
			if (!r->l.slid)
				return -ESRCH; /* err says why */
			snprintf(err, errlen, "the kernel has only %zu NOP5 function entries",
				 r->sites.nr);
			return -ENODATA;
		}
		ret = target_qemu_run_for(&r->tq, 100);
		if (ret < 0) {
			snprintf(err, errlen, "the guest went away while booting");
			return ret;
		}
	}
	if (vmi_linux_read_btf(&r->l, target_qemu_read_kernel, &r->tq, err, errlen) < 0)
		fprintf(stderr, "hvtrace: %s: tasks show as <unknown>-0\n", err);
	if (vmi_linux_task_layout(&r->l, target_qemu_read_kernel, &r->tq, r->tq.t.nr_cpus, task) < 0)
		task->unknown = true;
	return 0;
}


/* -g without -l: the graph functions and their static callees (see GRAPH_STATIC_DEPTH), minus -n. */
static int select_graph_closure(struct linux_run *r, char *err, size_t errlen)
{
	const struct session *s = r->s;
	size_t *roots = calloc(r->sites.nr, sizeof(*roots)), nr_roots = 0;
	bool *picked = calloc(r->sites.nr, sizeof(*picked));
	unsigned depth = s->max_depth ? s->max_depth - 1 : GRAPH_STATIC_DEPTH;
	long n;
	int ret = -ENOMEM;

	if (!roots || !picked)
		goto out;
	for (size_t g = 0; g < s->nr_graph; g++) {
		size_t before = nr_roots;

		for (size_t i = 0; i < r->sites.nr; i++)
			if (filter_glob_match(s->graph[g], r->sites.v[i].func->name))
				roots[nr_roots++] = i;
		if (nr_roots == before) {
			snprintf(err, errlen, "-g '%s': matches no traceable function", s->graph[g]);
			ret = -ENOENT;
			goto out;
		}
	}
	n = vmi_linux_callees(&r->l, target_qemu_read_kernel, &r->tq, &r->sites, roots, nr_roots,
			      depth, picked);
	if (n < 0)
		goto out;
	r->sel = calloc(r->sites.nr, sizeof(*r->sel));
	if (!r->sel)
		goto out;
	for (size_t i = 0; i < r->sites.nr; i++) {
		bool excluded = false;

		for (size_t k = 0; k < s->nr_notrace; k++)
			excluded |= filter_glob_match(s->notrace[k], r->sites.v[i].func->name);
		if (picked[i] && !excluded)
			r->sel[r->nr_sel++] = &r->sites.v[i];
	}
	ret = 0;
out:
	free(roots);
	free(picked);
	return ret;
}

/* Probes in, rings and writer running. Returns an exit status on error, 0 on success. */
static int start_tracing(struct linux_run *r, const struct vmi_task_layout *task, char *err,
			 size_t errlen)
{
	const struct session *s = r->s;
	struct tracer_opts opts = {
		.returns = s->tracer == TRACER_FUNCTION_GRAPH || s->nr_rprobes,
		.hook_all = s->tracer == TRACER_FUNCTION_GRAPH,
		.graph_filter = s->nr_graph > 0,
		.lazy = s->nr_graph > 0, /* trap probes only (tracer_init) */
		.max_depth = s->max_depth,
		.ring_records = (uint64_t)s->buffer_size_kb * 1024 / sizeof(struct hvt_record),
	};
	struct vmi_task_layout tl = *task;
	char why[256] = "";
	uint64_t lo, hi, va;
	int ret;

	tl.has_cpu_gs = vmi_linux_cpu_gs(&r->l, &tl.cpu_gs_off);
	if (s->probe != PROBE_TRAP) {
		if (vmi_linux_stub_area(&r->l, target_qemu_read_kernel, &r->tq, &lo, &hi, &va, why,
					sizeof(why)) == 0) {
			target_qemu_set_stub_area(&r->tq, lo, hi, va);
			if (stub_live_at(&r->tq.t, target_qemu_stub_gpa(&r->tq))) {
				target_qemu_set_stub_area(&r->tq, 0, 0, 0);
				snprintf(why, sizeof(why), "the stub of an earlier hvtrace is still live in "
							   "this guest (it was killed with its guardian)");
			}
		}
		if (r->tq.mem.fd < 0 && !*why)
			snprintf(why, sizeof(why), "stub probes need guest memory through the QEMU "
						   "process (not --gdb-memory)");
		/* "stub probes: <reason>" -> "<reason>" after "--probe stub: " */
		ret = cmd_probe_mode(s, &r->tq.t, &tl,
				     *why ? why + (strncmp(why, "stub probes: ", 13) ? 0 : 13) : NULL,
				     &opts.stub, err, errlen);
		if (ret < 0)
			return EXIT_BAD_INPUT;
	}
	task = &tl;
	if (s->nr_graph && !s->nr_filter && s->tracer == TRACER_FUNCTION_GRAPH)
		ret = select_graph_closure(r, err, errlen);
	else
		ret = filter_select(&r->sites, s->filter, s->nr_filter, s->notrace, s->nr_notrace,
				    &r->sel, &r->nr_sel, err, errlen);
	if (ret < 0)
		return ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	if (s->tracer == TRACER_NOP)
		r->nr_sel = 0;
	size_t nr_traced = r->nr_sel;
	bool *traced;

	ret = events_select(s, &r->sites, &r->sel, &r->nr_sel, err, errlen);
	if (ret < 0)
		return ret == -ENOMEM ? EXIT_HOST_ERROR : EXIT_BAD_INPUT;
	r->tq.t.trampoline = r->l.fentry;
	r->tq.t.stack_shift = VMI_LINUX_THREAD_SHIFT;
	ret = tracer_init(&r->tr, &r->tq.t, r->sel, r->nr_sel, task, &opts);
	if (ret < 0) {
		snprintf(err, errlen, "%s", ret == -ENOTSUP ? "no __fentry__ in the System.map"
							    : "out of memory");
		return ret == -ENOTSUP ? EXIT_BAD_INPUT : EXIT_HOST_ERROR;
	}
	r->have_tr = true;
	traced = calloc(r->nr_sel ? r->nr_sel : 1, sizeof(*traced));
	for (size_t i = 0; traced && i < nr_traced; i++)
		traced[i] = true;
	ret = traced ? events_bind(s, &r->tr, traced) : -ENOMEM;
	free(traced);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory for event buffers");
		return EXIT_HOST_ERROR;
	}
	if (cmd_mark_graph_roots(&r->tr, s, err, errlen) < 0 ||
	    expect_check_names(&r->tr.probes, s->expect_call, s->nr_expect_call, s->expect_no_call,
			       s->nr_expect_no_call, err, errlen) < 0)
		return EXIT_BAD_INPUT;
	if (s->tracer == TRACER_FUNCTION_GRAPH)
		ret = sink_graph_init(&r->sink, r->out, &r->l.funcs, r->tq.t.nr_cpus,
				      s->funcgraph_retval, s->funcgraph_tail);
	else
		sink_function_init(&r->sink, r->out, &r->l.funcs, r->tq.t.nr_cpus);
	r->sink.tracer = tracer_name(s->tracer);
	r->sink.event_of = tracer_event_of;
	r->sink.ret_event_of = tracer_ret_event_of;
	r->sink.event_ctx = &r->tr;
	if (s->profile || s->nr_expect_call || s->nr_expect_no_call) {
		if (profile_init(&r->prof, &r->tr.probes) < 0)
			return EXIT_HOST_ERROR;
		r->profiling = true;
		r->w.tap = profile_add;
		r->w.tap_ctx = &r->prof;
	}
	if (s->verify_text) {
		r->text = malloc(r->l.etext - r->l.stext);
		if (!r->text ||
		    target_qemu_read_kernel(&r->tq, r->l.stext, r->text, r->l.etext - r->l.stext) < 0) {
			snprintf(err, errlen, "--verify-text: cannot read the kernel text");
			return EXIT_QEMU_FAILED;
		}
	}
	ret = tracer_attach(&r->tr, err, errlen);
	if (ret < 0)
		return EXIT_QEMU_FAILED;
	ret = writer_start(&r->w, r->tr.rings, r->tr.nr_rings, &r->sink, tracer_horizon, &r->tr);
	if (ret < 0) {
		snprintf(err, errlen, "writer thread: %s", strerror(-ret));
		return EXIT_HOST_ERROR;
	}
	r->writing = true;
	return 0;
}

/* Polled by target_qemu_run: a signal, --duration, --timeout or a panic ends the traced part. */
static bool should_stop(void *ctx)
{
	struct linux_run *r = ctx;
	double t = clock_now_s();

	if (signalled(r))
		return true;
	if (r->timeout_at && t >= r->timeout_at) {
		r->timed_out = true;
		return true;
	}
	if (r->detach_at && t >= r->detach_at)
		return true;
	return r->launched && atomic_load(&r->proc.panic);
}

/* --verify-text: the kernel text read again (VM stopped, probes out) against the copy from before. */
static void verify_text(struct linux_run *r)
{
	size_t len = r->l.etext - r->l.stext;
	uint8_t *now = malloc(len);

	if (!now || target_qemu_read_kernel(&r->tq, r->l.stext, now, len) < 0) {
		cmd_error("--verify-text: cannot read the kernel text after detach");
		r->text_changed = true;
	} else {
		for (size_t i = 0; i < len; i++)
			if (now[i] != r->text[i]) {
				cmd_error("--verify-text: kernel text differs after detach at 0x%llx "
					   "(%02x, was %02x)",
					   (unsigned long long)(r->l.stext + i), now[i], r->text[i]);
				r->text_changed = true;
				break;
			}
		if (!r->text_changed)
			fprintf(stderr, "hvtrace: --verify-text: kernel text unchanged (%zu bytes)\n",
				len);
	}
	free(now);
}

/* In the guardian, after hvtrace died: stop the VM, take over the gdbstub connection, restore the guest
 * as tracer_detach does (the shadow stacks are shared memory), and detach, which makes QEMU drop every
 * breakpoint and resume. */
static void guardian_takeover(void *ctx)
{
	struct linux_run *r = ctx;
	struct gdb fresh;
	char c = 0x03, buf[4096], err[256];
	int fd = r->gdb.fd;

	if (write(fd, &c, 1) != 1)
		return;
	usleep(300000);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (gdb_attach_fd(&fresh, fd, err, sizeof(err)) < 0) {
		dprintf(2, "hvtrace guardian: %s\n", err);
		return;
	}
	r->tq.gdb = &fresh;
	r->tq.stopped = true;
	for (unsigned i = 0; i < r->tq.t.nr_cpus; i++) {
		r->tq.cpu[i].regs_valid = false;
		x86_tlb_invalidate(&r->tq.cpu[i].tlb);
	}
	r->tq.phys_mode = false; /* a new connection: say it again before writing text */
	if (r->have_tr && r->tr.attached) {
		shadow_break_locks(&r->tr.shadow);
		r->tr.drain_running = false; /* threads do not survive fork */
		tracer_detach(&r->tr);
	}
	gdb_detach(&fresh);
	dprintf(2, "hvtrace guardian: hvtrace died; probes removed, return slots restored, VM "
		   "resumed\n");
}

/* Removes every probe, restores every return slot, and lets the VM go (gdbstub detach). */
static void detach(struct linux_run *r)
{
	if (r->detached)
		return;
	guardian_stop(&r->guard);
	if (r->have_tr && tracer_detach(&r->tr) < 0)
		cmd_error("restoring the guest failed: some probes or return slots may remain");
	if (r->text && r->tq.stopped)
		verify_text(r);
	if (r->have_gdb && r->tq.phys_mode && gdb_set_phys_mode(&r->gdb, false) == 0)
		r->tq.phys_mode = false;
	if (r->have_gdb)
		gdb_detach(&r->gdb);
	r->detached = true;
}

/* After the traced part: what happened to the guest decides the status. */
static int finish(struct linux_run *r, enum qemu_run_end how)
{
	const struct session *s = r->s;
	int st;

	if (how == QEMU_RUN_ERROR) {
		cmd_error("gdbstub failed while tracing");
		return EXIT_QEMU_FAILED;
	}
	if (how == QEMU_RUN_STOP_ASKED)
		detach(r);
	else if (r->have_tr)
		tracer_stub_stop(&r->tr); /* nothing left to restore in a VM that is gone */
	r->detached = true;
	if (!r->launched) {
		/* attach: the VM runs on; a detach by signal or --duration is the normal end */
		if (how == QEMU_RUN_GUEST_GONE)
			cmd_error("the VM went away");
		return 0;
	}
	if (r->sig || r->timed_out) {
		qemu_proc_kill(&r->proc);
		if (r->sig) {
			cmd_error("stopped by SIG%s", sigabbrev_np(r->sig));
			return EXIT_SIGNAL_BASE + r->sig;
		}
		cmd_error("--timeout %g: QEMU was stopped after %g s", s->timeout, s->timeout);
		return EXIT_TIMEOUT;
	}
	/* the guest goes on to power off (after --duration it runs untraced) */
	for (;;) {
		st = qemu_proc_wait(&r->proc, 100);
		if (st != -ETIMEDOUT)
			break;
		if (atomic_load(&r->proc.panic) || signalled(r) ||
		    (r->timeout_at && clock_now_s() > r->timeout_at))
			break;
	}
	if (st == -ETIMEDOUT) {
		qemu_proc_kill(&r->proc);
		if (r->sig) {
			cmd_error("stopped by SIG%s", sigabbrev_np(r->sig));
			return EXIT_SIGNAL_BASE + r->sig;
		}
		if (!atomic_load(&r->proc.panic)) {
			cmd_error("--timeout %g: QEMU was stopped after %g s", s->timeout, s->timeout);
			return EXIT_TIMEOUT;
		}
	}
	if (atomic_load(&r->proc.panic)) {
		cmd_error("the guest kernel panicked (see the console)");
		return EXIT_GUEST_PANIC;
	}
	if (st != 0) {
		cmd_error("QEMU exited with status %d%s%s", st, r->proc.err_text[0] ? ": " : "",
			   r->proc.err_text);
		return EXIT_QEMU_FAILED;
	}
	return 0;
}


int cmd_linux(const struct session *s)
{
	struct linux_run r = {.s = s, .sfd = -1, .guard = {.pid = -1, .fd = -1}};
	struct vmi_task_layout task;
	char err[512];
	sigset_t old;
	int status = EXIT_BAD_INPUT;
	enum qemu_run_end how;

	if (vmi_linux_open(&r.l, s->system_map, err, sizeof(err)) < 0) {
		cmd_error("--system-map %s", err);
		return EXIT_BAD_INPUT;
	}
	r.sfd = cmd_block_signals(&old);
	if (r.sfd < 0) {
		cmd_error("signalfd: %s", strerror(-r.sfd));
		status = EXIT_HOST_ERROR;
		goto out;
	}
	r.out = cmd_open_out(s->output, "-o");
	r.con = cmd_open_out(s->console, "--console");
	if (!r.out || !r.con)
		goto out;
	r.start = clock_now_s();
	r.timeout_at = s->timeout > 0 ? r.start + s->timeout : 0;

	status = EXIT_QEMU_FAILED;
	if (connect_monitor(&r, err, sizeof(err)) < 0 || connect_gdbstub(&r, err, sizeof(err)) < 0 ||
	    target_qemu_init(&r.tq, &r.gdb, r.pid, r.ram, s->gdb_memory, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		goto out;
	}
	r.have_tq = true;
	guardian_start(&r.guard, guardian_takeover, &r);
	if (learn_kernel(&r, &task, err, sizeof(err)) < 0) {
		cmd_error("%s", signalled(&r) ? "stopped while the kernel was booting" : err);
		status = r.sig ? EXIT_SIGNAL_BASE + r.sig : EXIT_BAD_INPUT;
		goto out;
	}
	status = start_tracing(&r, &task, err, sizeof(err));
	if (status) {
		cmd_error("%s", err);
		goto out;
	}
	/* a guardian that knows the tracer (and shares its shadow stacks) */
	guardian_stop(&r.guard);
	guardian_start(&r.guard, guardian_takeover, &r);
	r.detach_at = s->duration > 0 ? clock_now_s() + s->duration : 0;
	how = target_qemu_run(&r.tq, should_stop, &r);
	status = finish(&r, how);
out:
	if (r.have_gdb && !r.detached)
		detach(&r);
	guardian_stop(&r.guard);
	if (r.writing) {
		writer_stop(&r.w, tracer_lost(&r.tr));
		if (s->stats) {
			unsigned long long hits = 0, walks = 0;

			for (unsigned i = 0; i < r.tq.t.nr_cpus; i++) {
				hits += r.tq.cpu[i].tlb.hits;
				walks += r.tq.cpu[i].tlb.walks;
			}
			fprintf(stderr, "hvtrace: stats: translations %llu cached %llu walked\n", hits,
				walks);
			fprintf(stderr, "hvtrace: stats: kaslr-slide 0x%llx sites %zu probes %zu arms %llu "
					"stops %llu hits %llu restored-slots %llu orphan-returns %llu\n",
				(unsigned long long)r.l.slide, r.sites.nr, r.tr.probes.nr, (unsigned long long)r.tr.arms, (unsigned long long)r.tq.stops,
				(unsigned long long)r.tq.hits, (unsigned long long)r.tr.restored_slots,
				(unsigned long long)atomic_load(&r.tr.orphan_returns));
			cmd_print_stub_stats(&r.tr);
		}
		if (r.profiling && s->profile)
			profile_print(&r.prof, &r.tr, stderr);
		if (r.text_changed && status == 0)
			status = EXIT_HOST_ERROR;
		if (r.profiling && status == 0 &&
		    expect_verdict(&r.prof, s->expect_call, s->nr_expect_call, s->expect_no_call,
				   s->nr_expect_no_call, stderr))
			status = EXIT_EXPECT;
		writer_free(&r.w);
	}
	if (r.profiling)
		profile_free(&r.prof);
	if (r.have_tr)
		tracer_free(&r.tr);
	if (r.have_gdb)
		gdb_close(&r.gdb);
	if (r.have_tq)
		target_qemu_close(&r.tq);
	if (r.have_qmp)
		qmp_close(&r.qmp);
	if (r.have_dom)
		libvirt_dom_close(&r.dom);
	if (r.launched && r.proc.pid > 0) {
		/* an error before the guest ran its course: do not leave our QEMU behind */
		qemu_proc_kill(&r.proc);
	}
	if (r.out && r.out != stdout)
		fclose(r.out);
	if (r.con && r.con != stdout)
		fclose(r.con);
	if (r.sfd >= 0)
		close(r.sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(r.sel);
	free(r.text);
	vmi_sites_free(&r.sites);
	vmi_linux_close(&r.l);
	return status;
}
