#include "host/cli/help.h"

#include <errno.h>
#include <string.h>

static const char *const commands[] = {"run", "attach", "record", "report", "list-functions"};

/* Options of session_usage that a command does not take (by long name). */
static const char *const not_run[] = {"connect", "qmp", "pid", "vmm", NULL};
static const char *const not_attach[] = {"qemu", "accel", "machine", "kernel", "initrd", "append",
					 "smp", "mem", NULL};
/* ... and the only ones list-functions of a running VM takes */
static const char *const list_only[] = {"connect", "qmp", "pid", "vmm", "system-map", "gdb-memory",
					 NULL};

/* report's options (they are not run's, so session_usage describes only its synopsis) */
static const char report_options[] =
	"\n"
	"report options:\n"
	"  -i, --input FILE         the trace.dat to read (default trace.dat)\n"
	"  -f, --format FMT         text, graph, json (Chrome trace events), jsonl (JSON Lines) or\n"
	"                           folded, as run writes them (default: graph when the file holds\n"
	"                           function_graph events, else text)\n"
	"      --funcgraph-retval   graph: print return values\n"
	"      --funcgraph-retval-hex\n"
	"                           graph: print return values, all in hex\n"
	"      --funcgraph-tail     graph: name the function on closing braces\n"
	"      --exits              per traced function: calls, total, guest and host time, VM exits\n"
	"                           by reason, from a function_graph recording and its host file\n"
	"                           (record --host)\n"
	"      --host-input FILE    --exits: the host file (default: FILE-host.dat beside -i FILE.dat)\n";

bool help_known(const char *cmd)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmd, commands[i]))
			return true;
	return false;
}

static bool listed(const char *const *v, const char *name, size_t len)
{
	for (; *v; v++)
		if (strlen(*v) == len && !strncmp(*v, name, len))
			return true;
	return false;
}

/* Whether @cmd takes the option described by @line ("  -p, --tracer NAME ..."). */
static bool takes(const char *cmd, const char *line)
{
	const char *name = strstr(line, "--");
	size_t len;

	if (!name)
		return false;
	name += 2;
	len = strcspn(name, " \n=");
	if (!strcmp(cmd, "run"))
		return !listed(not_run, name, len);
	if (!strcmp(cmd, "attach"))
		return !listed(not_attach, name, len);
	if (!strcmp(cmd, "list-functions"))
		return listed(list_only, name, len);
	return !strcmp(cmd, "record"); /* every run option (its --format: tracedat only) */
}

/* Whether the synopsis line @line ("usage: hvtrace run ..." or "       hvtrace attach ...") is @cmd's. */
static bool synopsis_of(const char *cmd, const char *line)
{
	const char *p = strstr(line, "hvtrace ");
	size_t n = strlen(cmd);

	return p && !strncmp(p + 8, cmd, n) && (p[8 + n] == ' ' || p[8 + n] == '\n');
}

int help_print(FILE *out, const char *usage, const char *cmd)
{
	const char *p = usage, *heading = NULL;
	size_t heading_len = 0;
	bool in_synopsis = true, keep = false, first = true;

	errno = 0;
	if (!cmd || !help_known(cmd))
		return fputs(usage, out) < 0 ? -(errno ? errno : EIO) : 0;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
		bool cont = len > 20 && !strncmp(p, "                    ", 20);

		if (len == 1) { /* the blank line after the synopses and between sections */
			in_synopsis = false;
			keep = false;
		} else if (in_synopsis) {
			if (!cont)
				keep = synopsis_of(cmd, p);
			if (keep && !cont && first) {
				fprintf(out, "usage: %.*s", (int)(len - 7), p + 7);
				first = false;
			} else if (keep) {
				fwrite(p, 1, len, out);
			}
		} else if (p[0] != ' ') {
			/* a heading ("run options:") or the closing note */
			if (p[len - 2] == ':') {
				heading = p;
				heading_len = len;
				keep = false;
			} else {
				keep = strcmp(cmd, "report") && strcmp(cmd, "list-functions");
				if (keep)
					fprintf(out, "\n%.*s", (int)len, p);
			}
		} else if (!cont) {
			keep = takes(cmd, p);
			if (keep && heading) {
				fprintf(out, "\n%.*s", (int)heading_len, heading);
				heading = NULL;
			}
			if (keep)
				fwrite(p, 1, len, out);
		} else if (keep) {
			fwrite(p, 1, len, out);
		}
		p += len;
	}
	if (!strcmp(cmd, "report"))
		fputs(report_options, out);
	return ferror(out) ? -(errno ? errno : EIO) : 0;
}
