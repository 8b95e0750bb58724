#include "host/qemu/libvirt_dom.h"
#include "host/qemu/qemu_find.h"
#include "host/qemu/qmp_json.h"
#include "host/util/msg_fmt.h"
#include "host/util/peer_text.h"

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

/* libvirt's last error message (a peer's text: libvirtd's, QEMU's), escaped into @buf. */
static const char *last_error(char *buf, size_t len)
{
	virErrorPtr e = virGetLastError();

	return peer_str(e && e->message ? e->message : "unknown libvirt error", buf, len);
}

/* The URI hvtrace connects to: -c URI, $LIBVIRT_DEFAULT_URI, or qemu:///system. */
static const char *uri_of(const char *uri)
{
	if (uri && uri[0])
		return uri;
	uri = getenv("LIBVIRT_DEFAULT_URI");
	return uri && uri[0] ? uri : "qemu:///system";
}

int libvirt_dom_open(struct libvirt_dom *d, const char *uri, const char *name, char *err,
		     size_t errlen)
{
	virDomainInfo info;
	char why[256];

	memset(d, 0, sizeof(*d));
	snprintf(d->uri, sizeof(d->uri), "%s", uri_of(uri));
	virSetErrorFunc(NULL, quiet_errors);
	d->conn = virConnectOpen(d->uri);
	if (!d->conn) {
		msg_fmt(err, errlen, "libvirt %s: %s", d->uri, last_error(why, sizeof(why)));
		return -ECONNREFUSED;
	}
	d->dom = virDomainLookupByName(d->conn, name);
	if (!d->dom || virDomainIsActive(d->dom) != 1 || virDomainGetInfo(d->dom, &info) < 0 ||
	    virDomainGetUUIDString(d->dom, d->uuid) < 0) {
		msg_fmt(err, errlen, "libvirt domain '%s': %s", name,
			d->dom ? "not running" : "no such domain");
		libvirt_dom_close(d);
		return -ENOENT;
	}
	d->ram_size = (uint64_t)info.memory * 1024;
	d->nr_vcpus = info.nrVirtCpu;
	/* libvirt has no call for the pid: the domain's UUID, which QEMU gets as -uuid */
	d->pid = qemu_find_by_uuid(d->uuid, why, sizeof(why));
	if (d->pid <= 0) {
		msg_fmt(err, errlen, "libvirt domain '%s' (%s): %s", name, d->uri, why);
		libvirt_dom_close(d);
		return -ENOENT;
	}
	return 0;
}

int libvirt_dom_reopen(struct libvirt_dom *d, char *err, size_t errlen)
{
	char why[256];

	/* the inherited connection is dropped, not closed: its state is the dead process's */
	d->conn = d->dom = NULL;
	d->conn = virConnectOpen(d->uri);
	if (!d->conn) {
		msg_fmt(err, errlen, "libvirt %s: %s", d->uri, last_error(why, sizeof(why)));
		return -ECONNREFUSED;
	}
	d->dom = virDomainLookupByUUIDString(d->conn, d->uuid);
	if (!d->dom) {
		msg_fmt(err, errlen, "libvirt %s: no domain %s any more", d->uri, d->uuid);
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
		last_error(out, outlen);
		return -EIO;
	}
	snprintf(out, outlen, "%s", result ? result : "");
	free(result);
	return 0;
}

int libvirt_dom_qmp(void *ctx, const char *cmd, char *reply, size_t len)
{
	struct libvirt_dom *d = ctx;
	char *result = NULL;
	const char *v;
	size_t vlen;
	int ret = 0;

	if (virDomainQemuMonitorCommand(d->dom, cmd, &result, 0) < 0) {
		last_error(reply, len);
		return -EIO;
	}
	if (!result || qmp_json_member(result, strlen(result), "return", &v, &vlen) < 0)
		ret = result && strstr(result, "\"CommandNotFound\"") ? -ENOSYS : -EINVAL;
	else if (vlen >= len)
		ret = -ENOSPC;
	else
		snprintf(reply, len, "%.*s", (int)vlen, v);
	if (ret < 0)
		reply[0] = 0;
	free(result);
	return ret;
}

void libvirt_dom_close(struct libvirt_dom *d)
{
	if (d->dom)
		virDomainFree(d->dom);
	if (d->conn)
		virConnectClose(d->conn);
	d->dom = d->conn = NULL;
}
