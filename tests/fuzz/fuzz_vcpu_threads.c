/* libFuzzer harness for QEMU's query-cpus-fast answer as record --host reads it
 * (host/qemu/qemu_vcpu_threads.c): any bytes, NUL-terminated; a success names each vCPU of 0..nr-1
 * once with a positive thread id. */
#include "host/qemu/qemu_vcpu_threads.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *json = malloc(size + 1), err[160];
	int tids[16];
	unsigned nr = 99;

	if (!json)
		return 0;
	memcpy(json, data, size);
	json[size] = 0;
	if (qemu_vcpu_threads_parse(json, tids, 16, &nr, err, sizeof(err)) == 0) {
		if (nr < 1 || nr > 16)
			abort();
		for (unsigned i = 0; i < nr; i++)
			if (tids[i] <= 0)
				abort();
	} else if (nr != 0 || !err[0]) {
		abort();
	}
	free(json);
	return 0;
}
