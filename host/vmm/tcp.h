/* A TCP client connection, shared by the gdbstub and QMP clients, and the one "stop now" that every
 * wait on such a connection honours. */
#ifndef HVT_TCP_H
#define HVT_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Connects to @host:@service (any address family getaddrinfo gives), each address given 5 s, and
 * ending at once on a stop (tcp_set_interrupt). Returns the socket (close-on-exec) or a negative
 * errno: -EHOSTUNREACH when the name does not resolve (*@gai_err set), else the connect error
 * (-ETIMEDOUT, -EINTR). */
int tcp_connect(const char *host, const char *service, int *gai_err);

/* Makes every later tcp_read_until of this process also end, with -EINTR, as soon as @fd is
 * readable (the session's signalfd: a SIGINT or SIGTERM is pending); nothing is read from @fd. -1:
 * no such stop (the default, and what a forked guardian sets first). Main thread, before or between
 * waits. */
void tcp_set_interrupt(int fd);

/* The fd tcp_set_interrupt last set (-1: none), to set it back after a wait no stop may cut
 * short. Main thread. */
int tcp_interrupt_fd(void);

/* Whether the fd of tcp_set_interrupt is readable now (a stop is asked). Any thread. */
bool tcp_interrupted(void);

/* Writes one line of printf @fmt into @buf (the reason a client keeps for its last failure) and
 * returns @rc. Any thread. */
int tcp_why(char *buf, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reads what is there (at most @len bytes) from @fd, waiting until @deadline (clock_now_ms() time;
 * < 0: forever) or a stop (tcp_set_interrupt). Returns the bytes read (> 0), -ETIMEDOUT, -EINTR (a
 * stop), -ECONNRESET when the peer closed or reset the connection, or another negative errno. */
ssize_t tcp_read_until(int fd, void *buf, size_t len, int64_t deadline);

/* A client's buffered read: tcp_read_until into @buf after its *@len bytes (at most @cap - *@len),
 * *@len grown by what came. Returns 0, -ETIMEDOUT or -EINTR (the connection still usable), or
 * another negative errno, the connection then gone (*@gone set). */
int tcp_read_more(int fd, char *buf, size_t *len, size_t cap, int64_t deadline, bool *gone);

#endif
