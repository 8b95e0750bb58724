#include "host/session/sched_boost.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AUTOGROUP "/proc/self/autogroup"

int sched_boost_parse_autogroup(const char *line, int *nice)
{
	const char *p = strstr(line, " nice ");
	char *end;
	long v;

	if (!p)
		return -EINVAL;
	errno = 0;
	v = strtol(p + 6, &end, 10);
	if (errno || end == p + 6 || (*end && *end != '\n') || v < -20 || v > 19)
		return -EINVAL;
	*nice = (int)v;
	return 0;
}

/* The autogroup's nice now: 0 and *@nice, or -errno (no autogroups). */
static int autogroup_nice(int *nice)
{
	char line[128];
	FILE *f = fopen(AUTOGROUP, "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	if (fgets(line, sizeof(line), f))
		ret = sched_boost_parse_autogroup(line, nice);
	fclose(f);
	return ret;
}

static int set_autogroup_nice(int nice)
{
	FILE *f = fopen(AUTOGROUP, "we");
	int ret = 0;

	if (!f)
		return -errno;
	if (fprintf(f, "%d\n", nice) < 0)
		ret = -EIO;
	if (fclose(f) != 0 && !ret)
		ret = -errno;
	return ret;
}

void sched_boost_begin(struct sched_boost *b)
{
	int was;

	b->autogroup_set = false;
	if (nice(SCHED_BOOST_NICE) == -1 && errno)
		errno = 0;
	if (autogroup_nice(&was) == 0 && was > SCHED_BOOST_NICE &&
	    set_autogroup_nice(SCHED_BOOST_NICE) == 0) {
		b->autogroup_set = true;
		b->autogroup_was = was;
	}
}

void sched_boost_end(struct sched_boost *b)
{
	int now;

	if (b->autogroup_set && autogroup_nice(&now) == 0 && now == SCHED_BOOST_NICE)
		set_autogroup_nice(b->autogroup_was);
	b->autogroup_set = false;
}
