/* A running libvirt domain, found by name through the libvirt API: its QEMU process, RAM size, vCPU
 * count, and monitor commands passed through libvirt (libvirt owns the QEMU monitor). */
#ifndef HVT_LIBVIRT_DOM_H
#define HVT_LIBVIRT_DOM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct libvirt_dom {
	void *conn; /* virConnectPtr */
	void *dom;  /* virDomainPtr */
	char uri[256];
	char uuid[40]; /* VIR_UUID_STRING_BUFLEN */
	pid_t pid;
	uint64_t ram_size;
	unsigned nr_vcpus;
};

/* Connects to @uri (NULL: $LIBVIRT_DEFAULT_URI, else qemu:///system) and finds the running domain
 * @name, and its QEMU process: the one on this host whose command line has the domain's -uuid.
 * Returns 0, or -ENOENT (no such running domain, or no such process here) / -ECONNREFUSED (no
 * libvirt at @uri) with a reason in @err. */
int libvirt_dom_open(struct libvirt_dom *d, const char *uri, const char *name, char *err,
		     size_t errlen);

/* In a forked process whose parent opened @d: a connection of its own to the same URI and domain
 * (by UUID). The inherited one is abandoned, not closed. 0 or -errno with one line in @err. */
int libvirt_dom_reopen(struct libvirt_dom *d, char *err, size_t errlen);

/* Runs human-monitor command @cmd in the domain's QEMU; its output (NUL-terminated) in @out. 0 or -EIO. */
int libvirt_dom_hmp(void *ctx, const char *cmd, char *out, size_t outlen);

/* Runs QMP command @cmd (`{"execute":...}`) in the domain's QEMU; the "return" value's JSON text
 * in @reply. 0, -ENOSYS / -EINVAL when QEMU answers an error, -ENOSPC (too long), -EIO (libvirt's
 * own failure, its message in @reply). */
int libvirt_dom_qmp(void *ctx, const char *cmd, char *reply, size_t len);

void libvirt_dom_close(struct libvirt_dom *d);

#endif
