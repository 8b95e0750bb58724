/* KernelShark headless: a trace.dat loaded by libkshark, the library under KernelShark's GUI (Debian 13's
 * libkshark2 2.4, its headers from libkshark-dev), as the GUI loads it: kshark_open, then
 * kshark_load_entries, each entry's task, event name and info as the GUI's table shows them. Built and
 * run inside the trixie root of scripts/trixie-chroot.sh by tests/common/trixie.c
 * (hv_trixie_kernelshark); never by the project's Makefile.
 *
 *   kshark-load FILE
 * prints "entries=N", then each of the N entries in KernelShark's (time) order as trace-cmd report
 * prints a record, less its latency flags: "TASK-PID [CPU] SEC.USEC: EVENT: INFO" (the event name
 * without its "system/", the time rounded to the microsecond as trace-cmd rounds it). Exit 1 when
 * the file cannot be opened or loaded, 2 on a usage error. */
#include <kernelshark/libkshark.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct kshark_context *ctx = NULL;
	struct kshark_entry **rows = NULL;
	ssize_t n;
	int sd;

	if (argc != 2 || !kshark_instance(&ctx)) {
		fprintf(stderr, "usage: kshark-load FILE\n");
		return 2;
	}
	sd = kshark_open(ctx, argv[1]);
	if (sd < 0) {
		fprintf(stderr, "kshark-load: kshark_open %s: %d\n", argv[1], sd);
		return 1;
	}
	n = kshark_load_entries(ctx, sd, &rows);
	if (n < 0) {
		fprintf(stderr, "kshark-load: kshark_load_entries %s: %zd\n", argv[1], n);
		return 1;
	}
	printf("entries=%zd\n", n);
	for (ssize_t i = 0; i < n; i++) {
		char *event = kshark_get_event_name(rows[i]), *task = kshark_get_task(rows[i]),
		     *info = kshark_get_info(rows[i]);
		const char *name = event ? strchr(event, '/') : NULL, *text = info ? info : "";
		uint64_t usec = ((uint64_t)rows[i]->ts + 500) / 1000;

		while (*text == ' ')
			text++;
		printf("%s-%d [%03d] %llu.%06llu: %s: %s\n", task ? task : "<no task>", rows[i]->pid,
		       rows[i]->cpu, (unsigned long long)(usec / 1000000),
		       (unsigned long long)(usec % 1000000),
		       name ? name + 1 : event ? event : "<no event>", text);
		free(event);
		free(task);
		free(info);
		free(rows[i]);
	}
	free(rows);
	kshark_close(ctx, sd);
	kshark_free(ctx);
	return 0;
}
