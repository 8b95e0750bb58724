#include "host/cli/driver.h"
#include "host/cli/cmd_common.h"
#include "host/session/exitcode.h"
#include "host/session/out_paths.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The outputs closed: a trace or console that could not be written is one line (one for both on
 * stdout) and exit 4, unless something else failed first. Returns @status or EXIT_HOST_ERROR. */
static int close_outputs(const struct session *s, FILE *out, FILE *con, int out_err, int con_err,
			 int status)
{
	if (!out_err && out == con)
		out_err = con_err;
	if (!out_err && out && ferror(out)) /* written without a sink (list-functions) */
		out_err = EIO;
	if (out && cmd_finish_out(out, s->output, "-o", out_err) && !status)
		status = EXIT_HOST_ERROR;
	if (con && con != out && cmd_finish_out(con, s->console, "--console", con_err) && !status)
		status = EXIT_HOST_ERROR;
	return status;
}

int driver_run(const struct session *s, driver_backend_new make)
{
	struct backend_env env = {.s = s, .check_int3 = cmd_check_int3};
	struct backend b;
	FILE *out = NULL, *con = NULL;
	char err[512];
	sigset_t old;
	int sfd = -1, status, out_err = 0, con_err;

	/* before anything is read, opened or created: outputs that would lose data */
	if (out_paths_check(s, err, sizeof(err)) < 0) {
		cmd_error("%s", err);
		return EXIT_BAD_INPUT;
	}
	if (pipeline_new(&env.p) < 0 || make(&b, &env) < 0) {
		pipeline_free(env.p);
		cmd_error("out of memory");
		return EXIT_HOST_ERROR;
	}
	struct pipeline *p = env.p;

	status = b.ops->open(b.ctx, err, sizeof(err));
	if (status) {
		cmd_error("%s", err);
		pipeline_free(p);
		b.ops->close(b.ctx);
		return status;
	}
	sfd = cmd_block_signals(&old);
	if (sfd < 0) {
		cmd_error("signalfd: %s", strerror(-sfd));
		status = EXIT_HOST_ERROR;
		goto out;
	}
	status = EXIT_BAD_INPUT;
	out = cmd_open_out(s->output, "-o");
	con = cmd_open_out(s->console, "--console");
	if (!out || !con)
		goto out;
	status = b.ops->prepare(b.ctx, sfd, out, con, err, sizeof(err));
	if (status == BACKEND_DONE) {
		status = 0;
		goto out;
	}
	if (!status)
		status = b.ops->start(b.ctx, err, sizeof(err));
	if (status) {
		cmd_error("%s", err);
		goto out;
	}
	status = b.ops->wait(b.ctx, sfd);
out:
	status = b.ops->detach(b.ctx, status);
	if (pipeline_selected(p)) {
		status = pipeline_finish(p, status, b.ops->stats, b.ctx);
		out_err = pipeline_sink_err(p);
	} else if (b.ops->stats_alone && s->stats) {
		b.ops->stats_alone(b.ctx);
	}
	pipeline_free(p); /* before the backend closes the target its tracer borrows */
	con_err = b.ops->close(b.ctx);
	status = close_outputs(s, out, con, out_err, con_err, status);
	if (sfd >= 0)
		close(sfd);
	fflush(stdout);
	/* last: a signal still pending (one that came after the watcher stopped) ends hvtrace only
	 * once every output is complete */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return status;
}
