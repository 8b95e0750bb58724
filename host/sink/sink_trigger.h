/* The trace lines of --trigger, around any other sink: the kernel's "<stack trace>" block for a
 * stacktrace trigger's record, and for a snapshot trigger's mark a copy of the output written so
 * far to OUTPUT.snapshot-N. Every other record goes to the sink it wraps, unchanged. */
#ifndef HVT_SINK_TRIGGER_H
#define HVT_SINK_TRIGGER_H

#include "host/sink/sink.h"

struct sink_trigger {
	struct sink_ops ops;	      /* the wrapped sink's ops point here (first member) */
	const struct sink_ops *inner; /* the wrapped sink's own */
	const char *output;	      /* the -o file snapshots copy, or NULL */
	unsigned long long snapshots; /* snapshot files written */
	bool snapshot_failed;	      /* one line on stderr said why */
};

/* Wraps the initialized sink @s (in place: same struct, same state) so that it prints stacktrace
 * blocks and takes snapshots of @output (the -o path; NULL if none). @t must outlive @s. */
void sink_trigger_wrap(struct sink *s, struct sink_trigger *t, const char *output);

/* "<context><stack trace>\n" then " => sym+0xoff/0xsize\n" for each address of @frames that
 * @syms names (the others, not code the guest's symbols know, are left out). Returns the length.
 * Pure. */
int sink_stack_format(char *buf, size_t len, const struct hvt_record *r, const uint64_t *frames,
		      size_t nr, const struct vmi_symtab *syms);

/* The file snapshot @n of @output is written to: "OUTPUT.snapshot-N". */
int sink_snapshot_name(char *buf, size_t len, const char *output, unsigned long long n);

#endif
