/* A TCP client connection, shared by the gdbstub and QMP clients. */
#ifndef HVT_TCP_H
#define HVT_TCP_H

/* Connects to @host:@service (any address family getaddrinfo gives). Returns the socket (close-on-exec)
 * or a negative errno: -EHOSTUNREACH when the name does not resolve (*@gai_err set), else the connect
 * error. */
int tcp_connect(const char *host, const char *service, int *gai_err);

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads what is there (at most @len bytes) from @fd, waiting until @deadline (clock_now_ms() time;
 * < 0: forever). Returns the bytes read (> 0), -ETIMEDOUT, -ECONNRESET when the peer closed or
 * reset the connection, or another negative errno. */
ssize_t tcp_read_until(int fd, void *buf, size_t len, int64_t deadline);

#endif
