/* ftrace's hist trigger as --trigger 'FUNC:hist:keys=...[:vals=...][:sort=...][:size=N][:name=N]':
 * its parser, and the "trigger info" text the kernel prints for it (event_hist_trigger_print). */
#ifndef HVT_HIST_SPEC_H
#define HVT_HIST_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HIST_KEYS_MAX	  3 /* the kernel's TRACING_MAP_KEYS_MAX */
#define HIST_VALS_MAX	  3 /* values besides hitcount */
#define HIST_SORT_MAX	  2 /* "Too many sort fields (Max = 2)" */
#define HIST_SIZE_DEFAULT 2048
#define HIST_SIZE_MIN	  128	 /* 2^TRACING_MAP_BITS_MIN */
#define HIST_SIZE_MAX	  131072 /* 2^TRACING_MAP_BITS_MAX */

/* Where a field's value comes from in a record. */
enum hist_src {
	HIST_SRC_HITCOUNT,  /* 1 per event (values only) */
	HIST_SRC_PID,	    /* common_pid */
	HIST_SRC_CPU,	    /* common_cpu */
	HIST_SRC_IP,	    /* ip: the function's address (the function event's field) */
	HIST_SRC_PARENT_IP, /* parent_ip: the return address (the function event's field) */
	HIST_SRC_DURATION,  /* duration: ns from the call to its return (hvtrace's own: needs
			     * returns, -r or function_graph; the histogram then counts returns) */
	HIST_SRC_EVENT,	    /* a numeric field of the function's -e event (bound later) */
	HIST_SRC_STACKTRACE, /* stacktrace (common_stacktrace since 6.5): the guest's call chain at
			      * the call, a key only (trap probes: the host walks the stack at the
			      * breakpoint) */
};

/* A field's modifier: .execname .hex .sym .sym-offset .log2 .buckets=N .usecs */
enum hist_mod {
	HIST_MOD_NONE,
	HIST_MOD_EXECNAME,
	HIST_MOD_HEX,
	HIST_MOD_SYM,
	HIST_MOD_SYM_OFFSET,
	HIST_MOD_LOG2,
	HIST_MOD_BUCKETS,
	HIST_MOD_USECS
};

struct hist_field {
	char name[64]; /* the field's name as given, without its modifier */
	enum hist_src src;
	enum hist_mod mod;
	uint64_t buckets; /* .buckets=N */
	/* HIST_SRC_EVENT, set by the binding (host/tap/hist): the field's status byte in the
	 * payload, its size in bytes, signedness */
	uint32_t ev_offset;
	uint8_t ev_size;
	bool ev_signed;
};

/* One sort key: hitcount, a key or a value. */
struct hist_sort {
	bool is_key; /* else a value: @idx 0 is hitcount, 1.. the vals */
	unsigned idx;
	bool descending;
};

struct hist_spec {
	char func[128]; /* the traced function (or FUNC+0xOFF, an -e event inside it) */
	char name[64];	/* :name=, "" if none */
	struct hist_field keys[HIST_KEYS_MAX];
	unsigned nr_keys;
	struct hist_field vals[HIST_VALS_MAX];
	unsigned nr_vals;
	struct hist_sort sort[HIST_SORT_MAX];
	unsigned nr_sort;
	unsigned size; /* entries at most: a power of two, HIST_SIZE_MIN..HIST_SIZE_MAX */
};

/* Whether @text ("FUNC:CMD...") is a hist trigger (CMD is "hist"). Pure. */
bool hist_is_trigger(const char *text);

/* Parses "FUNC:hist:ATTR[:ATTR...]" (keys= or key=, vals= or values=, sort=, size=, name=). 0, or
 * -EINVAL with "--trigger 'TEXT': REASON" in @err, REASON naming the part that is wrong. Fields
 * other than common_pid, common_cpu, ip, parent_ip, duration and hitcount are taken as the -e
 * event's (HIST_SRC_EVENT), checked when bound. Pure. */
int hist_parse(const char *text, struct hist_spec *h, char *err, size_t errlen);

/* The index of @h's stacktrace key, or -1 if it has none. Pure. */
int hist_stack_key(const struct hist_spec *h);

/* Whether @h needs a call's return (a duration key or value). Pure. */
bool hist_wants_returns(const struct hist_spec *h);

/* The kernel's trigger line for @h: "hist:[NAME:]keys=...:vals=hitcount[,...]:sort=...:size=N
 * [active]" (no newline). Returns the length (snprintf's). Pure. */
int hist_spec_info(char *buf, size_t len, const struct hist_spec *h);

#endif
