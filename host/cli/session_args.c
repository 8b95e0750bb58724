#include "host/cli/session_args.h"
#include "host/cli/arg_words.h"
#include "host/cli/help.h"
#include "host/hosttrace/host_rec.h"
#include "host/session/session_file.h"
#include "host/sink/sink_format.h"
#include "host/kvm/vm.h"
#include "host/util/msg_fmt.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


enum {
	OPT_CONSOLE = 256,
	OPT_SMP,
	OPT_MEM,
	OPT_TIMEOUT,
	OPT_DURATION,
	OPT_BUFFER,
	OPT_STATS,
	OPT_MAX_DEPTH,
	OPT_RETVAL,
	OPT_RETVAL_HEX,
	OPT_TAIL,
	OPT_PROFILE,
	OPT_QEMU,
	OPT_ACCEL,
	OPT_KERNEL,
	OPT_INITRD,
	OPT_APPEND,
	OPT_SYSTEM_MAP,
	OPT_QMP,
	OPT_PID,
	OPT_VMM,
	OPT_EXPECT_CALL,
	OPT_EXPECT_NO_CALL,
	OPT_VERIFY_TEXT,
	OPT_ENTRY,
	OPT_HOST,
	OPT_HOST_EVENT,
	OPT_NO_BACKPRESSURE,
	OPT_GDB_MEMORY,
	OPT_PROBE,
	OPT_MACHINE,
	OPT_SESSION,
	OPT_EXPECT_RETURN,
	OPT_EXPECT_ORDER,
	OPT_SUMMARY,
	OPT_JUNIT,
	OPT_FORMAT,
	OPT_QUIET,
	OPT_COMM,
	OPT_CPU,
	OPT_FILTER_EVENT,
	OPT_TRIGGER,
	OPT_TRACING_OFF,
};

static const struct option run_opts[] = {
	{"tracer", required_argument, NULL, 'p'},
	{"filter", required_argument, NULL, 'l'},
	{"notrace", required_argument, NULL, 'n'},
	{"graph-function", required_argument, NULL, 'g'},
	{"event", required_argument, NULL, 'e'},
	{"return-probe", required_argument, NULL, 'r'},
	{"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
	{"funcgraph-retval", no_argument, NULL, OPT_RETVAL},
	{"funcgraph-retval-hex", no_argument, NULL, OPT_RETVAL_HEX},
	{"funcgraph-tail", no_argument, NULL, OPT_TAIL},
	{"profile", no_argument, NULL, OPT_PROFILE},
	{"output", required_argument, NULL, 'o'},
	{"console", required_argument, NULL, OPT_CONSOLE},
	{"smp", required_argument, NULL, OPT_SMP},
	{"mem", required_argument, NULL, OPT_MEM},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"duration", required_argument, NULL, OPT_DURATION},
	{"buffer-size-kb", required_argument, NULL, OPT_BUFFER},
	{"stats", no_argument, NULL, OPT_STATS},
	{"qemu", no_argument, NULL, OPT_QEMU},
	{"accel", required_argument, NULL, OPT_ACCEL},
	{"kernel", required_argument, NULL, OPT_KERNEL},
	{"initrd", required_argument, NULL, OPT_INITRD},
	{"append", required_argument, NULL, OPT_APPEND},
	{"system-map", required_argument, NULL, OPT_SYSTEM_MAP},
	{"connect", required_argument, NULL, 'c'},
	{"qmp", required_argument, NULL, OPT_QMP},
	{"pid", required_argument, NULL, OPT_PID},
	{"vmm", required_argument, NULL, OPT_VMM},
	{"expect-call", required_argument, NULL, OPT_EXPECT_CALL},
	{"expect-no-call", required_argument, NULL, OPT_EXPECT_NO_CALL},
	{"expect-return", required_argument, NULL, OPT_EXPECT_RETURN},
	{"expect-order", required_argument, NULL, OPT_EXPECT_ORDER},
	{"summary", required_argument, NULL, OPT_SUMMARY},
	{"junit", required_argument, NULL, OPT_JUNIT},
	{"task-pid", required_argument, NULL, 'P'},
	{"comm", required_argument, NULL, OPT_COMM},
	{"cpu", required_argument, NULL, OPT_CPU},
	{"filter-event", required_argument, NULL, OPT_FILTER_EVENT},
	{"trigger", required_argument, NULL, OPT_TRIGGER},
	{"tracing-off", no_argument, NULL, OPT_TRACING_OFF},
	{"verify-text", no_argument, NULL, OPT_VERIFY_TEXT},
	{"entry", no_argument, NULL, OPT_ENTRY},
	{"host", no_argument, NULL, OPT_HOST},
	{"host-event", required_argument, NULL, OPT_HOST_EVENT},
	{"no-backpressure", no_argument, NULL, OPT_NO_BACKPRESSURE},
	{"gdb-memory", no_argument, NULL, OPT_GDB_MEMORY},
	{"probe", required_argument, NULL, OPT_PROBE},
	{"machine", required_argument, NULL, OPT_MACHINE},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"session", required_argument, NULL, OPT_SESSION}, /* expanded before getopt (session_file.h) */
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};


/* The word parse_run is at (an option, or its argument), for naming a session file's line in an error;
 * NULL past the options. */
static const char *parsing_word;

static int parse_tracer(struct session *s, const char *arg, char *err, size_t errlen)
{
	for (int k = TRACER_NOP; k <= TRACER_FUNCTION_GRAPH; k++)
		if (!strcmp(arg, tracer_name((enum tracer_kind)k))) {
			s->tracer = (enum tracer_kind)k;
			return 0;
		}
	msg_fmt(err, errlen, "-p '%s': unknown tracer (available: function function_graph nop)",
		arg);
	return -EINVAL;
}


/* -e SPEC: parsed now, so a bad spec is refused before anything starts. The error shows the spec with a
 * caret under the offending character. */
static int parse_event(struct session *s, const char *spec, char *err, size_t errlen)
{
	struct fe_spec *v = realloc(s->events, (s->nr_events + 1) * sizeof(*v));
	char reason[128];
	size_t pos;

	if (!v)
		return -ENOMEM;
	s->events = v;
	if (fe_parse(spec, &v[s->nr_events], reason, sizeof(reason), &pos) < 0) {
		msg_fmt(err, errlen, "-e: %s\n  %s\n  %*s^", reason, spec, (int)pos, "");
		return -EINVAL;
	}
	s->nr_events++;
	return 0;
}

/* -r SPEC: "func" (RAX in its BTF type, or in hex), "func(name)" (in its BTF type) or "func(type
 * name)" whose one field is evaluated on RAX. */
static int parse_rprobe(struct session *s, const char *spec, char *err, size_t errlen)
{
	struct fe_spec *v = realloc(s->rprobes, (s->nr_rprobes + 1) * sizeof(*v));
	char reason[128], *full;
	size_t pos;
	int ret;

	if (!v)
		return -ENOMEM;
	s->rprobes = v;
	/* the whole spec, however long: a truncated copy could parse where the spec does not */
	if (asprintf(&full, strchr(spec, '(') ? "%s" : "%s(ret)", spec) < 0)
		return -ENOMEM;
	ret = fe_parse(full, &v[s->nr_rprobes], reason, sizeof(reason), &pos);
	free(full);
	if (ret < 0) {
		msg_fmt(err, errlen, "-r: %s\n  %s\n  %*s^", reason, spec, (int)pos, "");
		return -EINVAL;
	}
	if (v[s->nr_rprobes].offset) {
		msg_fmt(err, errlen,
			"-r %s: a return probe is on a function, not on an instruction inside it",
			spec);
		return -EINVAL;
	}
	/* bare: RAX in the return's BTF type where the guest has BTF, else in hex */
	v[s->nr_rprobes].ret_hex = !strchr(spec, '(');
	if (v[s->nr_rprobes].nr_args > 1 || v[s->nr_rprobes].all_args) {
		msg_fmt(err, errlen, "-r %s: a return probe has one value (RAX)", spec);
		return -EINVAL;
	}
	s->nr_rprobes++;
	return 0;
}

/* --trigger 'FUNC:hist:...': parsed now, appended (bound to FUNC's probe by the pipeline). */
static int parse_hist(struct session *s, const char *text, char *err, size_t errlen)
{
	struct hist_spec *v = realloc(s->hists, (s->nr_hists + 1) * sizeof(*s->hists));

	if (!v)
		return -ENOMEM;
	s->hists = v;
	if (hist_parse(text, &s->hists[s->nr_hists], err, errlen) < 0)
		return -EINVAL;
	s->nr_hists++;
	return 0;
}

/* --filter-event 'FUNC: EXPR' (bound to FUNC's -e event when the probes exist) or, with @trigger,
 * --trigger 'FUNC:CMD[:N]' (its function found among the probes later): parsed now, appended. */
static int parse_bound(struct session *s, bool trigger, const char *text, char *err, size_t errlen)
{
	if (trigger && hist_is_trigger(text))
		return parse_hist(s, text, err, errlen);
	size_t n = trigger ? s->nr_triggers : s->nr_efilters;
	void *v = trigger ? realloc(s->triggers, (n + 1) * sizeof(*s->triggers))
			  : realloc(s->efilters, (n + 1) * sizeof(*s->efilters));
	int ret;

	if (!v)
		return -ENOMEM;
	if (trigger) {
		s->triggers = v;
		ret = trigger_parse(text, &s->triggers[n], err, errlen);
	} else {
		s->efilters = v;
		ret = ef_parse(text, &s->efilters[n], err, errlen);
	}
	if (ret < 0)
		return -EINVAL;
	*(trigger ? &s->nr_triggers : &s->nr_efilters) = n + 1;
	return 0;
}

/* Triggers that write into the text output: not with record (trace.dat), and snapshot needs -o. */
static int check_triggers(const struct session *s, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->nr_triggers; i++) {
		const struct trigger *t = &s->triggers[i];
		const char *cmd = trigger_cmd_name(t->cmd);

		if (s->record && (t->cmd == TRIG_STACKTRACE || t->cmd == TRIG_SNAPSHOT)) {
			msg_fmt(err, errlen, "--trigger %s:%s: not with record (trace.dat)",
				t->func, cmd);
			return -EINVAL;
		}
		if (t->cmd == TRIG_SNAPSHOT && !s->output) {
			msg_fmt(err, errlen,
				"--trigger %s:%s: needs -o FILE (snapshots are FILE.snapshot-N)",
				t->func, cmd);
			return -EINVAL;
		}
	}
	return 0;
}

/* --expect-*: parsed now, so a bad spec is refused before anything starts. */
static int parse_expect(struct session *s, int opt, const char *spec, char *err, size_t errlen)
{
	enum expect_kind kind = opt == OPT_EXPECT_CALL	    ? EXPECT_CALL
				: opt == OPT_EXPECT_NO_CALL ? EXPECT_NO_CALL
				: opt == OPT_EXPECT_RETURN  ? EXPECT_RETURN
							    : EXPECT_ORDER;
	struct expect *v = realloc(s->expects, (s->nr_expects + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	s->expects = v;
	if (expect_parse(&v[s->nr_expects], kind, spec, err, errlen) < 0)
		return -EINVAL;
	s->nr_expects++;
	return 0;
}

/* run/attach/record --format: a name of the one table (host/sink/sink_format.h) that this command
 * writes; the last one given wins */
static int parse_live_format(struct session *s, const char *arg, char *err, size_t errlen)
{
	const char *cmd = s->record ? "record" : s->cmd == CMD_ATTACH ? "attach" : "run";

	s->format = sink_format_choose(arg, s->record ? SINK_RECORD : SINK_LIVE, cmd, err, errlen);
	return s->format ? 0 : -EINVAL;
}

/* The first option given that only QEMU takes (the embedded VMM has no such thing), or NULL. */
static const char *qemu_only_option(const struct session *s)
{
	return s->accel		? "--accel"
	       : s->machine	? "--machine"
	       : s->attach.qmp	? "--qmp"
	       : s->attach.pid	? "--pid"
	       : s->verify_text ? "--verify-text"
	       : s->gdb_memory	? "--gdb-memory"
	       : s->entry_all	? "--entry"
				: NULL;
}

/* Option sets that can only give an empty trace, refused before the guest runs (as --max-depth
 * without function_graph is): -l or -n with -p nop and no hist trigger or --profile (no function is
 * traced, the globs would choose nothing), --tracing-off with no traceon trigger (tracing never
 * starts), a --cpu the guest does not have when its vCPU count is known now (run: --smp; attach
 * checks once connected). */
static int check_empty_trace(const struct session *s, char *err, size_t errlen)
{
	bool traceon = false;

	if (s->tracer == TRACER_NOP && s->tracer_given && (s->nr_filter || s->nr_notrace) &&
	    !s->nr_hists && !s->profile) {
		msg_fmt(err, errlen,
			"%s: -p nop traces no function (use -p function or function_graph, or a "
			"--trigger FUNC:hist or --profile on them)",
			s->nr_filter ? "-l" : "-n");
		return -EINVAL;
	}
	for (size_t i = 0; i < s->nr_triggers; i++)
		traceon |= s->triggers[i].cmd == TRIG_TRACEON;
	if (s->tracing_off && !traceon) {
		msg_fmt(
		    err, errlen,
		    "--tracing-off: no --trigger FUNC:traceon turns tracing on (the trace would be "
		    "empty)");
		return -EINVAL;
	}
	if (s->cmd == CMD_RUN && rec_filter_check_cpus(&s->tasks, s->smp, err, errlen) < 0)
		return -EINVAL;
	return 0;
}
/* The checks that need every option: which target, and its required arguments. */
static int check_target(struct session *s, int argc, char **argv, char *err, size_t errlen)
{
	int positional = argc - optind;
	bool attach = s->cmd == CMD_ATTACH || s->list_running;

	if (s->attach.vmm_given && !attach) {
		msg_fmt(err, errlen, "--vmm: goes with attach and list-functions of a running VM");
		return -EINVAL;
	}
	if (s->attach.uri && (!attach || positional < 1)) {
		msg_fmt(err, errlen, "-c %s: a libvirt URI goes with attach NAME", s->attach.uri);
		return -EINVAL;
	}
	if (attach) {
		int ways = (positional > 0) + !!s->attach.qmp + !!s->attach.pid;

		if (positional > 1) {
			msg_fmt(err, errlen, "'%s': unexpected argument after NAME",
				argv[optind + 1]);
			return -EINVAL;
		}
		if (ways != 1) {
			msg_fmt(err, errlen,
				"%s: give exactly one of %sNAME, --qmp SOCKET, --pid PID",
				s->list_running ? "list-functions" : "attach",
				s->list_running ? "GUEST.elf, " : "");
			return -EINVAL;
		}
		if (positional)
			s->attach.domain = argv[optind];
		if (s->attach.generic && !s->attach.pid) {
			msg_fmt(err, errlen, "--vmm generic: goes with --pid PID (the VMM process)");
			return -EINVAL;
		}

	} else if (s->vmm == VMM_QEMU) {
		if (positional) {
			msg_fmt(err, errlen, "'%s': --qemu takes --kernel, not a GUEST.elf",
				argv[optind]);
			return -EINVAL;
		}
		if (!s->kernel) {
			msg_fmt(err, errlen, "--qemu: missing --kernel FILE");
			return -EINVAL;
		}
	} else if (s->kernel) {
		/* a Linux kernel in the embedded VMM */
		const char *only_qemu = qemu_only_option(s);

		if (only_qemu) {
			msg_fmt(err, errlen, "%s: needs --qemu (or attach)", only_qemu);
			return -EINVAL;
		}
		if (positional) {
			msg_fmt(err, errlen, "'%s': --kernel boots a bzImage, not a GUEST.elf",
				argv[optind]);
			return -EINVAL;
		}
	} else {
		const char *only_linux = s->initrd ? "--initrd"
				       : s->append ? "--append" : s->system_map ? "--system-map"
				       : qemu_only_option(s);

		if (only_linux) {
			msg_fmt(err, errlen, "%s: needs --qemu (or attach)", only_linux);
			return -EINVAL;
		}
		if (positional < 1) {
			msg_fmt(err, errlen, "%s: missing GUEST.elf (see hvtrace --help)", argv[0]);
			return -EINVAL;
		}
		if (positional > 1) {
			msg_fmt(err, errlen, "'%s': unexpected argument after GUEST.elf",
				argv[optind + 1]);
			return -EINVAL;
		}
		s->guest = argv[optind];
	}
	return 0;
}

static int parse_run(struct session *s, int argc, char **argv, char *err, size_t errlen)
{
	static const char *const accels[] = {"tcg", "kvm"}, *const machines[] = {"pc", "q35"};
	static const char *const probes[] = {
	    [PROBE_TRAP] = "trap", [PROBE_STUB] = "stub", [PROBE_AUTO] = "auto"};
	int c, k, ret = 0;
	const char *mem_arg = NULL;
	char shortopts[32];

	arg_short_options(run_opts, shortopts, sizeof(shortopts));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, run_opts, NULL)) != -1) {
		parsing_word = optarg ? optarg : argv[optind - 1];
		switch (c) {
		case 'p':
			ret = parse_tracer(s, optarg, err, errlen);
			s->tracer_given = true;
			break;
		case 'e': ret = parse_event(s, optarg, err, errlen); break;
		case 'r': ret = parse_rprobe(s, optarg, err, errlen); break;
		case 'l': ret = arg_push(&s->filter, &s->nr_filter, optarg); break;
		case 'n': ret = arg_push(&s->notrace, &s->nr_notrace, optarg); break;
		case 'g': ret = arg_push(&s->graph, &s->nr_graph, optarg); break;
		case OPT_MAX_DEPTH:
			ret = arg_uint("--max-depth", optarg, 1, 255, &s->max_depth, err, errlen);
			break;
		case OPT_RETVAL: s->funcgraph_retval = true; break;
		case OPT_RETVAL_HEX: s->funcgraph_retval = s->funcgraph_retval_hex = true; break;
		case OPT_TAIL: s->funcgraph_tail = true; break;
		case OPT_PROFILE: s->profile = true; break;
		case OPT_QEMU: s->vmm = VMM_QEMU; break;
		case OPT_ACCEL:
			if (!(ret = arg_one_of("--accel", optarg, accels, 2, &k, err, errlen)))
				s->accel = optarg;
			break;
		case OPT_MACHINE:
			if (!(ret = arg_one_of("--machine", optarg, machines, 2, &k, err, errlen)))
				s->machine = optarg;
			break;
		case OPT_KERNEL: s->kernel = optarg; break;
		case OPT_INITRD: s->initrd = optarg; break;
		case OPT_APPEND: s->append = optarg; break;
		case OPT_SYSTEM_MAP: s->system_map = optarg; break;
		case OPT_QMP: s->attach.qmp = optarg; break;
		case 'c': s->attach.uri = optarg; break;
		case OPT_PID: {
			unsigned pid;

			ret = arg_uint("--pid", optarg, 1, 1u << 30, &pid, err, errlen);
			s->attach.pid = (int)pid;
			break;
		}
		case OPT_VMM: {
			static const char *const vmms[] = {"qemu", "generic"};

			if (!(ret = arg_one_of("--vmm", optarg, vmms, 2, &k, err, errlen)))
				s->attach.generic = k == 1;
			s->attach.vmm_given = true;
			break;
		}
		case OPT_EXPECT_CALL:
		case OPT_EXPECT_NO_CALL:
		case OPT_EXPECT_RETURN:
		case OPT_EXPECT_ORDER: ret = parse_expect(s, c, optarg, err, errlen); break;
		case OPT_FORMAT: ret = parse_live_format(s, optarg, err, errlen); break;
		case OPT_QUIET: s->quiet = true; break;
		case 'P': ret = rec_filter_add_pid(&s->tasks, optarg, err, errlen); break;
		case OPT_COMM: ret = rec_filter_add_comm(&s->tasks, optarg, err, errlen); break;
		case OPT_CPU: ret = rec_filter_add_cpus(&s->tasks, optarg, err, errlen); break;
		case OPT_FILTER_EVENT: ret = parse_bound(s, false, optarg, err, errlen); break;
		case OPT_TRIGGER: ret = parse_bound(s, true, optarg, err, errlen); break;
		case OPT_TRACING_OFF: s->tracing_off = true; break;
		case OPT_SUMMARY: s->summary = optarg; break;
		case OPT_JUNIT: s->junit = optarg; break;
		case OPT_VERIFY_TEXT: s->verify_text = true; break;
		case OPT_ENTRY: s->entry_all = true; break;
		case OPT_HOST: s->host = true; break;
		case OPT_HOST_EVENT:
			s->host = true;
			if (!host_rec_event_name_ok(optarg)) {
				msg_fmt(err, errlen, "--host-event %s: expected SYSTEM:EVENT",
					optarg);
				ret = -EINVAL;
				break;
			}
			ret = arg_push(&s->host_events, &s->nr_host_events, optarg);
			break;
		case OPT_NO_BACKPRESSURE: s->no_backpressure = true; break;
		case OPT_GDB_MEMORY: s->gdb_memory = true; break;
		case OPT_PROBE:
			if (!(ret = arg_one_of("--probe", optarg, probes, 3, &k, err, errlen))) {
				s->probe = (enum probe_kind)k;
				s->probe_given = true;
			}
			break;
		case 'o': s->output = optarg; break;
		case OPT_CONSOLE: s->console = optarg; break;
		case OPT_SMP: ret = arg_uint("--smp", optarg, 1, 64, &s->smp, err, errlen); break;
		case OPT_MEM: mem_arg = optarg; break; /* its range depends on --qemu */
		case OPT_TIMEOUT:
			ret = arg_seconds("--timeout", optarg, &s->timeout, err, errlen);
			break;
		case OPT_DURATION:
			ret = arg_seconds("--duration", optarg, &s->duration, err, errlen);
			break;
		case OPT_BUFFER:
			ret = arg_uint("--buffer-size-kb", optarg, 4, 1 << 20, &s->buffer_size_kb,
					 err, errlen);
			s->buffer_size_set = true;
			break;
		case OPT_STATS: s->stats = true; break;
		case 'h': s->cmd = CMD_HELP; return 0;
		case ':':
			/* only the last word can lack its argument: it is the option as typed */
			msg_fmt(err, errlen, "%s: missing argument", argv[argc - 1]);
			return -EINVAL;
		default:
			/* a short option inside a group is named by optopt; a long one by its word */
			if (optopt && optopt < 256)
				msg_fmt(err, errlen, "-%c: unknown option", optopt);
			else
				msg_fmt(err, errlen, "%s: unknown option", argv[optind - 1]);
			return -EINVAL;
		}
		if (ret == -ENOMEM)
			msg_fmt(err, errlen, "out of memory");
		if (ret < 0)
			return ret;
	}
	parsing_word = mem_arg;
	/* the embedded VMM's RAM lies below its 3 GiB hole; QEMU maps any size (qemu_mem.h) */
	if (mem_arg && arg_uint("--mem", mem_arg, 2, s->vmm == VMM_QEMU ? 1u << 24 : 3072,
				&s->mem_mb, err, errlen) < 0)
		return -EINVAL;
	parsing_word = NULL;
	ret = check_target(s, argc, argv, err, errlen);
	if (ret < 0)
		return ret;
	/* the embedded VMM keeps its stacks and page tables in guest RAM: the pair must fit */
	if (s->cmd == CMD_RUN && s->vmm != VMM_QEMU && s->mem_mb < vm_min_mem_mb(s->smp)) {
		msg_fmt(err, errlen, "--smp %u --mem %u: %u vCPUs need --mem %u or more", s->smp,
			s->mem_mb, s->smp, vm_min_mem_mb(s->smp));
		return -EINVAL;
	}
	if ((s->nr_events || s->nr_rprobes) && !s->tracer_given)
		s->tracer = TRACER_NOP;
	if ((s->vmm == VMM_QEMU || s->kernel) && !mem_arg)
		s->mem_mb = 256;
	if (s->tracer != TRACER_FUNCTION_GRAPH) {
		const char *opt = s->nr_graph	       ? "-g"
				  : s->max_depth       ? "--max-depth"
				  : s->funcgraph_retval_hex ? "--funcgraph-retval-hex"
				  : s->funcgraph_retval ? "--funcgraph-retval"
				  : s->funcgraph_tail   ? "--funcgraph-tail"
							: NULL;

		if (opt) {
			msg_fmt(err, errlen, "%s: needs -p function_graph", opt);
			return -EINVAL;
		}
	}
	return check_empty_trace(s, err, errlen);
}

static const struct option report_opts[] = {
	{"input", required_argument, NULL, 'i'},
	{"format", required_argument, NULL, 'f'},
	{"funcgraph-retval", no_argument, NULL, OPT_RETVAL},
	{"funcgraph-tail", no_argument, NULL, OPT_TAIL},
	{"funcgraph-retval-hex", no_argument, NULL, OPT_RETVAL_HEX},
	{"exits", no_argument, NULL, OPT_HOST},
	{"host-input", required_argument, NULL, OPT_HOST_EVENT},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* report [-i FILE] [--format text|graph|json|folded] [--funcgraph-retval] [--funcgraph-tail] */
static int parse_report(struct session *s, int argc, char **argv, char *err, size_t errlen)
{
	char shortopts[8];
	int c;

	s->cmd = CMD_REPORT;
	s->input = "trace.dat";
	optind = 0;
	opterr = 0;
	arg_short_options(report_opts, shortopts, sizeof(shortopts));
	while ((c = getopt_long(argc, argv, shortopts, report_opts, NULL)) != -1) {
		switch (c) {
		case 'i': s->input = optarg; break;
		case 'f':
			s->format = sink_format_choose(optarg, SINK_REPORT, "report", err, errlen);
			if (!s->format)
				return -EINVAL;
			break;
		case OPT_RETVAL: s->funcgraph_retval = true; break;
		case OPT_TAIL: s->funcgraph_tail = true; break;
		case OPT_RETVAL_HEX: s->funcgraph_retval = s->funcgraph_retval_hex = true; break;
		case OPT_HOST: s->report_exits = true; break;	    /* --exits */
		case OPT_HOST_EVENT: s->host_input = optarg; break; /* --host-input */
		case 'h': s->cmd = CMD_HELP; return 0;
		case ':':
			msg_fmt(err, errlen, "%s: missing argument", argv[argc - 1]);
			return -EINVAL;
		default:
			msg_fmt(err, errlen, "%s: unknown report option", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		msg_fmt(err, errlen, "'%s': unexpected argument (report -i FILE)", argv[optind]);
		return -EINVAL;
	}
	if (s->host_input && !s->report_exits) {
		msg_fmt(err, errlen, "--host-input: goes with --exits");
		return -EINVAL;
	}
	if (s->report_exits && (s->format || s->funcgraph_retval || s->funcgraph_tail)) {
		msg_fmt(err, errlen, "--exits: a table of its own (no --format, --funcgraph-*)");
		return -EINVAL;
	}
	return 0;
}

/* `hvtrace help [CMD]`, `hvtrace --help`: CMD must be a command with its own help. */
static int parse_help(struct session *s, int argc, char **argv, char *err, size_t errlen)
{
	s->cmd = CMD_HELP;
	if (argc > 3) {
		msg_fmt(err, errlen, "'%s': unexpected argument after %s %s", argv[3], argv[1],
			argv[2]);
		return -EINVAL;
	}
	if (argc == 3 && !help_known(argv[2])) {
		msg_fmt(err, errlen,
			"%s %s: expected one of run, attach, record, report, list-functions",
			argv[1], argv[2]);
		return -EINVAL;
	}
	s->help_cmd = argc == 3 ? argv[2] : NULL;
	return 0;
}

/* Whether -h or --help is among @argv (before a "--"). */
static bool wants_help(int argc, char **argv)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

/* parse_run after expanding every --session FILE in place (session_file.h); an error about a word of a
 * session file is prefixed with its "FILE:LINE: ". */
static int parse_run_sessions(struct session *s, int argc, char **argv, char *err, size_t errlen)
{
	struct session_words *w = calloc(1, sizeof(*w));
	const struct session_origin *o;
	char msg[512], shortopts[32];
	int ret;

	if (!w) {
		msg_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	arg_short_options(run_opts, shortopts, sizeof(shortopts));
	ret = session_expand(argc, argv, run_opts, shortopts, w, err, errlen);
	/* a session parsed again keeps the words of the earlier parse: its fields may point there */
	w->older = s->words;
	s->words = w;
	if (ret < 0)
		return ret;
	parsing_word = NULL;
	ret = parse_run(s, s->words->argc, s->words->argv, err, errlen);
	o = ret < 0 && parsing_word ? session_words_origin(s->words, parsing_word) : NULL;
	if (o) {
		snprintf(msg, sizeof(msg), "%s", err);
		msg_fmt(err, errlen, "%s:%u: %s", o->file, o->line, msg);
	}
	return ret;
}

int session_parse_args(struct session *s, int argc, char **argv, char *err, size_t errlen)
{
	static const char *const cmds[] = {
	    [CMD_RUN] = "run", [CMD_ATTACH] = "attach", [CMD_LIST_FUNCTIONS] = "list-functions"};
	const char *cmd;
	int k;

	if (argc < 2) {
		msg_fmt(err, errlen, "missing command (see hvtrace --help)");
		return -EINVAL;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))
		return parse_help(s, argc, argv, err, errlen);
	if (!strcmp(cmd, "--version")) {
		s->cmd = CMD_VERSION;
		return 0;
	}
	s->help_cmd = help_known(argv[1]) ? argv[1] : NULL; /* for `hvtrace CMD ... --help` */
	if (!strcmp(cmd, "report"))
		return parse_report(s, argc - 1, argv + 1, err, errlen);
	if (!strcmp(cmd, "record")) {
		/* record [attach] ...: run or attach, into trace.dat */
		s->record = true;
		cmd = "run";
		if (argc > 2 && !strcmp(argv[2], "attach")) {
			argc--;
			argv++;
			cmd = "attach";
		}
	}
	k = arg_pick(cmd, cmds, CMD_LIST_FUNCTIONS + 1);
	if (k < 0) {
		msg_fmt(err, errlen,
			"'%s': unknown command (run, attach, record, report, list-functions)", cmd);
		return -EINVAL;
	}
	s->cmd = (enum session_cmd)k;
	if (s->cmd == CMD_LIST_FUNCTIONS && wants_help(argc - 2, argv + 2)) {
		s->cmd = CMD_HELP;
		return 0;
	}
	if (s->cmd == CMD_LIST_FUNCTIONS) {
		/* an ELF guest (*.elf, or an existing file); else a running VM, named as for attach */
		size_t n = argc > 2 ? strlen(argv[2]) : 0;

		if (n && argv[2][0] != '-' &&
		    ((n > 4 && !strcmp(argv[2] + n - 4, ".elf")) || access(argv[2], F_OK) == 0)) {
			if (argc != 3) {
				msg_fmt(err, errlen,
					"list-functions: expected exactly one GUEST.elf");
				return -EINVAL;
			}
			s->guest = argv[2];
			return 0;
		}
		s->list_running = true;
	}
	if (parse_run_sessions(s, argc - 1, argv + 1, err, errlen) < 0)
		return -EINVAL;
	if (s->format && s->format == sink_format_find("graph") &&
	    s->tracer != TRACER_FUNCTION_GRAPH) {
		msg_fmt(err, errlen,
			"--format graph: goes with -p function_graph (the calls' returns)");
		return -EINVAL;
	}
	if (s->host && !s->record) {
		msg_fmt(err, errlen,
			"--host%s: the host's trace goes beside a trace.dat (use record)",
			s->nr_host_events ? "-event" : "");
		return -EINVAL;
	}
	if (s->record && !s->output)
		s->output = "trace.dat";
	if (s->host && !strcmp(s->output, "-")) {
		msg_fmt(err, errlen,
			"--host: -o - (a pipe) has no name to put the host's file beside");
		return -EINVAL;
	}
	if (check_triggers(s, err, errlen) < 0)
		return -EINVAL;
	return 0;
}
