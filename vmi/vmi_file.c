#include "vmi/vmi_file.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *vmi_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	default:
		return "of an unknown kind";
	}
}

/* "@what @path" (or "@path") into @buf. */
static const char *name(char *buf, size_t len, const char *what, const char *path)
{
	snprintf(buf, len, "%s%s%s", what && *what ? what : "", what && *what ? " " : "", path);
	return buf;
}

int vmi_file_open(const char *what, const char *path, uint64_t max, uint64_t *size, char *err,
		  size_t errlen)
{
	char n[512];
	struct stat st;
	int fd, e, flags;

	/* O_NONBLOCK: opening a FIFO for reading blocks until a writer comes; a device may block
	 * too */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		e = errno;
		msg_fmt(err, errlen, "%s: %s", name(n, sizeof(n), what, path), strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		msg_fmt(err, errlen, "%s: not a regular file (%s)", name(n, sizeof(n), what, path),
			 vmi_file_kind(st.st_mode));
		close(fd);
		return -EINVAL;
	}
	if (max && (uint64_t)st.st_size > max) {
		msg_fmt(err, errlen,
			 "%s: %" PRIu64 " bytes, larger than the %" PRIu64 " bytes an input may have",
			 name(n, sizeof(n), what, path), (uint64_t)st.st_size, max);
		close(fd);
		return -EFBIG;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		e = errno;
		msg_fmt(err, errlen, "%s: %s", name(n, sizeof(n), what, path), strerror(e));
		close(fd);
		return -e;
	}
	if (size)
		*size = (uint64_t)st.st_size;
	return fd;
}

int vmi_file_map(const char *what, const char *path, uint64_t max, struct vmi_file_map *m,
		 char *err, size_t errlen)
{
	char n[512];
	uint64_t size;
	void *p;
	int fd, e;

	memset(m, 0, sizeof(*m));
	fd = vmi_file_open(what, path, max, &size, err, errlen);
	if (fd < 0)
		return fd;
	if (size > SIZE_MAX) {
		close(fd);
		msg_fmt(err, errlen, "%s: too large to map", name(n, sizeof(n), what, path));
		return -EFBIG;
	}
	if (!size) {
		close(fd);
		return 0;
	}
	p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	e = errno;
	close(fd);
	if (p == MAP_FAILED) {
		msg_fmt(err, errlen, "%s: mmap: %s", name(n, sizeof(n), what, path), strerror(e));
		return -e;
	}
	m->data = p;
	m->size = (size_t)size;
	return 0;
}

void vmi_file_unmap(struct vmi_file_map *m)
{
	if (m->data)
		munmap((void *)m->data, m->size);
	memset(m, 0, sizeof(*m));
}
