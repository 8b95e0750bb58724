#include "host/vmm/tcp.h"
#include "host/util/msg_fmt.h"
#include "host/trace/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TCP_CONNECT_MS 5000 /* a connect that takes longer is given up */

static int intr_fd = -1; /* tcp_set_interrupt */

void tcp_set_interrupt(int fd)
{
	intr_fd = fd;
}

int tcp_interrupt_fd(void)
{
	return intr_fd;
}

bool tcp_interrupted(void)
{
	struct pollfd pfd = {.fd = intr_fd, .events = POLLIN};

	return intr_fd >= 0 && poll(&pfd, 1, 0) == 1;
}

/* Waits until @fd is ready for @events, @deadline or a stop. 0, -ETIMEDOUT, -EINTR, -errno. */
static int wait_ready(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd[2] = {{.fd = fd, .events = events},
					{.fd = intr_fd, .events = POLLIN}};
		int wait = -1, rc;

		if (deadline >= 0) {
			int64_t left = deadline - clock_now_ms();

			wait = left > 0 ? (int)left : 0;
		}
		rc = poll(pfd, intr_fd >= 0 ? 2 : 1, wait);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (intr_fd >= 0 && pfd[1].revents)
			return -EINTR;
		return rc == 0 ? -ETIMEDOUT : 0;
	}
}

/* connect(2) that gives up at @deadline or on a stop (an address that never answers would block
 * ~2 minutes). The socket stays blocking. 0 or -errno. */
static int connect_until(int fd, const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
	int flags = fcntl(fd, F_GETFL), err = 0, rc;
	socklen_t elen = sizeof(err);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	rc = connect(fd, sa, len) == 0 ? 0 : -errno;
	if (rc == -EINPROGRESS) {
		rc = wait_ready(fd, POLLOUT, deadline);
		if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			rc = -errno;
		else if (!rc)
			rc = -err;
	}
	if (!rc && fcntl(fd, F_SETFL, flags) < 0)
		rc = -errno;
	return rc;
}

int tcp_why(char *buf, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_vfmt(buf, len, fmt, ap);
	va_end(ap);
	return rc;
}

int tcp_connect(const char *host, const char *service, int *gai_err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
	int64_t deadline;
	int fd = -1, rc;

	*gai_err = getaddrinfo(host, service, &hints, &res);
	if (*gai_err)
		return -EHOSTUNREACH;
	rc = -ECONNREFUSED;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		deadline = clock_now_ms() + TCP_CONNECT_MS;
		rc = connect_until(fd, ai->ai_addr, ai->ai_addrlen, deadline);
		if (rc == 0)
			break;
		close(fd);
		fd = -1;
		if (rc == -EINTR)
			break;
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : rc;
}

ssize_t tcp_read_until(int fd, void *buf, size_t len, int64_t deadline)
{
	for (;;) {
		int rc = wait_ready(fd, POLLIN, deadline);
		ssize_t r;

		if (rc)
			return rc;
		r = read(fd, buf, len);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return -ECONNRESET;
		return r < 0 ? -errno : r;
	}
}

int tcp_read_more(int fd, char *buf, size_t *len, size_t cap, int64_t deadline, bool *gone)
{
	ssize_t r = tcp_read_until(fd, buf + *len, cap - *len, deadline);

	if (r == -ETIMEDOUT || r == -EINTR)
		return (int)r;
	if (r < 0) {
		*gone = true;
		return (int)r;
	}
	*len += (size_t)r;
	return 0;
}
