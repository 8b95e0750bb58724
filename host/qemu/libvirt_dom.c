#include "host/qemu/libvirt_dom.h"

#include <errno.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet_errors(void *data, virErrorPtr e)
{
	(void)data;
	(void)e;
}

static const char *last_error(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->message ? e->message : "unknown libvirt error";
}

/* libvirt's qemu driver keeps the QEMU pid in its state directory. */
static pid_t domain_pid(const char *name)
{
	char path[256];
	FILE *f;
	int pid = 0;

	snprintf(path, sizeof(path), "/run/libvirt/qemu/%s.pid", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &pid) != 1)
		pid = -1;
	fclose(f);
	return pid;
}

int libvirt_dom_open(struct libvirt_dom *d, const char *name, char *err, size_t errlen)
{
	const char *uri = getenv("LIBVIRT_DEFAULT_URI");
	virDomainInfo info;

	memset(d, 0, sizeof(*d));
	virSetErrorFunc(NULL, quiet_errors);
	d->conn = virConnectOpen(uri ? uri : "qemu:///system");
	if (!d->conn) {
		snprintf(err, errlen, "libvirt %s: %s", uri ? uri : "qemu:///system", last_error());
		return -ECONNREFUSED;
	}
	d->dom = virDomainLookupByName(d->conn, name);
	if (!d->dom || virDomainIsActive(d->dom) != 1 || virDomainGetInfo(d->dom, &info) < 0) {
		snprintf(err, errlen, "libvirt domain '%s': %s", name,
			 d->dom ? "not running" : "no such domain");
		libvirt_dom_close(d);
		return -ENOENT;
	}
	d->ram_size = (uint64_t)info.memory * 1024;
	d->nr_vcpus = info.nrVirtCpu;
	d->pid = domain_pid(name);
	if (d->pid <= 0) {
		snprintf(err, errlen, "libvirt domain '%s': cannot find its QEMU process", name);
		libvirt_dom_close(d);
		return -ENOENT;
	}
	return 0;
}

int libvirt_dom_hmp(void *ctx, const char *cmd, char *out, size_t outlen)
{
	struct libvirt_dom *d = ctx;
	char *result = NULL;

	if (virDomainQemuMonitorCommand(d->dom, cmd, &result,
					VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP) < 0) {
		snprintf(out, outlen, "%s", last_error());
		return -EIO;
	}
	snprintf(out, outlen, "%s", result ? result : "");
	free(result);
	return 0;
}

void libvirt_dom_close(struct libvirt_dom *d)
{
	if (d->dom)
		virDomainFree(d->dom);
	if (d->conn)
		virConnectClose(d->conn);
	d->dom = d->conn = NULL;
}
