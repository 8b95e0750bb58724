#include "host/cli/input_check.h"
#include "host/hosttrace/host_rec.h"
#include "vmi/vmi_file.h"

#include <stdio.h>
#include <unistd.h>

/* @path (when not NULL), named @what, is a regular file that opens for reading. */
static int check_one(const char *what, const char *path, char *err, size_t errlen)
{
	int fd;

	if (!path)
		return 0;
	fd = vmi_file_open(what, path, 0, NULL, err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int input_check(const struct session *s, char *err, size_t errlen)
{
	char host[4096];
	int ret;

	if (s->cmd == CMD_REPORT) {
		ret = check_one("-i", s->input, err, errlen);
		if (ret == 0 && s->report_exits && s->host_input)
			ret = check_one("--host-input", s->host_input, err, errlen);
		/* the default host file may be missing (report says so then), never a FIFO */
		else if (ret == 0 && s->report_exits &&
			 host_rec_path(s->input, host, sizeof(host)) == 0 &&
			 access(host, F_OK) == 0)
			ret = check_one(NULL, host, err, errlen);
		return ret;
	}
	if (s->cmd != CMD_RUN && s->cmd != CMD_ATTACH && s->cmd != CMD_LIST_FUNCTIONS)
		return 0;
	ret = check_one(NULL, s->guest, err, errlen);
	if (ret == 0)
		ret = check_one("--kernel", s->kernel, err, errlen);
	if (ret == 0)
		ret = check_one("--initrd", s->initrd, err, errlen);
	if (ret == 0)
		ret = check_one("--system-map", s->system_map, err, errlen);
	return ret;
}
