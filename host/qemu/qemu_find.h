/* Finding the QEMU process of a VM without trusting what QEMU says: the process at the other end of
 * a connected monitor socket (unix: SO_PEERCRED; TCP: the owner of the peer socket's inode in
 * /proc/net/tcp{,6}), or the one process whose command line has `-uuid UUID` (the UUID libvirt's
 * API gives). Main thread, at attach. */
#ifndef HVT_QEMU_FIND_H
#define HVT_QEMU_FIND_H

#include <stddef.h>
#include <sys/types.h>

/* The process at the other end of the connected stream socket @fd (unix or TCP on this host).
 * Returns its pid, or -errno with one line in @err (-ENOENT: the peer is no local process). */
pid_t qemu_find_socket_peer(int fd, char *err, size_t errlen);

/* The one process on this host started with `-uuid @uuid`. Returns its pid, or -errno with one line
 * in @err: -ENOENT (none), -EEXIST (more than one). */
pid_t qemu_find_by_uuid(const char *uuid, char *err, size_t errlen);

#endif
