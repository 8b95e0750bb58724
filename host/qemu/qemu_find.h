/* Finding the QEMU process of a VM without trusting what QEMU says: the process at the other end of
 * a connected monitor socket (unix: SO_PEERCRED; TCP: the owner of the peer socket's inode in
 * /proc/net/tcp{,6}), or the one process whose command line has `-uuid UUID` (the UUID libvirt's
 * API gives). Main thread, at attach. */
#ifndef HVT_QEMU_FIND_H
#define HVT_QEMU_FIND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The process at the other end of the connected stream socket @fd (unix or TCP on this host).
 * Returns its pid, or -errno with one line in @err (-ENOENT: the peer is no local process). */
pid_t qemu_find_socket_peer(int fd, char *err, size_t errlen);

/* The one process on this host started with `-uuid @uuid`. Returns its pid, or -errno with one line
 * in @err: -ENOENT (none), -EEXIST (more than one). */
pid_t qemu_find_by_uuid(const char *uuid, char *err, size_t errlen);

/* Whether process @pid runs a QEMU: the name of its executable (/proc/PID/exe, as the kernel has
 * it, not its command line) starts with "qemu-" or is "qemu", or, run through the dynamic loader
 * (exe "ld-*"), such an executable is mapped executable in it (/proc/PID/maps). 0, or -errno with
 * one line in @err (-ENOEXEC: another program, named). */
int qemu_find_check_exe(pid_t pid, char *err, size_t errlen);

/* Whether @host (a numeric address or "localhost") is on loopback: 127.0.0.0/8, ::1,
 * ::ffff:127.x.y.z. Pure. */
bool qemu_find_is_loopback(const char *host);

/* Whether process @pid itself holds every socket listening on TCP port @port at a loopback or
 * wildcard address (/proc/net/tcp and tcp6, each socket's inode looked for among /proc/PID/fd), and
 * at least one does: what a connection to loopback:@port reaches is @pid's. 0, or -errno with one
 * line in @err: -ECONNREFUSED (nothing listens), -EPERM (another process holds it, named when
 * found). */
int qemu_find_check_listener(pid_t pid, unsigned port, char *err, size_t errlen);

#endif
