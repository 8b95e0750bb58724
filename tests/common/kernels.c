#include "tests/common/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long hv_kernels_read(const char *dir, const char *def, struct hv_kernel *out, size_t max)
{
	const char *env = getenv("HVT_KERNELS");
	char list[512], *save = NULL;
	size_t n = 0;

	snprintf(list, sizeof(list), "%s", env ? env : def);
	for (char *w = strtok_r(list, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
		struct hv_kernel *k = &out[n];
		/* 6.1, the default guest, is @dir itself (scripts/fetch-guest.sh); the others @dir/K */
		bool top = !strcmp(w, "6.1");
		char sub[40];

		if (n == max) {
			printf("HVT_KERNELS: more than %zu kernels\n", max);
			return -1;
		}
		if (strlen(w) >= sizeof(k->name)) {
			printf("HVT_KERNELS: kernel name \"%.40s...\" too long\n", w);
			return -1;
		}
		memset(k, 0, sizeof(*k));
		snprintf(k->name, sizeof(k->name), "%s", w);
		snprintf(sub, sizeof(sub), "%s%s", top ? "" : "/", top ? "" : w);
		snprintf(k->vmlinuz, sizeof(k->vmlinuz), "%s%s/vmlinuz", dir, sub);
		snprintf(k->initrd, sizeof(k->initrd), "%s%s/initramfs.cpio.gz", dir, sub);
		k->present = !access(k->vmlinuz, R_OK) && !access(k->initrd, R_OK);
		if (!k->present)
			printf("kernel %s: no guest in %s%s (make guest KERNEL=%s)\n", w, dir, sub, w);
		n++;
	}
	return (long)n;
}
