/* A scripted peer for the client tests of the gdbstub and QMP protocols: a thread on the other end
 * of a socketpair (or of a unix socket it listens on) that writes a greeting, then for each step
 * waits for exactly the bytes it expects and writes its reply. It can also play a hostile peer: one
 * that floods (the same bytes again and again), stalls (half a reply, then nothing: the last step
 * with FAKE_SERVER_HOLD) or lies (any reply at all). */
#ifndef HVT_TESTS_FAKE_SERVER_H
#define HVT_TESTS_FAKE_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* One exchange: wait for exactly @expect (raw bytes, gdb acks included; NULL: nothing), then write
 * @reply (raw). With @flood, then write @flood again and again, @every_ms apart (0: as fast as the
 * client takes it), until the client hangs up (flood_sent counts the copies): the last step. */
struct fake_step {
	const char *expect;
	const char *reply;
	const char *flood;
	unsigned every_ms;
};

/* After the last step, keep reading (into tail) until the client closes; without it the server
 * hangs up right after the last reply. */
#define FAKE_SERVER_HOLD 1
/* Write the greeting and each reply in pieces cut at every '|', 20 ms apart (messages split across
 * reads); without it they go out whole. */
#define FAKE_SERVER_SPLIT 2

struct fake_server {
	int fd, lfd; /* the connection; the listening socket or -1 */
	const char *greeting;
	const struct fake_step *steps;
	size_t nr;
	unsigned flags;
	int failed;	/* index of the first step whose bytes differed, or whose reply could not be
			 * written; -1 */
	char got[8192]; /* what that step received */
	char tail[256]; /* FAKE_SERVER_HOLD: what came after the last step, until EOF */
	size_t tail_len;
	unsigned long flood_sent; /* copies of a step's @flood written whole */
	pthread_t thread;
};

/* Starts the server on one end of a socketpair and returns the other end for the client. @greeting
 * (or NULL) is written as soon as the thread runs. */
int fake_server_start(struct fake_server *s, const char *greeting, const struct fake_step *steps,
		      size_t nr, unsigned flags);
/* The same on a unix socket listening at @path (created here; the caller unlinks it): the server
 * accepts one connection. */
void fake_server_listen_unix(struct fake_server *s, const char *path, const char *greeting,
			     const struct fake_step *steps, size_t nr, unsigned flags);
/* The same on TCP, listening on a free loopback port, which it returns. */
int fake_server_listen_tcp(struct fake_server *s, const char *greeting,
			   const struct fake_step *steps, size_t nr, unsigned flags);
/* Joins the server (after the client closed its end, unless the server hangs up by itself), fails
 * the test if a step did not match, and NUL-terminates tail. */
void fake_server_finish(struct fake_server *s);

#define FAKE_NSTEPS(a) (sizeof(a) / sizeof((a)[0]))

/* @pre, then @payload framed as a gdbstub packet ("$payload#cs", the checksum computed here), into
 * @out; returns @out. */
const char *fake_gdb_packet(char *out, size_t len, const char *pre, const char *payload);

#endif
