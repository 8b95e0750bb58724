#include "host/sink/sink_trigger.h"

#include "host/trace/escape.h"
#include "host/trace/trigger.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct sink_trigger *of(const struct sink *s)
{
	return (struct sink_trigger *)((char *)s->ops - offsetof(struct sink_trigger, ops));
}

int sink_stack_format(char *buf, size_t len, const struct hvt_record *r, const uint64_t *frames,
		      size_t nr, const struct vmi_symtab *syms)
{
	size_t n;

	if (!len)
		return 0;
	n = (size_t)sink_context(buf, len, r);
	if (n >= len)
		return (int)len - 1;
	n += (size_t)snprintf(buf + n, len - n, "<stack trace>\n");
	for (size_t i = 0; i < nr && n < len; i++) {
		const struct vmi_sym *sym = syms ? vmi_symtab_lookup(syms, frames[i]) : NULL;

		if (!sym)
			continue;
		n += (size_t)snprintf(buf + n, len - n, " => ");
		if (n >= len)
			break;
		n += escape_str(buf + n, len - n, sym->name, SIZE_MAX);
		if (n >= len)
			break;
		n += (size_t)snprintf(buf + n, len - n, "+0x%" PRIx64 "/0x%" PRIx64 "\n",
				      frames[i] - sym->addr, sym->size);
	}
	return (int)(n < len ? n : len - 1);
}

int sink_snapshot_name(char *buf, size_t len, const char *output, unsigned long long n)
{
	return snprintf(buf, len, "%s.snapshot-%llu", output, n);
}

/* Copies the first @size bytes of @from to @to. 0 or -errno. */
static int copy_prefix(const char *from, const char *to, long size)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, ret = 0;
	char buf[65536];

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		ret = -errno;
		goto done;
	}
	while (size > 0) {
		ssize_t k = read(in, buf, size < (long)sizeof(buf) ? (size_t)size : sizeof(buf));

		if (k <= 0) {
			ret = k < 0 ? -errno : -EIO;
			break;
		}
		if (write(out, buf, (size_t)k) != k) {
			ret = -errno ? -errno : -EIO;
			break;
		}
		size -= k;
	}
	if (out >= 0 && close(out) < 0 && !ret)
		ret = -errno;
done:
	close(in);
	return ret;
}

/* A snapshot mark: the output so far copied to OUTPUT.snapshot-N. */
static void snapshot(struct sink *s, const struct hvt_record *r)
{
	struct sink_trigger *t = of(s);
	char path[4096];
	long size;
	int ret = -EINVAL;

	sink_flush(s);
	size = s->out ? ftell(s->out) : -1;
	if (t->output && size >= 0 &&
	    sink_snapshot_name(path, sizeof(path), t->output, r->value) < (int)sizeof(path))
		ret = copy_prefix(t->output, path, size);
	if (ret == 0) {
		t->snapshots++;
	} else if (!t->snapshot_failed) {
		t->snapshot_failed = true;
		fprintf(stderr, "hvtrace: --trigger snapshot %llu of %s: %s\n",
			(unsigned long long)r->value, t->output ? t->output : "the output",
			strerror(-ret));
	}
}

/* A stacktrace trigger's record: the "<stack trace>" block of its frames. */
static void stack(struct sink *s, const struct sink_rec *rec)
{
	const struct hvt_record *r = rec->r;
	char buf[TRIGGER_MAX_FRAMES * 200 + 256];
	size_t nr = r->value / 8;
	uint64_t frames[TRIGGER_MAX_FRAMES];
	int n;

	if (nr > TRIGGER_MAX_FRAMES)
		nr = TRIGGER_MAX_FRAMES;
	if (rec->payload)
		memcpy(frames, rec->payload, nr * 8);
	else
		nr = 0;
	n = sink_stack_format(buf, sizeof(buf), r, frames, nr, s->syms);
	sink_write(s, buf, (size_t)n);
}

void sink_trigger_wrap(struct sink *s, struct sink_trigger *t, const char *output)
{
	t->inner = s->ops;
	/* the wrapped sink's callbacks, with the marks' own (a mark is no return: a sink that looks
	 * ahead for one never takes a mark with an entry) */
	t->ops = *s->ops;
	t->ops.stack = stack;
	t->ops.snapshot = snapshot;
	t->output = output;
	t->snapshots = 0;
	t->snapshot_failed = false;
	s->ops = &t->ops;
}
