/* libFuzzer harness for the QMP client: what a (hostile) QEMU monitor sends. The JSON scanners get
 * the input first (object ends, members, strings, quoting); then the whole client reads the input
 * as the monitor's byte stream over a socketpair: greeting, qmp_capabilities, query-status, an HMP
 * command, gdbserver, waiting for events. */
#include "host/qemu/qmp.h"
#include "tests/fuzz/fuzz_peer.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const keys[] = {"QMP",  "return",  "error",	"event",   "class",
				   "desc", "running", "status", "version", "qemu"};

/* Members of @obj (@len bytes), their strings, and one level down. */
static void members(const char *obj, size_t len, int depth)
{
	char str[256];

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v;
		size_t vlen;

		if (qmp_json_member(obj, len, keys[k], &v, &vlen))
			continue;
		if (v < obj || v + vlen > obj + len)
			abort(); /* the value lies inside the object */
		qmp_json_string(v, vlen, str, sizeof(str));
		if (depth < 2 && vlen && v[0] == '{')
			members(v, vlen, depth + 1);
	}
}

static void scan(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	char *text, quoted[512];
	ssize_t end;

	for (size_t pos = 0; pos < size; pos++) {
		if (s[pos] != '{')
			continue;
		end = qmp_json_object_end(s + pos, size - pos);
		if (end < 0 || (size_t)end > size - pos)
			abort();
		if (end > 0) {
			members(s + pos, (size_t)end, 0);
			pos += (size_t)end - 1;
		}
	}
	text = strndup(s, size < 200 ? size : 200);
	if (text) {
		qmp_json_quote(text, quoted, sizeof(quoted));
		free(text);
	}
}

/* A session against the input, as qemu_attach and linux_run use the client. */
static void session(int fd)
{
	char out[512], status[32], msg[256];
	struct qmp q;
	bool running;
	char err[256];

	if (qmp_attach_fd(&q, fd, err, sizeof(err)) < 0)
		return;
	q.timeout_ms = 0; /* everything is sent already: never wait */
	qmp_query_status(&q, &running, status, sizeof(status));
	qmp_hmp(&q, "info registers", out, sizeof(out));
	qmp_gdbserver(&q, "tcp:127.0.0.1:1234", msg, sizeof(msg));
	qmp_execute(&q, "{\"execute\":\"cont\"}", out, 8);
	qmp_wait_event(&q, QMP_EV_STOP | QMP_EV_SHUTDOWN, 0);
	qmp_clear_events(&q);
	qmp_close(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int peer;

	scan(data, size);
	session(fuzz_peer(data, size, &peer));
	close(peer);
	return 0;
}
