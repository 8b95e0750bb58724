/* host/qmp: the JSON scanners, and the client against a scripted QMP server on a socketpair
 * (greeting, capabilities, events interleaved with answers, errors, HMP, split messages, timeouts,
 * EOF). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/qemu/qmp.h"
#include "host/vmm/tcp.h"
#include "tests/common/fake_server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GREETING                                                                                   \
	"{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, "         \
	"\"package\": \"Debian 1:7.2+dfsg-7+deb12u18+b3\"}, \"capabilities\": [\"oob\"]}}\r\n"
#define CAPS	  "{\"execute\":\"qmp_capabilities\"}\n"
#define RET_EMPTY "{\"return\": {}}\r\n"

/* ---- JSON scanners --------------------------------------------------------------------------- */

static void test_object_end(void **state)
{
	const char *nested = "{\"a\":\"}{\\\"\",\"b\":[{\"c\":{}}, \"]\"]}tail";

	(void)state;
	assert_int_equal(qmp_json_object_end("{\"a\":1}\r\n", 9), 7);
	assert_int_equal(qmp_json_object_end("{}", 2), 2);
	assert_int_equal(qmp_json_object_end(nested, strlen(nested)), strlen(nested) - 4);
	/* Incomplete, including inside a string and after a backslash. */
	assert_int_equal(qmp_json_object_end("{\"a\":{}", 7), 0);
	assert_int_equal(qmp_json_object_end("{\"a\":\"}", 7), 0);
	assert_int_equal(qmp_json_object_end("{\"a\":\"\\", 7), 0);
	assert_int_equal(qmp_json_object_end("", 0), 0);
	assert_int_equal(qmp_json_object_end("[1]", 3), -EPROTO);
	assert_int_equal(qmp_json_object_end(" {}", 3), -EPROTO);
}

static void assert_member(const char *obj, const char *key, const char *want)
{
	const char *v;
	size_t n;

	assert_int_equal(qmp_json_member(obj, strlen(obj), key, &v, &n), 0);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(v, want, n);
}

static void test_member(void **state)
{
	const char *reply = "{\"x\": {\"return\": 1}, \"return\": {\"status\": \"running\", "
			    "\"singlestep\": false, \"running\": true}}";
	const char *v;
	size_t n;

	(void)state;
	assert_member(reply, "return",
		      "{\"status\": \"running\", \"singlestep\": false, \"running\": true}");
	assert_member(reply, "x", "{\"return\": 1}");
	assert_member("{ \"a\" : 12 , \"b\" : \"s,}\" , \"c\":[1,{\"d\":2}],\"e\":null}", "a",
		      "12");
	assert_member("{ \"a\" : 12 , \"b\" : \"s,}\" , \"c\":[1,{\"d\":2}],\"e\":null}", "b",
		      "\"s,}\"");
	assert_member("{ \"a\" : 12 , \"b\" : \"s,}\" , \"c\":[1,{\"d\":2}],\"e\":null}", "c",
		      "[1,{\"d\":2}]");
	assert_member("{ \"a\" : 12 , \"b\" : \"s,}\" , \"c\":[1,{\"d\":2}],\"e\":null}", "e",
		      "null");
	assert_member("{\"k\\\"ey\":1,\"key\":2}", "key", "2");
	/* Only top-level members count. */
	assert_int_equal(qmp_json_member("{\"x\":{\"y\":1}}", 13, "y", &v, &n), -ENOENT);
	assert_int_equal(qmp_json_member("{}", 2, "a", &v, &n), -ENOENT);
	assert_int_equal(qmp_json_member("{ }", 3, "a", &v, &n), -ENOENT);
	assert_int_equal(qmp_json_member("{\"a\" 1}", 7, "a", &v, &n), -EPROTO);
	assert_int_equal(qmp_json_member("{\"a\":1 \"b\":2}", 13, "b", &v, &n), -EPROTO);
	assert_int_equal(qmp_json_member("[]", 2, "a", &v, &n), -EPROTO);
	assert_int_equal(qmp_json_member("{\"ab\":1}", 8, "a", &v, &n), -ENOENT);
}

static void test_string(void **state)
{
	const char *s = "\"a\\\"b\\\\c\\/d\\n\\r\\t\\b\\fe\"";
	const char *u = "\"caf\\u00e9 \\u20ac \\ud83d\\ude00 \\u0041\"";
	char out[64];

	(void)state;
	assert_int_equal(qmp_json_string(s, strlen(s), out, sizeof(out)), 0);
	assert_string_equal(out, "a\"b\\c/d\n\r\t\b\fe");
	assert_int_equal(qmp_json_string(u, strlen(u), out, sizeof(out)), 0);
	assert_string_equal(out, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 A");
	assert_int_equal(qmp_json_string("\"\"", 2, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* Room for "abc" and its NUL exactly. */
	assert_int_equal(qmp_json_string("\"abc\"", 5, out, 4), 0);
	assert_int_equal(qmp_json_string("\"abc\"", 5, out, 3), -ENOSPC);
	assert_int_equal(qmp_json_string("abc", 3, out, sizeof(out)), -EPROTO);
	assert_int_equal(qmp_json_string("\"ab", 3, out, sizeof(out)), -EPROTO);
	assert_int_equal(qmp_json_string("\"a\\q\"", 5, out, sizeof(out)), -EPROTO);
	assert_int_equal(qmp_json_string("\"\\u12\"", 6, out, sizeof(out)), -EPROTO);
	assert_int_equal(qmp_json_string("\"a\\\"", 4, out, sizeof(out)), -EPROTO);
}

/* A string that fails half-way leaves "" behind, never unterminated bytes (found by fuzzing:
 * qmp_hmp printed such an error desc past its buffer). */
static void test_string_failure_is_empty(void **state)
{
	char out[16];

	(void)state;
	memset(out, 'x', sizeof(out));
	assert_int_equal(qmp_json_string("\"abcdef\\q\"", 11, out, sizeof(out)), -EPROTO);
	assert_string_equal(out, "");
	memset(out, 'x', sizeof(out));
	assert_int_equal(qmp_json_string("\"abcdefghijklmnopq\"", 19, out, sizeof(out)), -ENOSPC);
	assert_string_equal(out, "");
}

/* A command on a connection already gone leaves "" in the reply, as every failure does (found by
 * fuzzing: qmp_hmp printed its reply buffer unset). */
static void test_execute_gone_reply_empty(void **state)
{
	struct qmp q = {.fd = -1};
	char reply[8] = "junk", out[8] = "junk";

	(void)state;
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"cont\"}", reply, sizeof(reply)),
			 -ECONNRESET);
	assert_string_equal(reply, "");
	assert_int_equal(qmp_hmp(&q, "info status", out, sizeof(out)), -ECONNRESET);
	assert_string_equal(out, "");
}

static void test_quote(void **state)
{
	char out[64], back[64];
	ssize_t n;

	(void)state;
	n = qmp_json_quote("gdbserver tcp:127.0.0.1:1234", out, sizeof(out));
	assert_int_equal(n, 30);
	assert_string_equal(out, "\"gdbserver tcp:127.0.0.1:1234\"");
	n = qmp_json_quote("a\"b\\c\n\x01", out, sizeof(out));
	assert_string_equal(out, "\"a\\\"b\\\\c\\u000a\\u0001\"");
	assert_int_equal(n, strlen(out));
	assert_int_equal(qmp_json_string(out, (size_t)n, back, sizeof(back)), 0);
	assert_string_equal(back, "a\"b\\c\n\x01");
	assert_int_equal(qmp_json_quote("abc", out, 5), -ENOSPC);
	assert_int_equal(qmp_json_quote("abc", out, 6), 5);
}

/* ---- scripted server (tests/common/fake_server.h) -------------------------------------------- */

static void test_handshake_and_events(void **state)
{
	static const struct fake_step st[] = {
	    {CAPS, RET_EMPTY},
	    {"{\"execute\":\"query-status\"}\n",
	     "{\"timestamp\": {\"seconds\": 1796025457, \"microseconds\": 513920}, \"event\": "
	     "\"RESUME\"}\r\n{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": "
	     "\"STOP\"}\r\n{\"return\": {\"status\": \"paused\", \"singlestep\": false, "
	     "\"running\": false}}\r\n"},
	    {"{\"execute\":\"query-status\"}\n", "{\"return\": {\"status\": \"running\", "
						 "\"singlestep\": false, \"running\": true}}\r\n"},
	    {"{\"execute\":\"quit\"}\n",
	     "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": \"SHUTDOWN\", "
	     "\"data\": {\"guest\": false, \"reason\": \"host-qmp-quit\"}}\r\n" RET_EMPTY},
	};
	struct fake_server s;
	struct qmp q;
	char err[128], status[32], reply[64];
	bool running = true;

	(void)state;
	assert_int_equal(
	    qmp_attach_fd(&q,
			  fake_server_start(&s, GREETING, st, FAKE_NSTEPS(st), FAKE_SERVER_SPLIT),
			  err, sizeof(err)),
	    0);
	assert_string_equal(q.version, "7.2.22");
	assert_int_equal(q.events, 0);
	assert_int_equal(qmp_query_status(&q, &running, status, sizeof(status)), 0);
	assert_false(running);
	assert_string_equal(status, "paused");
	assert_int_equal(q.events, QMP_EV_RESUME | QMP_EV_STOP);
	assert_int_equal(q.nr_events, 2);
	assert_string_equal(q.last_event, "STOP");
	qmp_clear_events(&q);
	assert_int_equal(q.events, 0);
	assert_string_equal(q.last_event, "");
	assert_string_equal(q.end_reason, "");
	assert_int_equal(qmp_query_status(&q, &running, NULL, 0), 0);
	assert_true(running);
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"quit\"}", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "{}");
	assert_int_equal(q.events, QMP_EV_SHUTDOWN);
	assert_string_equal(q.last_event, "SHUTDOWN");
	assert_string_equal(q.end_reason, "host-qmp-quit");
	assert_int_equal(q.nr_events, 3);
	assert_int_equal(qmp_wait_event(&q, QMP_EV_SHUTDOWN, 0), 0); /* already seen */
	/* The server has closed: the next command finds the connection gone. */
	assert_int_equal(qmp_wait_event(&q, QMP_EV_RESET, 1000), -ECONNRESET);
	assert_true(q.gone);
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"query-status\"}", NULL, 0), -ECONNRESET);
	qmp_close(&q);
	qmp_close(&q); /* twice is fine */
	fake_server_finish(&s);
}

static void test_errors(void **state)
{
	static const struct fake_step st[] = {
	    {CAPS, RET_EMPTY},
	    {"{\"execute\":\"nope\"}\n",
	     "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command nope has not "
	     "been found\"}}\r\n"},
	    {"{\"execute\":\"device_del\",\"arguments\":{\"id\":\"x\"}}\n",
	     "{\"error\": {\"class\": \"DeviceNotFound\", \"desc\": \"Device 'x' not "
	     "found\"}}\r\n"},
	    {"{\"execute\":\"cont\"}\n",
	     "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Resetting the Virtual Machine "
	     "is required\"}}\r\n"},
	    {"{\"execute\":\"query-name\"}\n",
	     "{\"return\": {\"name\": \"a-rather-long-name\"}}\r\n"},
	    {"{\"execute\":\"x\"}\n", "not json\r\n"},
	};
	struct fake_server s;
	struct qmp q;
	char err[128], reply[64], tiny[8];

	(void)state;
	assert_int_equal(
	    qmp_attach_fd(&q,
			  fake_server_start(&s, GREETING, st, FAKE_NSTEPS(st), FAKE_SERVER_SPLIT),
			  err, sizeof(err)),
	    0);
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"nope\"}", reply, sizeof(reply)), -ENOSYS);
	assert_string_equal(reply, "The command nope has not been found");
	assert_int_equal(qmp_execute(&q,
				     "{\"execute\":\"device_del\",\"arguments\":{\"id\":\"x\"}}",
				     reply, sizeof(reply)),
			 -ENODEV);
	assert_string_equal(reply, "Device 'x' not found");
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"cont\"}", reply, sizeof(reply)), -EINVAL);
	assert_string_equal(reply, "Resetting the Virtual Machine is required");
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"query-name\"}", tiny, sizeof(tiny)),
			 -ENOSPC);
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"x\"}", reply, sizeof(reply)), -EPROTO);
	qmp_close(&q);
	fake_server_finish(&s);
}

static void test_hmp_gdbserver(void **state)
{
	static const struct fake_step st[] = {
	    {CAPS, RET_EMPTY},
	    {"{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"gdbserver "
	     "tcp:127.0.0.1:1234\"}}\n",
	     "{\"return\": \"Waiting for gdb connection on device "
	     "'tcp:127.0.0.1:1234'\\r\\n\"}\r\n"},
	    {"{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"gdbserver "
	     "tcp:127.0.0.1:1\"}}\n",
	     "{\"return\": \"Failed to find an available port: Address already in use\\r\\nCould "
	     "not open gdbserver on device 'tcp:127.0.0.1:1'\\r\\n\"}\r\n"},
	    {"{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"info "
	     "\\\"x\\\"\"}}\n",
	     "{\"return\": \"line1\\r\\nline2\\r\\n\"}\r\n"},
	    {"{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"bad\"}}\n",
	     "{\"error\": {\"class\": \"GenericError\", \"desc\": \"boom\"}}\r\n"},
	};
	struct fake_server s;
	struct qmp q;
	char err[128], msg[128];

	(void)state;
	assert_int_equal(
	    qmp_attach_fd(&q,
			  fake_server_start(&s, GREETING, st, FAKE_NSTEPS(st), FAKE_SERVER_SPLIT),
			  err, sizeof(err)),
	    0);
	assert_int_equal(qmp_gdbserver(&q, "tcp:127.0.0.1:1234", msg, sizeof(msg)), 0);
	assert_string_equal(msg, "Waiting for gdb connection on device 'tcp:127.0.0.1:1234'");
	assert_int_equal(qmp_gdbserver(&q, "tcp:127.0.0.1:1", msg, sizeof(msg)), -EIO);
	assert_string_equal(msg,
			    "Failed to find an available port: Address already in use; Could not "
			    "open gdbserver on device 'tcp:127.0.0.1:1'");
	assert_int_equal(qmp_hmp(&q, "info \"x\"", msg, sizeof(msg)), 0);
	assert_string_equal(msg, "line1\r\nline2\r\n");
	assert_int_equal(qmp_hmp(&q, "bad", msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "boom");
	qmp_close(&q);
	fake_server_finish(&s);
}

/* Messages split across reads, several in one read, and pretty-printed over several lines. */
static void test_split_messages(void **state)
{
	static const struct fake_step st[] = {
	    {CAPS, "{\"ret|urn\": {}}|\r\n"},
	    {"{\"execute\":\"query-kvm\"}\n",
	     "{\"event\": \"RE|SET\"}\r\n{\n  \"return\": {\n    \"enabled\": false,\n    "
	     "\"present\": true\n  }\n}\r\n"},
	    {NULL,
	     "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, |\"event\": \"POWERDOWN\"}"
	     "\r\n{\"event\": \"DEVICE_DELETED\", \"data\": {}}\r\n"},
	};
	struct fake_server s;
	struct qmp q;
	char err[128], reply[128];

	(void)state;
	assert_int_equal(qmp_attach_fd(&q,
				       fake_server_start(&s, "{\"QMP\": {\"ver|sion\": {}}}\r\n",
							 st, FAKE_NSTEPS(st), FAKE_SERVER_SPLIT),
				       err, sizeof(err)),
			 0);
	assert_string_equal(q.version, "");
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"query-kvm\"}", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "{\n    \"enabled\": false,\n    \"present\": true\n  }");
	assert_int_equal(q.events, QMP_EV_RESET);
	assert_int_equal(qmp_wait_event(&q, QMP_EV_POWERDOWN, 2000), 0);
	assert_int_equal(q.events, QMP_EV_RESET | QMP_EV_POWERDOWN);
	assert_int_equal(qmp_wait_event(&q, QMP_EV_OTHER, 2000), 0);
	assert_string_equal(q.last_event, "DEVICE_DELETED");
	qmp_close(&q);
	fake_server_finish(&s);
}

static void test_timeout(void **state)
{
	static const struct fake_step st[] = {
	    {CAPS, RET_EMPTY}, {"{\"execute\":\"stop\"}\n", ""}, /* never answered */
	};
	struct fake_server s;
	struct qmp q;
	char err[128];
	int fd;

	(void)state;
	fd = fake_server_start(&s, GREETING, st, FAKE_NSTEPS(st),
			       FAKE_SERVER_SPLIT | FAKE_SERVER_HOLD);
	assert_int_equal(qmp_attach_fd(&q, fd, err, sizeof(err)), 0);
	q.timeout_ms = 100;
	assert_int_equal(qmp_wait_event(&q, QMP_EV_STOP, 50), -ETIMEDOUT);
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"stop\"}", NULL, 0), -ETIMEDOUT);
	assert_string_equal(q.why, "qmp: no answer to 'stop' within 100 ms");
	/* a late answer would be taken for the next command's: the connection is given up */
	assert_true(q.broken);
	assert_int_equal(qmp_execute(&q, "{\"execute\":\"cont\"}", NULL, 0), -ECONNABORTED);
	assert_int_equal(qmp_wait_event(&q, QMP_EV_STOP, 50), -ECONNABORTED);
	qmp_close(&q);
	fake_server_finish(&s);
}

/* ---- hostile monitors: floods, endless messages, deep nesting, stops (issue #10) ------------- */

/* A client connected to a scripted monitor that greets as QEMU 7.2 does. */
static void connect_fake(struct qmp *q, struct fake_server *s, const struct fake_step *st, size_t n,
			 unsigned flags)
{
	char err[128];

	assert_int_equal(
	    qmp_attach_fd(q, fake_server_start(s, GREETING, st, n, flags), err, sizeof(err)), 0);
}

static double elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

#define EVENT "{\"event\": \"RTC_CHANGE\", \"data\": {\"offset\": 0}}\r\n"
#define QUERY "{\"execute\":\"query-status\"}"

#define STRAY "{\"what\": 1}\r\n"

/* Events without end instead of the answer, at full speed or trickling in: given up at the
 * command's one deadline; other messages that are not the answer: after QMP_MAX_SKIPPED of them. */
static void test_hostile_event_floods(void **state)
{
	static const unsigned every[3] = {0, 20, 0};
	static const char *flood[3] = {EVENT, EVENT, STRAY};
	static const int want[3] = {-ETIMEDOUT, -ETIMEDOUT, -EPROTO};
	static const char *why[3] = {"qmp: no answer to 'query-status' within 300 ms",
				     "qmp: no answer to 'query-status' within 300 ms",
				     "qmp: 1025 messages and no answer to 'query-status'"};

	(void)state;
	for (int i = 0; i < 3; i++) {
		const struct fake_step st[] = {{CAPS, RET_EMPTY},
					       {QUERY "\n", "", flood[i], every[i]}};
		struct fake_server s;
		struct timespec t0;
		struct qmp q;
		bool running;

		connect_fake(&q, &s, st, FAKE_NSTEPS(st), 0);
		q.timeout_ms = 300;
		alarm(20);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(qmp_query_status(&q, &running, NULL, 0), want[i]);
		print_message("event flood every %u ms: %s after %.0f ms\n", every[i],
			      strerror(-want[i]), elapsed_ms(&t0));
		alarm(0);
		assert_string_equal(q.why, why[i]);
		assert_int_equal(qmp_execute(&q, QUERY, NULL, 0), -ECONNABORTED);
		qmp_close(&q);
		fake_server_finish(&s);
	}
}

/* A STOP and a RESUME per gdbstub stop pile up while no command waits (thousands in a traced
 * run): the next command skips them all for its answer, and qmp_drain_events takes them without
 * waiting in between. */
static void test_piled_up_events(void **state)
{
	static const char pair[] = "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": "
				   "\"STOP\"}\r\n{\"timestamp\": {\"seconds\": 1, \"microseconds\": 3}, "
				   "\"event\": \"RESUME\"}\r\n";
	enum { PAIRS = 3000 };
	/* RET_EMPTY (the answer to qmp_capabilities), the pile, RET_EMPTY */
	char *buf = malloc(sizeof(pair) * PAIRS + 2 * sizeof(RET_EMPTY)), *piled;
	struct fake_server s;
	struct qmp q;
	size_t o = sizeof(RET_EMPTY) - 1;

	(void)state;
	assert_non_null(buf);
	strcpy(buf, RET_EMPTY);
	piled = buf + o;
	for (int i = 0; i < PAIRS; i++, o += sizeof(pair) - 1)
		memcpy(buf + o, pair, sizeof(pair) - 1);
	strcpy(buf + o, RET_EMPTY);
	{
		const struct fake_step st[] = {{CAPS, RET_EMPTY}, {QUERY "\n", piled}};

		connect_fake(&q, &s, st, FAKE_NSTEPS(st), 0);
		assert_int_equal(qmp_execute(&q, QUERY, NULL, 0), 0);
		assert_int_equal(q.nr_events, 2 * PAIRS);
		assert_int_equal(q.events, QMP_EV_STOP | QMP_EV_RESUME);
		qmp_close(&q);
		fake_server_finish(&s);
	}
	/* the same pile taken by qmp_drain_events while no command waits, then a command answered */
	buf[o] = '\0';
	{
		const struct fake_step st[] = {{CAPS, buf}, {QUERY "\n", RET_EMPTY}};
		struct timespec t0;

		connect_fake(&q, &s, st, FAKE_NSTEPS(st), 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < 200 && q.nr_events < 2 * PAIRS; i++) {
			assert_int_equal(qmp_drain_events(&q), 0);
			usleep(10000);
		}
		assert_int_equal(q.nr_events, 2 * PAIRS);
		assert_int_equal(qmp_drain_events(&q), 0); /* nothing more: no wait */
		assert_true(elapsed_ms(&t0) < 10000);
		assert_int_equal(qmp_execute(&q, QUERY, NULL, 0), 0);
		qmp_close(&q);
		fake_server_finish(&s);
	}
	free(buf);
}

/* SHUTDOWN's reason, as QEMU words it or as a hostile peer might: a reason that is no short
 * string is "?", never a guess; the newest event counts. */
static void test_shutdown_reason(void **state)
{
#define SHUT(data) "{\"event\": \"SHUTDOWN\", " data "}\r\n"
	static const struct {
		const char *events, *why;
	} cases[] = {
	    {SHUT("\"data\": {\"guest\": true, \"reason\": \"guest-reset\"}"), "guest-reset"},
	    {SHUT("\"data\": {\"guest\": true, \"reason\": \"guest-shutdown\"}"), "guest-shutdown"},
	    {SHUT("\"data\": {\"guest\": true}"), "?"},
	    {SHUT("\"data\": 7"), "?"},
	    {SHUT("\"data\": {\"reason\": 12}"), "?"},
	    {SHUT("\"data\": {\"reason\": \"a-reason-longer-than-the-thirty-one-bytes-kept\"}"),
	     "?"},
	    {SHUT("\"data\": {\"reason\": \"guest-reset\"}") SHUT(
		 "\"data\": {\"reason\": \"guest-shutdown\"}"),
	     "guest-shutdown"},
	};
#undef SHUT
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char reply[1024];
		struct fake_server s;
		struct qmp q;

		snprintf(reply, sizeof(reply), "%s" RET_EMPTY, cases[i].events);
		{
			const struct fake_step st[] = {{CAPS, RET_EMPTY}, {QUERY "\n", reply}};

			connect_fake(&q, &s, st, FAKE_NSTEPS(st), 0);
			assert_int_equal(qmp_execute(&q, QUERY, NULL, 0), 0);
			assert_int_equal(q.events, QMP_EV_SHUTDOWN);
			assert_string_equal(q.end_reason, cases[i].why);
			qmp_close(&q);
			fake_server_finish(&s);
		}
	}
}

/* A greeting that never ends: refused at QMP_MAX_MSG bytes, the fd closed. */
static void test_hostile_endless_greeting(void **state)
{
	static const struct fake_step st[] = {{NULL, "", "[1, [2, {\"a\": \"bcdefgh\"}, ", 0}};
	struct fake_server s;
	struct timespec t0;
	struct qmp q;
	char err[128];

	(void)state;
	alarm(20);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(qmp_attach_fd(&q,
				       fake_server_start(&s, "{\"QMP\": {\"version\": ", st, 1, 0),
				       err, sizeof(err)),
			 -EMSGSIZE);
	print_message("endless greeting: refused after %.0f ms\n", elapsed_ms(&t0));
	alarm(0);
	assert_string_equal(err, "qmp: greeting: a message longer than 4194304 bytes");
	assert_int_equal(q.fd, -1);
	fake_server_finish(&s);
}

/* JSON nested 10000 deep is scanned without recursion: an answer too big for the caller's buffer,
 * then the next command as usual; an array where an object was due is refused. */
static void test_hostile_deep_nesting(void **state)
{
	enum { DEEP = 10000 };
	char *deep = malloc(2 * DEEP + 64), *p = deep, reply[64];
	struct fake_step st[4] = {{CAPS, RET_EMPTY}};
	struct fake_server s;
	struct qmp q;

	(void)state;
	p += sprintf(p, "{\"return\": ");
	memset(p, '[', DEEP);
	memset(p + DEEP, ']', DEEP);
	strcpy(p + 2 * DEEP, "}\r\n");
	st[1] = (struct fake_step){QUERY "\n", deep};
	st[2] = (struct fake_step){QUERY "\n", RET_EMPTY};
	st[3] = (struct fake_step){QUERY "\n", "[[[[1]]]]\r\n"};
	connect_fake(&q, &s, st, 4, FAKE_SERVER_HOLD);
	assert_int_equal(qmp_execute(&q, QUERY, reply, sizeof(reply)), -ENOSPC);
	assert_int_equal(qmp_execute(&q, QUERY, reply, sizeof(reply)), 0);
	assert_string_equal(reply, "{}");
	assert_int_equal(qmp_execute(&q, QUERY, reply, sizeof(reply)), -EPROTO);
	assert_string_equal(q.why, "qmp: '[[[[1]]]]\\r\\n' where a JSON object was due");
	qmp_close(&q);
	fake_server_finish(&s);
	free(deep);
}

/* A stop (the session's signalfd readable) ends the wait for an answer at once. */
static void test_interrupted(void **state)
{
	static const struct fake_step st[] = {{CAPS, RET_EMPTY}, {QUERY "\n", ""}};
	struct fake_server s;
	struct qmp q;
	int p[2];

	(void)state;
	connect_fake(&q, &s, st, FAKE_NSTEPS(st), FAKE_SERVER_HOLD);
	q.timeout_ms = -1; /* no deadline at all */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	tcp_set_interrupt(p[0]);
	alarm(20);
	assert_int_equal(qmp_execute(&q, QUERY, NULL, 0), -EINTR);
	alarm(0);
	tcp_set_interrupt(-1);
	assert_string_equal(q.why, "qmp: interrupted waiting for the answer to 'query-status'");
	assert_true(q.broken);
	close(p[0]);
	close(p[1]);
	qmp_close(&q);
	fake_server_finish(&s);
}

static void test_bad_greeting(void **state)
{
	static const struct fake_step st[] = {{NULL, ""}};
	struct fake_server s;
	struct qmp q;
	char err[128];

	(void)state;
	assert_int_equal(
	    qmp_attach_fd(&q, fake_server_start(&s, "{\"hello\": 1}\r\n", st, 1, FAKE_SERVER_SPLIT),
			  err, sizeof(err)),
	    -EPROTO);
	assert_string_equal(err, "qmp: no QMP greeting: {\"hello\": 1}");
	assert_int_equal(q.fd, -1);
	fake_server_finish(&s);
	/* The server hangs up after the greeting. */
	assert_int_equal(qmp_attach_fd(&q,
				       fake_server_start(&s, GREETING, NULL, 0, FAKE_SERVER_SPLIT),
				       err, sizeof(err)),
			 -ECONNRESET);
	assert_string_equal(err, "qmp: qmp_capabilities: Connection reset by peer");
	fake_server_finish(&s);
}

/* qmp_connect over a real unix socket path, with and without the "unix:" prefix. */
static void test_connect_unix(void **state)
{
	static const struct fake_step st[] = {{CAPS, RET_EMPTY}};
	char path[64], addr[128], err[128];
	struct fake_server s;
	struct qmp q;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/hvt-test-qmp-%d.sock", (int)getpid());
	for (int round = 0; round < 2; round++) {
		unlink(path);
		fake_server_listen_unix(&s, path, GREETING, st, 1, FAKE_SERVER_SPLIT);
		snprintf(addr, sizeof(addr), "%s%s", round ? "" : "unix:", path);
		assert_int_equal(qmp_connect(&q, addr, err, sizeof(err)), 0);
		assert_string_equal(q.version, "7.2.22");
		qmp_close(&q);
		fake_server_finish(&s);
	}
	unlink(path);
	assert_int_equal(qmp_connect(&q, path, err, sizeof(err)), -ENOENT);
	snprintf(addr, sizeof(addr), "qmp %s: No such file or directory", path);
	assert_string_equal(err, addr);
	assert_int_equal(qmp_connect(&q, "tcp:127.0.0.1:1", err, sizeof(err)), -ECONNREFUSED);
	assert_string_equal(err, "qmp 127.0.0.1:1: connect: Connection refused");
	assert_int_equal(qmp_connect(&q, "tcp:nocolon", err, sizeof(err)), -EINVAL);
	assert_int_equal(q.fd, -1);
	qmp_close(&q);
}

/* query-version's return, as libvirt hands it back (QEMU 11.1.3 of Debian 13, pretty-printed), and
 * version objects out of shape: a part missing is -1, no "qemu" member is "". */
static void test_version_string(void **state)
{
	static const char reply[] = "{\n    \"qemu\": {\n      \"micro\": 3,\n      \"minor\": 1,\n"
				    "      \"major\": 11\n    },\n    \"package\": \"Debian 1:11.1.3+ds-2~bpo13+1\"\n  }";
	char out[32] = "x";
	const char *v;

	(void)state;
	qmp_version_string(reply, strlen(reply), out, sizeof(out));
	assert_string_equal(out, "11.1.3");
	v = "{\"qemu\": {\"major\": 10}}";
	qmp_version_string(v, strlen(v), out, sizeof(out));
	assert_string_equal(out, "10.-1.-1");
	v = "{\"package\": \"qemu\"}";
	qmp_version_string(v, strlen(v), out, sizeof(out));
	assert_string_equal(out, "");
	/* @len bounds the object: the "qemu" member past it is not read */
	qmp_version_string(reply, 4, out, sizeof(out));
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_object_end),
	    cmocka_unit_test(test_member),
	    cmocka_unit_test(test_string),
	    cmocka_unit_test(test_string_failure_is_empty),
	    cmocka_unit_test(test_execute_gone_reply_empty),
	    cmocka_unit_test(test_quote),
	    cmocka_unit_test(test_handshake_and_events),
	    cmocka_unit_test(test_shutdown_reason),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_hmp_gdbserver),
	    cmocka_unit_test(test_split_messages),
	    cmocka_unit_test(test_timeout),
	    cmocka_unit_test(test_bad_greeting),
	    cmocka_unit_test(test_connect_unix),
	    cmocka_unit_test(test_hostile_event_floods),
	    cmocka_unit_test(test_piled_up_events),
	    cmocka_unit_test(test_hostile_endless_greeting),
	    cmocka_unit_test(test_hostile_deep_nesting),
	    cmocka_unit_test(test_interrupted),
	    cmocka_unit_test(test_version_string),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("qmp", tests, NULL, NULL);
}
