#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/fake_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static bool read_exact(int fd, char *buf, size_t n)
{
	for (size_t i = 0; i < n;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&pfd, 1, 5000) <= 0)
			return false;
		r = read(fd, buf + i, n - i);
		if (r <= 0)
			return false;
		i += (size_t)r;
	}
	return true;
}

/* Writes @str, in pieces cut at '|' with FAKE_SERVER_SPLIT; false if the peer is gone. */
static bool write_script(const struct fake_server *s, const char *str)
{
	while (*str) {
		const char *bar = s->flags & FAKE_SERVER_SPLIT ? strchr(str, '|') : NULL;
		size_t n = bar ? (size_t)(bar - str) : strlen(str);
		struct timespec ts = {0, 20 * 1000 * 1000};

		if (write(s->fd, str, n) < 0)
			return false;
		if (!bar)
			break;
		nanosleep(&ts, NULL);
		str = bar + 1;
	}
	return true;
}

/* Writes @str again and again, @every_ms apart, until the client is gone. */
static void flood(struct fake_server *s, const char *str, unsigned every_ms)
{
	struct timespec ts = {every_ms / 1000, (long)(every_ms % 1000) * 1000000};
	size_t n = strlen(str);

	for (;;) {
		for (size_t off = 0; off < n;) {
			ssize_t w = send(s->fd, str + off, n - off, MSG_NOSIGNAL);

			if (w <= 0)
				return;
			off += (size_t)w;
		}
		s->flood_sent++;
		if (every_ms)
			nanosleep(&ts, NULL);
	}
}

static void *server_main(void *arg)
{
	struct fake_server *s = arg;

	if (s->lfd >= 0) {
		s->fd = accept(s->lfd, NULL, NULL);
		if (s->fd < 0) {
			s->failed = 0;
			return NULL;
		}
	}
	if (s->greeting && !write_script(s, s->greeting))
		goto out;
	for (size_t i = 0; i < s->nr; i++) {
		if (s->steps[i].expect) {
			size_t n = strlen(s->steps[i].expect);

			memset(s->got, 0, sizeof(s->got));
			if (!read_exact(s->fd, s->got, n) ||
			    memcmp(s->got, s->steps[i].expect, n)) {
				s->failed = (int)i;
				goto out;
			}
		}
		if (!write_script(s, s->steps[i].reply)) {
			s->failed = (int)i;
			goto out;
		}
		if (s->steps[i].flood) {
			flood(s, s->steps[i].flood, s->steps[i].every_ms);
			goto out;
		}
	}
	while (s->flags & FAKE_SERVER_HOLD) {
		struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
		ssize_t r;

		if (poll(&pfd, 1, 5000) <= 0)
			break;
		r = read(s->fd, s->tail + s->tail_len, sizeof(s->tail) - 1 - s->tail_len);
		if (r <= 0)
			break;
		s->tail_len += (size_t)r;
	}
out:
	close(s->fd);
	return NULL;
}

static void setup(struct fake_server *s, const char *greeting, const struct fake_step *steps,
		  size_t nr, unsigned flags)
{
	memset(s, 0, sizeof(*s));
	s->fd = s->lfd = -1;
	s->greeting = greeting;
	s->steps = steps;
	s->nr = nr;
	s->flags = flags;
	s->failed = -1;
}

int fake_server_start(struct fake_server *s, const char *greeting, const struct fake_step *steps,
		      size_t nr, unsigned flags)
{
	int sv[2];

	setup(s, greeting, steps, nr, flags);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	s->fd = sv[1];
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
	return sv[0];
}

void fake_server_listen_unix(struct fake_server *s, const char *path, const char *greeting,
			     const struct fake_step *steps, size_t nr, unsigned flags)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	setup(s, greeting, steps, nr, flags);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, path);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s->lfd, 1), 0);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

int fake_server_listen_tcp(struct fake_server *s, const char *greeting,
			   const struct fake_step *steps, size_t nr, unsigned flags)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);

	setup(s, greeting, steps, nr, flags);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s->lfd, 1), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
	return ntohs(sa.sin_port);
}

void fake_server_finish(struct fake_server *s)
{
	pthread_join(s->thread, NULL);
	if (s->lfd >= 0)
		close(s->lfd);
	s->lfd = -1;
	s->tail[s->tail_len] = '\0';
	if (s->failed >= 0)
		fail_msg("fake server step %d: expected \"%s\", got \"%s\"", s->failed,
			 s->steps && s->steps[s->failed].expect ? s->steps[s->failed].expect
								: "(nothing)",
			 s->got);
}

const char *fake_gdb_packet(char *out, size_t len, const char *pre, const char *payload)
{
	unsigned sum = 0;

	for (const char *p = payload; *p; p++)
		sum += (unsigned char)*p;
	snprintf(out, len, "%s$%s#%02x", pre, payload, sum & 0xff);
	return out;
}
