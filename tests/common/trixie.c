#include "tests/common/trixie.h"
#include "tests/common/hv_run.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *hv_trixie_root(void)
{
	static char root[512];
	static int state; /* 0: not looked, 1: there, -1: not */
	const char *env = getenv("HVT_TRIXIE_ROOT"), *cache = getenv("HVTRACE_CACHE");
	char tc[600];

	if (state)
		return state > 0 ? root : NULL;
	if (env && *env)
		snprintf(root, sizeof(root), "%s", env);
	else
		snprintf(root, sizeof(root), "%s/trixie", cache && *cache ? cache : "/var/cache/hvtrace");
	snprintf(tc, sizeof(tc), "%s/usr/bin/trace-cmd", root);
	if (access(tc, X_OK)) {
		printf("SKIPPED: trace-cmd of Debian 13: none in %s (scripts/trixie-chroot.sh makes it)\n",
		       root);
		state = -1;
		return NULL;
	}
	state = 1;
	return root;
}

char *hv_trixie_trace_cmd(const char *root, const char *args, const char *file)
{
	char inside[64];
	char *out;

	snprintf(inside, sizeof(inside), "/tmp/hvt-trixie-%d.dat", (int)getpid());
	out = hv_sh("cp '%s' '%s%s' && chroot '%s' trace-cmd report %s -i %s 2>&1; rm -f '%s%s'", file,
		    root, inside, root, args, inside, root, inside);
	if (!out)
		fail_msg("trace-cmd of Debian 13 in %s did not run", root);
	return out;
}

char *hv_trixie_trace_cmd_pair(const char *root, const char *args, const char *host,
			       const char *guest)
{
	char in_host[64], in_guest[64];
	char *out;

	snprintf(in_host, sizeof(in_host), "/tmp/hvt-trixie-%d-host.dat", (int)getpid());
	snprintf(in_guest, sizeof(in_guest), "/tmp/hvt-trixie-%d.dat", (int)getpid());
	out = hv_sh("cp '%s' '%s%s' && cp '%s' '%s%s' && chroot '%s' trace-cmd report %s -i %s -i %s "
		    "2>&1; rm -f '%s%s' '%s%s'",
		    host, root, in_host, guest, root, in_guest, root, args, in_host, in_guest, root,
		    in_host, root, in_guest);
	if (!out)
		fail_msg("trace-cmd of Debian 13 in %s did not run", root);
	return out;
}

char *hv_trixie_kernelshark(const char *root, const char *file)
{
	static const char *const need[] = {"/usr/include/kernelshark/libkshark.h",
					   "/usr/include/json-c/json.h", "/usr/bin/gcc"};
	char path[600], inside[64];
	char *out;

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", root, need[i]);
		if (access(path, R_OK)) {
			printf("SKIPPED: KernelShark 2.4: no %s in %s (make trixie-tools installs "
			       "kernelshark, libkshark-dev, libjson-c-dev and gcc there)\n",
			       need[i], root);
			return NULL;
		}
	}
	snprintf(inside, sizeof(inside), "/tmp/hvt-kshark-%d", (int)getpid());
	out = hv_sh("cp tests/viewer/kshark-load.c '%s%s.c' && chroot '%s' gcc -O1 -Wall -Werror "
		    "-o %s %s.c -lkshark 2>&1 && cp '%s' '%s%s.dat' && chroot '%s' %s %s.dat; s=$?; "
		    "rm -f '%s%s' '%s%s.c' '%s%s.dat'; exit $s",
		    root, inside, root, inside, inside, file, root, inside, root, inside, inside,
		    root, inside, root, inside, root, inside);
	return out;
}

/* One `trace-cmd report` record line [@l, @end) in kshark-load's form, appended to @o; false if it is
 * out of shape. The line: spaces, TASK-PID, spaces, "[CPU]", FLAGS (3.3; 3.1.6 prints none for
 * hvtrace's files), spaces, "TIME: EVENT:", spaces, INFO (TASK may hold '-' and spaces: the PID is the
 * digits before the spaces before "[CPU]"). */
static bool record_line(const char *l, const char *end, FILE *o)
{
	const char *task = l + strspn(l, " "), *cpu, *pid, *dash, *time, *event, *info;

	for (cpu = task + 1; cpu + 5 < end; cpu++)
		if (cpu[-1] == ' ' && cpu[0] == '[' && isdigit((unsigned char)cpu[1]) &&
		    isdigit((unsigned char)cpu[2]) && isdigit((unsigned char)cpu[3]) && cpu[4] == ']' &&
		    cpu[5] == ' ')
			break;
	if (cpu + 5 >= end)
		return false;
	for (pid = cpu - 1; pid > task && *pid == ' '; pid--)
		;
	for (dash = pid; dash > task && isdigit((unsigned char)*dash); dash--)
		;
	if (dash <= task || *dash != '-' || dash == pid)
		return false;
	time = cpu + 5 + strspn(cpu + 5, " ");
	if (time[strcspn(time, " ") - 1] != ':') { /* latency flags (3.3), not the time: past them */
		time += strcspn(time, " ");
		time += strspn(time, " ");
	}
	event = memchr(time, ':', (size_t)(end - time));
	if (!event || event + 2 >= end || event[1] != ' ')
		return false;
	event += 2;
	info = memchr(event, ':', (size_t)(end - event));
	if (!info)
		return false;
	fprintf(o, "%.*s %.5s %.*s: %.*s: ", (int)(pid + 1 - task), task, cpu,
		(int)(event - 2 - time), time, (int)(info - event), event);
	info++;
	info += strspn(info, " ");
	fprintf(o, "%.*s\n", (int)(end - info), info);
	return true;
}

char *hv_trace_cmd_records(const char *report)
{
	char *out = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&out, &len);

	if (!o)
		fail_msg("open_memstream");
	for (const char *l = report; *l;) {
		const char *end = l + strcspn(l, "\n");

		if (strncmp(l, "cpus=", 5) && !record_line(l, end, o))
			fail_msg("trace-cmd report: a line out of shape: %.*s", (int)(end - l), l);
		l = *end ? end + 1 : end;
	}
	fclose(o);
	return out;
}

bool hv_trixie_libvirt_up(char *uri, size_t urilen, char *root, size_t rootlen)
{
	FILE *p = popen("tests/qemu/libvirt-trixie.sh daemons", "r");
	char line[512] = "";
	const char *sock;
	int status;

	if (!p)
		return false;
	if (!fgets(line, sizeof(line), p))
		line[0] = 0;
	status = pclose(p);
	line[strcspn(line, "\n")] = 0;
	sock = strstr(line, "?socket=");
	if (status != 0 || !sock || !strstr(sock, "/run/libvirt/") || strlen(line) >= urilen) {
		printf("%s\n", line[0] ? line : "SKIPPED: tests/qemu/libvirt-trixie.sh daemons failed");
		return false;
	}
	snprintf(uri, urilen, "%s", line);
	sock += strlen("?socket=");
	snprintf(root, rootlen, "%.*s", (int)(strstr(sock, "/run/libvirt/") - sock), sock);
	setenv("HVT_LIBVIRT_URI", uri, 1);
	return true;
}
