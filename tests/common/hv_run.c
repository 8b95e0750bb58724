#include "tests/common/hv_run.h"

#include "tests/common/files.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

const char *hv_binary(void)
{
	const char *p = getenv("HVTRACE");

	return p ? p : "./hvtrace";
}

/* The whole file @path, "" if it is not there (yet). */
static char *slurp(const char *path)
{
	char *s = hv_read_file(path);

	return s ? s : strdup("");
}

/* Every function line of the trace, however many (the nested lane's traces have 600,000). */
void hv_parse_trace(struct hv_result *r)
{
	char *save, *copy = strdup(r->trace);
	size_t cap = 4096;

	r->lines = calloc(cap, sizeof(*r->lines));
	if (!copy || !r->lines) {
		fprintf(stderr, "parse_trace: out of memory\n");
		exit(1);
	}
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct trace_line *t;
		char task[64], *dash;

		if (l[0] == '#')
			continue;
		if (r->nr_lines == cap) {
			struct trace_line *more = realloc(r->lines, 2 * cap * sizeof(*more));

			if (!more) {
				fprintf(stderr, "parse_trace: out of memory for %zu lines\n", 2 * cap);
				exit(1);
			}
			memset(more + cap, 0, cap * sizeof(*more));
			r->lines = more;
			cap *= 2;
		}
		t = &r->lines[r->nr_lines];
		if (sscanf(l, " %63s [%u] %lf: %63s <-%63s", task, &t->cpu, &t->ts, t->func,
			   t->parent) != 5)
			continue;
		dash = strrchr(task, '-');
		if (!dash)
			continue;
		*dash = 0;
		snprintf(t->comm, sizeof(t->comm), "%.31s", task);
		t->pid = atoi(dash + 1);
		r->nr_lines++;
	}
	free(copy);
}

void hv_wait_for_text(const char *path, const char *text, pid_t pid)
{
	for (int i = 0; i < 12000; i++) {
		char *s = slurp(path);
		bool seen = strstr(s, text) != NULL;

		siginfo_t info = {0};

		free(s);
		if (seen || (!waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) &&
			     info.si_pid == pid))
			return;
		sleep_ms(10);
	}
}

void hv_wait_signal_taken(pid_t pid, int sig)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	for (int i = 0; i < 120000; i++) {
		char *s = slurp(path), *at = strstr(s, "\nShdPnd:\t");
		unsigned long long pending = at ? strtoull(at + 9, NULL, 16) : 0;

		free(s);
		if (!at || !(pending & (1ull << (sig - 1))))
			return;
		sleep_ms(1);
	}
}

static void run(struct hv_result *r, const char *const *argv, const char *watch,
		const char *console_text, double signal_after, int sig);

void hv_run(struct hv_result *r, const char *const *argv, double signal_after, int sig)
{
	run(r, argv, NULL, NULL, signal_after, sig);
}

void hv_run_signal_on(struct hv_result *r, const char *const *argv, const char *console_text,
		      double after, int sig)
{
	run(r, argv, NULL, console_text, after, sig);
}

void hv_run_signal_on_file(struct hv_result *r, const char *const *argv, const char *path,
			   const char *text, double after, int sig)
{
	run(r, argv, path, text, after, sig);
}

/* the @watch of hv_run_signal_on_trace: hvtrace's own trace output */
static const char watch_trace[] = "";

void hv_run_signal_on_trace(struct hv_result *r, const char *const *argv, const char *text,
			    double after, int sig)
{
	run(r, argv, watch_trace, text, after, sig);
}

/* @watch: the file @console_text is waited for in (NULL: hvtrace's --console file; watch_trace:
 * its trace, -o) */
static void run(struct hv_result *r, const char *const *argv, const char *watch,
		const char *console_text, double signal_after, int sig)
{
	char dir[] = "/tmp/hvt-test-XXXXXX", tpath[256], cpath[256], epath[256], hpath[264],
	     ppath[272];
	const char *args[64];
	int n = 0, st;
	pid_t pid, parent;

	memset(r, 0, sizeof(*r));
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(tpath, sizeof(tpath), "%s/trace", dir);
	snprintf(cpath, sizeof(cpath), "%s/console", dir);
	snprintf(epath, sizeof(epath), "%s/stderr", dir);
	snprintf(hpath, sizeof(hpath), "%s.hist", tpath);
	snprintf(ppath, sizeof(ppath), "%s.profile", tpath);
	args[n++] = hv_binary();
	args[n++] = argv[0];
	if (!strcmp(argv[0], "run") || !strcmp(argv[0], "attach")) {
		args[n++] = "-o";
		args[n++] = tpath;
	}
	/* record (the embedded VMM): the caller's -o FILE is the trace.dat, the console as for run */
	if (!strcmp(argv[0], "run") || (!strcmp(argv[0], "record") && strcmp(argv[1], "attach"))) {
		args[n++] = "--console";
		args[n++] = cpath;
	}
	bool qemu = false, probe = false;

	for (int i = 1; argv[i]; i++) {
		qemu |= !strcmp(argv[i], "--qemu");
		probe |= !strcmp(argv[i], "--probe");
		args[n++] = argv[i];
	}
	/* HVTRACE_TEST_PROBE=stub runs the embedded-VMM tests (run, record) again with stub probes
	 */
	if ((!strcmp(argv[0], "run") ||
	     (!strcmp(argv[0], "record") && strcmp(argv[1], "attach"))) &&
	    !qemu && !probe && getenv("HVTRACE_TEST_PROBE")) {
		memmove(args + 4, args + 2, (n - 2) * sizeof(*args));
		args[2] = "--probe";
		args[3] = getenv("HVTRACE_TEST_PROBE");
		n += 2;
	}
	args[n] = NULL;
	fflush(NULL);
	parent = getpid();
	pid = fork();
	if (pid == 0) {
		int fd = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		setpgid(0, 0); /* its own process group: a negative @sig reaches its children too */
		/* ... and so out of reach of what ends the test (run-tests.sh's timeout signals the
		 * test's group): hvtrace gets SIGTERM when the test dies, and tears its VM down
		 * rather than run on orphaned (its vCPUs would keep the nested lane's two CPUs busy
		 * for every later binary) */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		int out =
		    open(strcmp(argv[0], "run") && strcmp(argv[0], "attach") ? tpath : "/dev/null",
			 O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 2);
		dup2(out, 1);
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	if (console_text)
		hv_wait_for_text(watch == watch_trace ? tpath : watch ? watch : cpath, console_text, pid);
	if (signal_after > 0) {
		struct timespec ts = {(time_t)signal_after,
				      (long)((signal_after - (time_t)signal_after) * 1e9)};

		nanosleep(&ts, NULL);
		if (sig < 0)
			kill(-pid, -sig);
		else
			kill(pid, sig);
	}
	waitpid(pid, &st, 0);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->trace = slurp(tpath);
	r->console = slurp(cpath);
	r->err = slurp(epath);
	r->hist = access(hpath, F_OK) ? NULL : slurp(hpath);
	r->profile = access(ppath, F_OK) ? NULL : slurp(ppath);
	unlink(hpath);
	unlink(ppath);
	unlink(tpath);
	unlink(cpath);
	unlink(epath);
	rmdir(dir);
	hv_parse_trace(r);
}

void hv_result_free(struct hv_result *r)
{
	free(r->trace);
	free(r->console);
	free(r->err);
	free(r->hist);
	free(r->profile);
	free(r->lines);
	memset(r, 0, sizeof(*r));
}

long hv_stat(const char *err, const char *line, const char *field)
{
	char key[128];
	const char *p, *eol, *f;

	snprintf(key, sizeof(key), "hvtrace: stats: %s", line);
	p = strstr(err, key);
	if (!p)
		return -1;
	p += strlen("hvtrace: stats: ");
	eol = strchr(p, '\n');
	f = strstr(p, field);
	return f && (!eol || f < eol) ? atol(f + strlen(field)) : -1;
}

long hv_cpu_stat(const char *err, unsigned cpu, const char *field)
{
	char line[32];

	snprintf(line, sizeof(line), "cpu%u events ", cpu);
	return hv_stat(err, line, field);
}

long trace_count(const struct hv_result *r, const char *func, int cpu)
{
	long n = 0;

	for (size_t i = 0; i < r->nr_lines; i++)
		if ((!func || !strcmp(r->lines[i].func, func)) &&
		    (cpu < 0 || r->lines[i].cpu == (unsigned)cpu))
			n++;
	return n;
}

long count_text(const char *s, const char *what)
{
	size_t m = strlen(what);
	long n = 0;

	/* not strstr in a loop: under ASan each call checks the whole rest of @s (quadratic on a
	 * trace of megabytes) */
	for (; *s; s++)
		if (*s == *what && !strncmp(s, what, m))
			n++;
	return n;
}

int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

char *hv_command_output(const char *cmd)
{
	size_t cap = 1 << 20, len = 0, n;
	char *buf = malloc(cap), *more;
	FILE *p = popen(cmd, "r");

	if (!p || !buf) {
		if (p)
			pclose(p);
		free(buf);
		return NULL;
	}
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap) {
			more = realloc(buf, cap *= 2);
			if (!more) {
				free(buf);
				pclose(p);
				return NULL;
			}
			buf = more;
		}
	}
	buf[len] = 0;
	if (pclose(p) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *hv_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	char *out;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	out = hv_command_output(cmd);
	if (!out)
		fail_msg("failed: %s", cmd);
	return out;
}

