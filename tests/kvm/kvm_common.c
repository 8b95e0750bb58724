#include "tests/kvm/kvm_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *hv_guest(const char *variant)
{
	static char buf[512];
	const char *g = getenv("GUEST");

	if (!g)
		g = "build/guest/test-guest.elf";
	if (!variant)
		return g;
	snprintf(buf, sizeof(buf), "%.*s-%s.elf", (int)(strlen(g) - 4), g, variant);
	return buf;
}

long guest_count(const struct hv_result *r, const char *func, unsigned cpu)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "hvt-guest: count %s cpu %u = ", func, cpu);
	p = strstr(r->console, key);
	return p ? atol(p + strlen(key)) : 0;
}

long guest_count_all(const struct hv_result *r, const char *func, unsigned nr_cpus)
{
	long n = 0;

	for (unsigned c = 0; c < nr_cpus; c++)
		n += guest_count(r, func, c);
	return n;
}

bool kvm_available(void)
{
	int fd = open("/dev/kvm", O_RDWR);

	if (fd < 0) {
		printf("SKIPPED: KVM integration tests: /dev/kvm: %s\n", strerror(errno));
		return false;
	}
	close(fd);
	return true;
}
