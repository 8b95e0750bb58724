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
	pid_t pid;
	uint64_t ram_size;
	unsigned nr_vcpus;
};

/* Connects to $LIBVIRT_DEFAULT_URI or qemu:///system and finds the running domain @name. Returns 0, or
 * -ENOENT (no such running domain) / -ECONNREFUSED (no libvirtd) with a reason in @err. */
int libvirt_dom_open(struct libvirt_dom *d, const char *name, char *err, size_t errlen);

/* Runs human-monitor command @cmd in the domain's QEMU; its output (NUL-terminated) in @out. 0 or -EIO. */
int libvirt_dom_hmp(void *ctx, const char *cmd, char *out, size_t outlen);

void libvirt_dom_close(struct libvirt_dom *d);

#endif
