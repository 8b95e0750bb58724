#include "tests/common/trixie.h"
#include "tests/common/hv_run.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

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
