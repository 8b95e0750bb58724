#include "host/cli/report.h"
#include "host/cli/cmd_common.h"
#include "host/session/exitcode.h"
#include "host/session/out_paths.h"
#include "host/hosttrace/host_rec.h"
#include "host/sink/sink.h"
#include "host/sink/sink_format.h"
#include "host/sink/sink_exits.h"
#include "host/sink/tracedat_host.h"
#include "host/sink/tracedat_read.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sink of format @f over @syms for the file @sum describes; 0, or -1 with @err. */
static int report_sink(struct sink *k, const struct sink_format *f, const struct session *s,
		       const struct vmi_symtab *syms, const struct tdr_summary *sum, char *err,
		       size_t errlen)
{
	struct sink_config cfg = {
	    .out = stdout,
	    .path = "-",
	    .syms = syms,
	    .nr_cpus = sum->nr_cpus,
	    .tracer = sum->graph ? "function_graph" : sum->function ? "function" : "nop",
	    .graph_retval = s->funcgraph_retval,
	    .graph_retval_hex = s->funcgraph_retval_hex,
	    .graph_tail = s->funcgraph_tail,
	};
	sink_make_fn make = sink_format_maker(f, SINK_REPORT);
	int ret = make ? make(k, &cfg) : -ENOTSUP; /* session_args chose a format report writes */

	if (ret < 0) {
		msg_fmt(err, errlen, "%s", ret == -ENOMEM ? "out of memory" : strerror(-ret));
		return -1;
	}
	return 0;
}

/* report --exits: the function_graph recording @r (scanned: @sum, @syms) against its host file. */
static int report_exits(const struct session *s, struct tdr *r, const struct vmi_symtab *syms,
			const struct tdr_summary *sum)
{
	static struct host_side hs; /* large: not on the stack */
	char path[4096], err[1024];
	struct sink k;
	int status = 0;

	if (!sum->graph) {
		cmd_error("report --exits: %s holds no function_graph events: the calls' times come from "
			  "them (record -p function_graph --host)",
			  s->input);
		return EXIT_BAD_INPUT;
	}
	if (s->host_input)
		snprintf(path, sizeof(path), "%s", s->host_input);
	else if (host_rec_path(s->input, path, sizeof(path)) < 0) {
		cmd_error("report --exits: -i %s: the name is too long", s->input);
		return EXIT_BAD_INPUT;
	}
	if (host_side_read(&hs, path, tdr_trace_id(r), err, sizeof(err)) < 0) {
		cmd_error("report --exits: %s", err);
		return EXIT_BAD_INPUT;
	}
	if (sink_exits_init(&k, stdout, syms, sum->nr_cpus, &hs) < 0) {
		cmd_error("report --exits: out of memory");
		host_side_free(&hs);
		return EXIT_HOST_ERROR;
	}
	if (tdr_replay(r, &k, true, err, sizeof(err)) < 0) {
		cmd_error("report: %s", err);
		status = EXIT_BAD_INPUT;
	}
	if (cmd_finish_out(stdout, NULL, NULL, k.err) < 0 && !status)
		status = EXIT_HOST_ERROR;
	sink_exits_free(&k);
	host_side_free(&hs);
	return status;
}

int cmd_report(const struct session *s)
{
	struct vmi_symtab syms = {0};
	struct tdr_summary sum;
	struct sink k;
	const struct sink_format *fmt = s->format;
	char err[1024];
	int status = 0;
	struct tdr *r;

	if (out_paths_check(s, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		return EXIT_BAD_INPUT;
	}
	r = tdr_open(s->input, err, sizeof(err));
	if (!r) {
		cmd_error("report: %s", err);
		return EXIT_BAD_INPUT;
	}
	if (tdr_scan(r, &syms, &sum, err, sizeof(err)) < 0) {
		cmd_error("report: %s", err);
		status = EXIT_BAD_INPUT;
		goto out;
	}
	/* the replay reads the file again from its start, through a handle of its own */
	tdr_close(r);
	r = tdr_open(s->input, err, sizeof(err));
	if (!r) {
		cmd_error("report: %s", err);
		status = EXIT_BAD_INPUT;
		goto out;
	}
	if (s->report_exits) {
		status = report_exits(s, r, &syms, &sum);
		goto out;
	}
	if (!fmt)
		fmt = sink_format_default(SINK_REPORT, sum.graph);
	if ((s->funcgraph_retval || s->funcgraph_tail) && fmt != sink_format_find("graph")) {
		cmd_error(
		    "report: --funcgraph-retval and --funcgraph-tail go with the graph format");
		status = EXIT_BAD_INPUT;
		goto out;
	}
	if (report_sink(&k, fmt, s, &syms, &sum, err, sizeof(err)) < 0) {
		cmd_error("report: %s", err);
		status = EXIT_BAD_INPUT;
		goto out;
	}
	if (tdr_replay(r, &k, sum.graph, err, sizeof(err)) < 0) {
		cmd_error("report: %s", err);
		status = EXIT_BAD_INPUT;
	}
	if (cmd_finish_out(stdout, NULL, NULL, k.err) < 0 && !status)
		status = EXIT_HOST_ERROR;
out:
	tdr_close(r);
	vmi_symtab_free(&syms);
	return status;
}
