#include "host/qemu/qemu_vcpu_threads.h"
#include "host/qemu/qmp_json.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPLY_MAX 65536

/* A non-negative JSON integer of at most 9 digits (what a vCPU index and a thread id are). */
static bool small_int(const char *v, size_t len, int *out)
{
	long n = 0;

	if (!len || len > 9)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		n = n * 10 + (v[i] - '0');
	}
	*out = (int)n;
	return true;
}

int qemu_vcpu_threads_parse(const char *json, int *tids, unsigned max, unsigned *nr, char *err,
			    size_t errlen)
{
	size_t len = strlen(json), i = qmp_json_skip_ws(json, 0, len);
	bool seen[256] = {false};
	unsigned count = 0;

	*nr = 0;
	if (max > 256)
		max = 256;
	if (i == len || json[i] != '[')
		goto bad;
	i = qmp_json_skip_ws(json, i + 1, len);
	while (i < len && json[i] != ']') {
		struct qmp_json_scan st = {0};
		const char *v;
		size_t n, vlen;
		int index, tid;

		if (json[i] != '{' || !(n = qmp_json_bracket_scan(json + i, len - i, &st)))
			goto bad;
		if (qmp_json_member(json + i, n, "cpu-index", &v, &vlen) ||
		    !small_int(v, vlen, &index) ||
		    qmp_json_member(json + i, n, "thread-id", &v, &vlen) ||
		    !small_int(v, vlen, &tid) || tid <= 0) {
			msg_fmt(err, errlen,
				"query-cpus-fast: a vCPU without a cpu-index or thread-id");
			return -EINVAL;
		}
		if ((unsigned)index >= max || seen[index]) {
			msg_fmt(err, errlen, "query-cpus-fast: vCPU %d %s", index,
				(unsigned)index >= max ? "out of range" : "listed twice");
			return -EINVAL;
		}
		seen[index] = true;
		tids[index] = tid;
		count++;
		i = qmp_json_skip_ws(json, i + n, len);
		if (i < len && json[i] == ',')
			i = qmp_json_skip_ws(json, i + 1, len);
		else if (i == len || json[i] != ']')
			goto bad;
	}
	if (i == len || qmp_json_skip_ws(json, i + 1, len) != len)
		goto bad;
	for (unsigned k = 0; k < count; k++)
		if (!seen[k]) {
			msg_fmt(err, errlen, "query-cpus-fast: vCPU %u missing", k);
			return -EINVAL;
		}
	if (!count) {
		msg_fmt(err, errlen, "query-cpus-fast: no vCPU");
		return -EINVAL;
	}
	*nr = count;
	return 0;
bad:
	msg_fmt(err, errlen, "query-cpus-fast: not an array of vCPUs");
	return -EINVAL;
}

int qemu_vcpu_threads(int (*qmp_cmd)(void *ctx, const char *cmd, char *reply, size_t len),
		      void *ctx, int pid, int *tids, unsigned max, unsigned *nr, char *err,
		      size_t errlen)
{
	char *reply = malloc(REPLY_MAX);
	int ret;

	if (!reply)
		return -ENOMEM;
	if (!qmp_cmd) {
		msg_fmt(err, errlen, "no QMP monitor to ask for the vCPU threads");
		free(reply);
		return -ENOTSUP;
	}
	ret = qmp_cmd(ctx, "{\"execute\":\"query-cpus-fast\"}", reply, REPLY_MAX);
	if (ret < 0) {
		msg_fmt(err, errlen, "query-cpus-fast failed");
		free(reply);
		return ret;
	}
	ret = qemu_vcpu_threads_parse(reply, tids, max, nr, err, errlen);
	free(reply);
	for (unsigned i = 0; !ret && pid > 0 && i < *nr; i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d/task/%d", pid, tids[i]);
		if (stat(path, &st) < 0) {
			msg_fmt(err, errlen,
				"query-cpus-fast: vCPU %u's thread %d is not QEMU's (pid %d)", i,
				tids[i], pid);
			ret = -EINVAL;
		}
	}
	return ret;
}
