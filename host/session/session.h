/* One model of a trace session: the knobs ftrace users know from tracefs, filled by the CLI's
 * parser (host/cli/session_args.h, with session files) and read by the pipeline and the backends.
 */
#ifndef HVT_SESSION_H
#define HVT_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "host/tap/expect.h"
#include "host/trace/fevent.h"
#include "host/trace/rec_filter.h"
#include "host/trace/hist_spec.h"
#include "host/trace/trigger.h"

struct session_words;
struct sink_format;

enum session_cmd {
	CMD_NONE,
	CMD_RUN,
	CMD_ATTACH,
	CMD_LIST_FUNCTIONS,
	CMD_REPORT,
	CMD_HELP,
	CMD_VERSION
};

enum tracer_kind { TRACER_NOP, TRACER_FUNCTION, TRACER_FUNCTION_GRAPH };

/* How sites are patched: INT3 (a VM exit per event), CALL into the in-guest stub (no exit), or the
 * stub wherever the target and the probe allow it. */
enum probe_kind { PROBE_TRAP, PROBE_STUB, PROBE_AUTO };

/* The VMM that runs the guest: hvtrace's own (an ELF guest, `run --kernel`), or QEMU. */
enum vmm_kind { VMM_EMBEDDED, VMM_QEMU };

/* How `attach` (and `list-functions` of a running VM) finds the VM: exactly one of a libvirt
 * domain (at @uri), a QMP socket, a VMM process. */
struct attach_target {
	const char *domain; /* NAME: libvirt domain name */
	const char *uri;    /* -c: libvirt URI (default $LIBVIRT_DEFAULT_URI, qemu:///system) */
	const char *qmp;    /* --qmp: QMP socket of a bare QEMU */
	int pid;	    /* --pid: the VMM process (QEMU: its -qmp on its command line) */
	bool generic;	    /* --vmm generic: any KVM VMM by pid, nothing asked of it (issue 41) */
	bool vmm_given;	    /* --vmm was given (qemu: never the generic backend) */
};

struct session {
	enum session_cmd cmd;
	enum tracer_kind tracer; /* current_tracer */
	char **filter;		 /* set_ftrace_filter globs (argv strings, borrowed) */
	size_t nr_filter;
	char **notrace; /* set_ftrace_notrace globs */
	size_t nr_notrace;
	char **graph; /* set_graph_function globs */
	size_t nr_graph;
	unsigned max_depth; /* max_graph_depth, 0 = no limit */
	bool funcgraph_retval;
	bool funcgraph_retval_hex; /* every return value in hex (implies funcgraph_retval) */
	bool funcgraph_tail;
	bool profile;		/* per-function summary on stderr at the end */
	bool tracer_given;	/* -p was given (with only -e, the default tracer is nop) */
	struct fe_spec *events; /* -e function-based events, parsed */
	size_t nr_events;
	struct fe_spec *rprobes; /* -r return probes: func, or func(type name) of RAX */
	size_t nr_rprobes;
	const char *output;  /* trace file, NULL = stdout */
	const char *console; /* guest console file, NULL = stdout */
	const char *guest;   /* guest ELF */
	unsigned smp;
	unsigned mem_mb;
	double timeout;	 /* seconds, 0 = none */
	double duration; /* trace for this long, then detach and let the guest run on; 0 = none */
	unsigned buffer_size_kb; /* per vCPU */
	bool buffer_size_set;	 /* --buffer-size-kb given: the stub's rings must get it */
	bool stats;
	enum probe_kind probe;	    /* --probe */
	bool probe_given; /* --probe was given (the generic backend: stub probes without it) */
	struct rec_filter tasks;    /* -P, --comm, --cpu: which guest tasks and CPUs are traced */
	struct ef_filter *efilters; /* --filter-event, parsed (bound to their -e by the pipeline) */
	size_t nr_efilters;
	struct trigger *triggers; /* --trigger, parsed, in the order given */
	size_t nr_triggers;
	struct hist_spec *hists; /* --trigger 'FUNC:hist:...', parsed, in the order given */
	size_t nr_hists;
	bool tracing_off; /* --tracing-off: start with tracing off */
	bool entry_all;	  /* --entry: -l/-g globs match functions without an fentry site too */

	/* the VMM `run` boots the guest in: hvtrace's own, or QEMU launched (--qemu) */
	enum vmm_kind vmm;
	bool list_running;   /* list-functions of a running VM (its attach target), not an ELF */
	const char *accel;   /* "tcg" or "kvm" */
	const char *machine; /* run --qemu: "pc" or "q35", NULL: pc */
	const char *kernel, *initrd, *append;
	const char *system_map;
	struct attach_target attach; /* attach, list-functions of a running VM: which VM */
	struct expect *expects;	     /* --expect-*, parsed, in the order given */
	size_t nr_expects;
	const char *summary; /* --summary FILE: the session's JSON summary */
	const char *junit;   /* --junit FILE: one JUnit test case per --expect-* */
	bool verify_text;    /* compare the kernel text before attach and after detach */
	bool
	    no_backpressure; /* stub probes: lose events rather than hold the vCPUs for the drain */
	bool gdb_memory;     /* guest memory through the gdbstub, not the QEMU process */
	bool record;	     /* `record`: run / attach writing trace.dat (-o, default trace.dat) */
	bool host;	     /* record --host: the host's events beside it (host/hosttrace) */
	char **host_events;  /* --host-event SYSTEM:EVENT (argv strings, borrowed) */
	size_t nr_host_events;
	const char *input;   /* report -i (default trace.dat) */
	bool report_exits;   /* report --exits: guest and host time per function (sink_exits) */
	const char *host_input; /* report --host-input (default: -i's name with -host, host_rec_path) */
	const char *help_cmd; /* CMD_HELP: the command whose help (NULL: all of it) */
	/* --format (run, attach, record, report: host/sink/sink_format.h); NULL: the command's
	 * default (graph text for function_graph, else text; record: trace.dat) */
	const struct sink_format *format;
	bool quiet; /* --quiet: no progress line on stderr */
	struct session_words *words; /* the run options with --session files expanded (owned) */
};

/* Defaults: function tracer, 2 vCPUs, 64 MB (256 MB with --qemu), 4096 KB per-vCPU buffer. */
void session_init(struct session *s);

/* Frees what the parser allocated (the glob arrays, the expanded session files). */
void session_free(struct session *s);

/* ftrace's name of @k ("function_graph"), "?" if unknown; static storage. */
const char *tracer_name(enum tracer_kind k);

#endif
