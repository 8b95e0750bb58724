/* The peer of the fuzzed protocol clients (gdbstub, QMP): a socketpair whose far end has already
 * sent the fuzzer's input. */
#ifndef HVT_FUZZ_PEER_H
#define HVT_FUZZ_PEER_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

/* A connected stream whose peer has sent @data (as much as the socket buffer holds) and then shut
 * its writing side: the client reads the input, then EOF, and never waits. The client's end is
 * non-blocking, so its sends to a peer that never reads fail instead of hanging. Returns the
 * client's fd (the client owns it); *@peer is the far end, for the caller to close afterwards. */
static inline int fuzz_peer(const void *data, size_t size, int *peer)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		abort();
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	if (size && send(sv[1], data, size, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN)
		abort();
	shutdown(sv[1], SHUT_WR);
	*peer = sv[1];
	return sv[0];
}

#endif
