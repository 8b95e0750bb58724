#include "host/session/out_paths.h"
#include "host/hosttrace/host_rec.h"
#include "host/session/session_file.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT_PATHS_MAX 24 /* the session's paths, session files included (more files: unchecked) */

/* One path of the session, resolved. */
struct out_path {
	const char *flag; /* "-o", "--console", "the guest", ... */
	const char *path; /* NULL: stdout (the stream the command writes when no file is named) */
	bool output;
	bool exists;
	struct stat st;	      /* when it exists */
	char where[PATH_MAX]; /* when it does not: the real parent directory and the name */
};

struct out_set {
	struct out_path p[OUT_PATHS_MAX];
	unsigned n;
	char host_path[PATH_MAX]; /* record --host's file beside -o */
};

/* Resolves @q: the file it names (or stdout), or where it would be created. */
static void resolve(struct out_path *q)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash, *name;

	if (!q->path) {
		q->exists = fstat(STDOUT_FILENO, &q->st) == 0;
		return;
	}
	q->exists = stat(q->path, &q->st) == 0;
	if (q->exists)
		return;
	slash = strrchr(q->path, '/');
	name = slash ? slash + 1 : q->path;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - q->path) + (slash == q->path) : 1,
		 slash ? q->path : ".");
	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	if (snprintf(q->where, sizeof(q->where), "%s/%s", real, name) >= (int)sizeof(q->where))
		snprintf(q->where, sizeof(q->where), "%s", q->path); /* too long to create anyway */
}

static void add(struct out_set *set, const char *flag, const char *path, bool output)
{
	if (set->n == OUT_PATHS_MAX)
		return;
	set->p[set->n] = (struct out_path){.flag = flag, .path = path, .output = output};
	resolve(&set->p[set->n]);
	set->n++;
}

/* The paths of @s's command. */
static void collect(struct out_set *set, const struct session *s)
{
	set->n = 0;
	if (s->cmd == CMD_REPORT) {
		add(set, "stdout (the report)", NULL, true);
		add(set, "-i", s->input, false);
		if (s->host_input)
			add(set, "--host-input", s->host_input, false);
		else if (s->report_exits && s->input &&
			 host_rec_path(s->input, set->host_path, sizeof(set->host_path)) == 0)
			add(set, "the host's file", set->host_path, false);
		return;
	}
	add(set, s->output ? "-o" : "stdout (the trace)", s->output, true);
	add(set, s->console ? "--console" : "stdout (the console)", s->console, true);
	if (s->summary)
		add(set, "--summary", s->summary, true);
	if (s->junit)
		add(set, "--junit", s->junit, true);
	if (s->host && s->output &&
	    host_rec_path(s->output, set->host_path, sizeof(set->host_path)) == 0)
		add(set, "the host's file (record --host)", set->host_path, true);
	if (s->guest)
		add(set, "the guest", s->guest, false);
	if (s->kernel)
		add(set, "--kernel", s->kernel, false);
	if (s->initrd)
		add(set, "--initrd", s->initrd, false);
	if (s->system_map)
		add(set, "--system-map", s->system_map, false);
	for (size_t i = 0; s->words && i < s->words->nr_owned; i++) {
		const char *f = s->words->origin[i].file;

		if (f && strcmp(f, "<stdin>") && (i == 0 || f != s->words->origin[i - 1].file))
			add(set, "--session", f, false);
	}
}

/* Whether @a and @b are one file. */
static bool same(const struct out_path *a, const struct out_path *b)
{
	if (a->exists != b->exists)
		return false;
	if (a->exists)
		return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
	return !strcmp(a->where, b->where);
}

/* @q as a message names it: "-o F", "stdout". */
static const char *name(const struct out_path *q, char *buf, size_t len)
{
	if (!q->path)
		return q->flag;
	snprintf(buf, len, "%s %s", q->flag, q->path);
	return buf;
}

/* Two paths of one file where that loses data: any pair but stdout written by both -o and
 * --console (one stream) and a character device (a terminal, /dev/null: nothing to overwrite). */
static int check_alias(const struct out_set *set, char *err, size_t errlen)
{
	char n1[PATH_MAX + 64], n2[PATH_MAX + 64];

	for (unsigned i = 0; i < set->n; i++) {
		for (unsigned j = i + 1; j < set->n; j++) {
			const struct out_path *a = &set->p[i], *b = &set->p[j];

			if ((!a->output && !b->output) || !same(a, b))
				continue;
			if ((!a->path && !b->path) || (a->exists && S_ISCHR(a->st.st_mode)))
				continue;
			msg_fmt(err, errlen, "%s and %s are the same file: %s",
				 name(a, n1, sizeof(n1)), name(b, n2, sizeof(n2)),
				 a->output && b->output ? "one output would overwrite the other"
							: "the output would overwrite the input");
			return -EINVAL;
		}
	}
	return 0;
}

/* @q's real path (the file it names, links resolved) in @buf, or where it would be created. */
static const char *full_path(const struct out_path *q, char *buf)
{
	if (q->exists && q->path && realpath(q->path, buf))
		return buf;
	return q->where;
}

/* --trigger @func:snapshot copies -o (the set's first path) to FILE.snapshot-N beside it: -o must
 * be a regular file (a device, a FIFO has no "so far" to copy and no place beside it), and no
 * other path of the session may be one of the copies. 0 or -EINVAL with @err. */
static int check_snapshots(const struct out_set *set, const char *func, char *err, size_t errlen)
{
	static char out[PATH_MAX], other[PATH_MAX], n[PATH_MAX + 64];
	const struct out_path *o = &set->p[0];
	size_t len;

	if (o->exists && !S_ISREG(o->st.st_mode)) {
		msg_fmt(err, errlen,
			 "--trigger %s:snapshot: -o %s is not a regular file (snapshots are copies "
			 "of the -o file beside it, FILE.snapshot-N)",
			 func, o->path);
		return -EINVAL;
	}
	snprintf(out, sizeof(out), "%s.snapshot-", full_path(o, other));
	len = strlen(out);
	for (unsigned i = 1; i < set->n; i++) {
		const struct out_path *q = &set->p[i];

		if (q->path && !strncmp(full_path(q, other), out, len)) {
			msg_fmt(err, errlen,
				 "--trigger %s:snapshot: its copies of -o %s (%s.snapshot-N) would "
				 "overwrite %s",
				 func, o->path, o->path, name(q, n, sizeof(n)));
			return -EINVAL;
		}
	}
	return 0;
}

/* Whether @q could be opened for writing, nothing created or truncated: 0 or -errno. */
static int creatable(const struct out_path *q)
{
	char dir[PATH_MAX];
	const char *slash;
	struct stat st;
	int fd;

	if (q->exists && S_ISDIR(q->st.st_mode))
		return -EISDIR;
	if (q->exists && S_ISREG(q->st.st_mode)) {
		fd = open(q->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	}
	if (q->exists) /* a device or FIFO: opened for real later (a FIFO would block now) */
		return access(q->path, W_OK) ? -errno : 0;
	slash = strrchr(q->where, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash == q->where ? 1 : (int)(slash - q->where),
		 q->where);
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return access(dir, W_OK | X_OK) ? -errno : 0;
}

int out_paths_check(const struct session *s, char *err, size_t errlen)
{
	static struct out_set set; /* large: not on the stack; main thread only */
	int e;

	collect(&set, s);
	for (unsigned i = 0; i < set.n; i++) {
		const struct out_path *q = &set.p[i];

		if (!q->output || !q->path)
			continue;
		e = creatable(q);
		if (e) {
			msg_fmt(err, errlen, "%s %s: %s", q->flag, q->path, strerror(-e));
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < s->nr_triggers; i++) {
		if (s->triggers[i].cmd != TRIG_SNAPSHOT || !s->output)
			continue;
		if (check_snapshots(&set, s->triggers[i].func, err, errlen) < 0)
			return -EINVAL;
		break; /* the copies are the same whichever trigger makes them */
	}
	return check_alias(&set, err, errlen);
}
