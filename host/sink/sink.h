/* Sinks turn the record stream into an output format. They run on the writer thread only and never reach
 * back into a target. */
#ifndef HVT_SINK_H
#define HVT_SINK_H

#include "host/trace/fevent.h"
#include "host/trace/record.h"
#include "vmi/vmi_symtab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct sink;
struct probe;

/* One record as the writer hands it to its sink and its tap: what the record needs looked up, looked
 * up once (sink_lookup_fn). */
struct sink_rec {
	const struct hvt_record *r;
	const uint8_t *payload;	    /* its payload (HVT_REC_EVENT, _RETURN_EVENT, _STACK), or NULL */
	const struct fe_spec *spec; /* what formats the payload: the -e spec of the function for
				     * HVT_REC_EVENT and _EVENT_ALONE, its typed return spec for
				     * HVT_REC_RETURN_EVENT; NULL for other records or when none */
	const struct probe *probe;  /* the probe at r->ip for entries, returns and events; NULL when
				     * none or no probes are known (a trace.dat read back) */
};

/* Fills @rec->spec and @rec->probe for @rec->r (of any type). One lookup; no allocation; the
 * writer thread. */
typedef void (*sink_lookup_fn)(const void *ctx, struct sink_rec *rec);

/* What a sink does with each type of record, on perf's struct perf_tool model: the writer looks a
 * record up once (struct sink_rec) and sink_record hands it to the callback of its type, the one
 * place that tells record types apart; a sink fills only the callbacks of the records it writes
 * (NULL: those records are skipped). Writer thread. */
struct sink_ops {
	void (*begin)(struct sink *s); /* header */
	/* HVT_REC_ENTRY, a traced function entered. @next is the following record of the same vCPU
	 * if already known (NULL otherwise; only for a sink with @lookahead), looked up as @rec is.
	 * Returns how many records it consumed: 1, or 2 when it used @next too. */
	unsigned (*entry)(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next);
	/* HVT_REC_EVENT, an entry carrying its -e fields (@rec->payload per @rec->spec), as @entry;
	 * NULL: @entry takes it */
	unsigned (*event)(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next);
	/* HVT_REC_EVENT_ALONE: the -e fields of a call the tracer does not trace */
	void (*event_alone)(struct sink *s, const struct sink_rec *rec);
	/* HVT_REC_RETURN: a traced function returned (RAX in r->value, r->duration) */
	void (*ret)(struct sink *s, const struct sink_rec *rec);
	/* HVT_REC_RETURN_EVENT: a return probe's return, with typed fields; NULL: @ret takes it */
	void (*ret_event)(struct sink *s, const struct sink_rec *rec);
	/* HVT_REC_LOST: r->value events of vCPU r->cpu were lost just before */
	void (*lost)(struct sink *s, const struct hvt_record *r);
	/* HVT_REC_STACK, HVT_REC_SNAPSHOT: --trigger's marks (host/sink/sink_trigger.c) */
	void (*stack)(struct sink *s, const struct sink_rec *rec);
	void (*snapshot)(struct sink *s, const struct hvt_record *r);
	void (*end)(struct sink *s); /* trailer */
	bool lookahead; /* wants @next for entries (holds them back briefly until it is known) */
};

/* Hands @rec (and @next, for entries) to @s's callback of its type. Returns how many records
 * were consumed: 1, or 2 when the callback used @next too. Writer thread. */
unsigned sink_record(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next);

/* What a tap (host/tap: the profile, the expectations) does with each type of record it watches
 * beside the sink, as a sink's callbacks; NULL: that type is not watched. */
struct sink_tap_ops {
	/* HVT_REC_ENTRY, _EVENT, _EVENT_ALONE: a call seen (an -e event outside function_graph's
	 * graph is a call all the same) */
	void (*call)(void *ctx, const struct sink_rec *rec);
	void (*ret)(void *ctx, const struct sink_rec *rec);	  /* HVT_REC_RETURN */
	void (*ret_event)(void *ctx, const struct sink_rec *rec); /* _RETURN_EVENT; NULL: @ret */
};

/* Hands @rec to the callback of its type in @ops, with @ctx. Writer thread. */
void sink_tap_record(const struct sink_tap_ops *ops, void *ctx, const struct sink_rec *rec);

/* Whether @next is the return of entry @rec: the same function, depth and task (a leaf call whose
 * return is the next record of its vCPU). Pure. */
bool sink_next_returns(const struct sink_rec *rec, const struct sink_rec *next);

/* The symbols of the addresses a sink named last (the writer names the same few thousand sites and
 * call sites millions of times): direct-mapped by address, filled by sink_symbol. */
#define SINK_SYM_CACHE_BITS 13
struct sink_sym_slot {
	uint64_t addr;
	uint32_t idx;	    /* 1 + the symbol's index in the table, UINT32_MAX: in no symbol, 0: empty */
	uint16_t plain_len; /* the name's length when it needs no escaping (escape_str), else 0 */
};

struct sink {
	const struct sink_ops *ops;
	FILE *out;			/* borrowed */
	const struct vmi_symtab *syms;	/* borrowed, for naming addresses */
	unsigned nr_cpus;
	unsigned long long written;	/* records written (a leaf line holds two) */
	unsigned long long lost;	/* set by the writer before end(): lost as the host knows */
	unsigned long long guest_lost;	/* set before end(): what the guest says it could not
					 * record (stub rings), printed as guest-reported */
	unsigned long long not_written;	/* set before end(): events the host had but did not write
					 * (the trace was cut short: writer_cut); part of @lost */
	int err; /* errno of the first failed write to @out, 0 if none (sink_write) */
	unsigned long long task_switches; /* function_graph: task-switch markers printed */
	bool graph_retval;		/* function_graph: print return values */
	bool graph_tail;		/* function_graph: name the function on closing braces */
	void *priv;			/* the sink's own state */
	const char *tracer;		/* for the header; "function" unless set */
	bool graph_retval_hex;		/* function_graph: every return value in hex */
	uint64_t irq_lo, irq_hi;	/* the guest's .irqentry.text [lo, hi), 0/0 if unknown */
	/* set before begin() by a reader of a finished trace (report): the header's counts */
	bool counts_known;
	unsigned long long hdr_entries, hdr_written;
	struct sink_sym_slot sym_cache[1u << SINK_SYM_CACHE_BITS]; /* sink_symbol's; cleared by setup */
};

/* Guest-supplied text (task names, strings, symbols) is escaped (host/trace/escape.h) in every
 * line; function_graph indents at most this many levels (the host's shadow-stack bound). */
#define SINK_GRAPH_MAX_DEPTH 128

/* Clears @s and sets what every sink has: its @ops, @out (borrowed), @syms (borrowed) and @nr_cpus.
 * The sink's init then adds its own. Main thread. */
void sink_setup(struct sink *s, const struct sink_ops *ops, FILE *out, const struct vmi_symtab *syms,
		unsigned nr_cpus);

/* Whether @s traces function_graph (s->tracer, which report and run set after init, before
 * begin()). Pure. */
bool sink_graph_tracer(const struct sink *s);

/* Writes @len bytes of @buf to s->out, unless a write already failed: the first failure's errno
 * goes to s->err and every later write is skipped. Sinks write only through these three. Writer
 * thread. */
void sink_write(struct sink *s, const char *buf, size_t len);

/* The same for a printf-formatted text. */
void sink_printf(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Flushes s->out (at the end of the trace); a failure goes to s->err as for sink_write. */
void sink_flush(struct sink *s);

/* A write of @s's output failed with errno @err (0: EIO): kept in s->err if it is the first, and
 * the run asked to end (out_fail_raise). For sinks that write elsewhere than through sink_write
 * (trace.dat's page files). Writer thread, or the main thread at the end. */
void sink_fail(struct sink *s, int err);

/* ftrace's function tracer text as Linux 6.x prints it with irq-info off (the kernel's header and
 * legend; "CPU:N [LOST M EVENTS]" lines): "<task>-<pid> [<cpu>]  <ts>: <func> <-<parent>", and for
 * function-based events "<task>-<pid> [<cpu>]  <ts>: <parent>-><func>(name=value, ...)". */
void sink_function_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus);

/* The kernel's context columns (trace_print_context, irq-info off): "%16s-%-7d [%03d]  %5lu.%06lu: ",
 * task, pid, CPU, timestamp rounded to the microsecond as ns2usecs(). Returns the length. Pure. */
int sink_context(char *buf, size_t len, const struct hvt_record *r);

/* The kernel's lost-events line for HVT_REC_LOST @r: "CPU:%d [LOST %lu EVENTS]\n". Pure. */
int sink_lost_format(char *buf, size_t len, const struct hvt_record *r);

/* Formats @r as one function-tracer line (with '\n') into @buf. Returns the length. Pure. */
int sink_function_format(char *buf, size_t len, const struct hvt_record *r,
			 const struct vmi_symtab *syms);

/* A return probe's line: "<task>-<pid> [<cpu>] <ts>: r_<func>: (<caller+off/size> <- <func>) ret=0x..
 * duration=<us>", the typed fields from @payload per @spec when given. Returns the length. Pure. */
int sink_return_format(char *buf, size_t len, const struct hvt_record *r, const struct fe_spec *spec,
		       const uint8_t *payload, const struct vmi_symtab *syms);

/* The part of a return probe's line after the timestamp, without the duration:
 * "r_<func>: (<caller+off/size> <- <func>) ret=0x..". Returns the length. Pure. */
int sink_return_body(char *buf, size_t len, const struct hvt_record *r, const struct fe_spec *spec,
		     const uint8_t *payload, const struct vmi_symtab *syms);

/* Formats event @r with its captured @payload per @spec (seed 003's line). Returns the length. Pure. */
int sink_event_format(char *buf, size_t len, const struct hvt_record *r, const struct fe_spec *spec,
		      const uint8_t *payload, const struct vmi_symtab *syms);

/* ftrace's function_graph text as Linux 6.x prints it: per-vCPU column, nesting by indentation, leaf
 * calls on one line, durations with overhead marks, the context-switch block on a pid change of a
 * vCPU, "==========>" / "<==========" around calls into [irq_lo, irq_hi), "CPU:N [LOST M EVENTS]".
 * @retval adds return values (errno values in decimal unless graph_retval_hex), @tail names the
 * function on closing braces. Returns 0 or -1 (no memory). */
int sink_graph_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus,
		    bool retval, bool tail);

/* One function_graph line (with '\n') for entry or return @r; for an entry with its return @ret, the
 * one-line leaf form. Returns the length. Pure. */
int sink_graph_format(char *buf, size_t len, const struct sink *s, const struct hvt_record *r,
		      const struct hvt_record *ret);

/* The duration column, e.g. "+ 12.345 us   " (mark, value, unit, padding). Returns the length. Pure. */
int sink_graph_duration(char *buf, size_t len, uint64_t ns);

/* ftrace's overhead mark for a duration: ' ', '+' (>10us), '!' (>100us), '#', '*', '@', '$' (>1s). */
char sink_graph_mark(uint64_t ns);

/* Chrome trace-event JSON (Perfetto's UI, chrome://tracing, speedscope): a track per vCPU and per
 * guest task, function_graph calls as nested slices, -e events and lost events as instants, return
 * values as args (host/sink/sink_chrome.c says how). s->tracer ("function_graph" or not) must be set
 * before begin(). Returns 0 or -1 (no memory). */
int sink_chrome_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus);

/* The live trace as JSON Lines, one object per record with a "type" (begin, entry, exit, event,
 * lost, end), every guest string JSON-escaped (host/sink/sink_json.c says how). s->tracer must be
 * set before begin(). */
void sink_json_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus);

/* Collapsed stacks for flame graphs, "comm;f;g;h N" lines: with function_graph N is the wall time
 * in ns the task spent in that stack itself, else the hits of "comm;caller;function"
 * (host/sink/sink_folded.c says how). s->tracer must be set before begin(). Returns 0 or -1 (no
 * memory). */
int sink_folded_init(struct sink *s, FILE *out, const struct vmi_symtab *syms, unsigned nr_cpus);

/* Writes line @buf (of @size bytes, @n as its formatter returned) to @s's output; a line cut short
 * still ends with '\n'. Writer thread. */
void sink_write_line(struct sink *s, char *buf, size_t size, int n);

/* The trailer of the text sinks: records written, events lost as the host knows it, and what the
 * guest reported lost and (of the lost) what was not written when the trace was cut short, each
 * when it is not 0. From end(). (The function tracer's end() prints the
 * kernel's "# entries-in-buffer/entries-written: a/b   #P:n" line before it in a live trace, whose
 * header could not hold it.) */
void sink_trailer(struct sink *s);

/* Writes the name of the function holding @addr (escaped; "0x<addr>" if none) into @buf. Pure. */
void sink_symbol_name(char *buf, size_t len, uint64_t addr, const struct vmi_symtab *syms);

/* The symbol of s->syms holding @addr (vmi_symtab_lookup), through @s's cache: the table must not
 * change while the sink runs. NULL when none. Writer thread (the cache is the sink's). */
const struct vmi_sym *sink_symbol(struct sink *s, uint64_t addr);

#endif
