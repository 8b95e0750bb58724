/* Helpers for the integration tests (embedded VMM and QEMU alike): run ./hvtrace as a child
 * process, read back its trace, console and error output, and pick numbers out of them. */
#ifndef HVT_TESTS_HV_RUN_H
#define HVT_TESTS_HV_RUN_H

#include "tests/common/files.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct trace_line {
	char comm[32];
	int pid;
	unsigned cpu;
	double ts;
	char func[64];
	char parent[64];
};

struct hv_result {
	int status;    /* exit status, or 128+N if killed by signal N */
	char *trace;   /* whole -o file */
	char *console; /* whole --console file */
	char *err;     /* whole stderr */
	char *hist;    /* whole -o file's .hist (--trigger FUNC:hist), NULL when none */
	char *profile; /* whole -o file's .profile (--profile's trace_stat), NULL when none */
	struct trace_line *lines; /* every function line of the trace */
	size_t nr_lines;
};

/* Path of ./hvtrace, from $HVTRACE. */
const char *hv_binary(void);

/* Runs hvtrace with @argv (NULL-terminated, without the program name) plus `-o T --console C`
 * inserted after the command word (`record`: `--console C` only, its stdout is T; other commands:
 * their stdout is T); if @signal_after > 0 sends @sig after that many seconds (-@sig
 * to hvtrace's whole process group, its guardian included, when @sig is negative). Fills @r. */
void hv_run(struct hv_result *r, const char *const *argv, double signal_after, int sig);
/* The same, with @sig sent @after seconds after @console_text has appeared on the guest's console
 * (waited for at most 120 s): not before the guest runs, however slow the host is to start it. */
void hv_run_signal_on(struct hv_result *r, const char *const *argv, const char *console_text,
		      double after, int sig);
/* The same, with @text waited for in the file @path (an attached VM's console log) instead. */
void hv_run_signal_on_file(struct hv_result *r, const char *const *argv, const char *path,
			   const char *text, double after, int sig);
/* The same, with @text waited for in hvtrace's own trace output (`-o`, as far as hvtrace has
 * written it out): @sig sent once it traces, however long its start took. */
void hv_run_signal_on_trace(struct hv_result *r, const char *const *argv, const char *text,
			    double after, int sig);
void hv_result_free(struct hv_result *r);
/* Fills @r->lines and @r->nr_lines from @r->trace (the function lines: "task-pid [cpu] ts: f <-p"). */
void hv_parse_trace(struct hv_result *r);
/* Waits (at most 120 s, or until process @pid has ended, which is not reaped) for @text in the file
 * @path. */
void hv_wait_for_text(const char *path, const char *text, pid_t pid);
/* Waits (at most 120 s, or until process @pid has ended) until the process-directed signal @sig
 * sent to @pid is no longer pending (/proc/<pid>/status ShdPnd): a thread of @pid has taken it (a
 * signalfd read, a handler), or it was never pending. */
void hv_wait_signal_taken(pid_t pid, int sig);

/* Trace lines for @func (NULL: any) on @cpu (-1: any). */
long trace_count(const struct hv_result *r, const char *func, int cpu);
/* The number after @field on the line of hvtrace's --stats output (@err) that starts with
 * "hvtrace: stats: @line" (@field may be the start of @line itself); -1 if there is none. */
long hv_stat(const char *err, const char *line, const char *field);

/* The same on vCPU @cpu's line ("hvtrace: stats: cpu<N> events ..."). */
long hv_cpu_stat(const char *err, unsigned cpu, const char *field);

/* The whole stdout of shell command @cmd (malloc'd, the caller frees it), or NULL if it could not
 * run or did not exit with status 0. */
char *hv_command_output(const char *cmd);
/* The whole stdout of the shell command printf-formatted from @fmt (at most 2047 bytes; malloc'd,
 * the caller frees it); fails the running cmocka test, naming the command, if it does not exit 0. */
char *hv_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Occurrences of @what in @s. */
long count_text(const char *s, const char *what);
/* Number of lines of @s. */
int count_lines(const char *s);
/* Sleeps @ms milliseconds. */
void sleep_ms(int ms);

#endif
