/* The kernel matrix of the Linux integration tests (issue 23): the Debian kernels named in
 * $HVT_KERNELS ("6.1 6.12 7.3", spaces or commas), each one's guest as `make guest KERNEL=K` puts
 * it: 6.1, the default guest, in DIR itself, any other in DIR/K. */
#ifndef HVT_TESTS_KERNELS_H
#define HVT_TESTS_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

/* One kernel of the matrix: its name (make guest KERNEL=) and its guest's files. */
struct hv_kernel {
	char name[32];
	char vmlinuz[256];
	char initrd[256];
	bool present; /* both files readable */
};

/* Fills @out (at most @max) with the kernels of $HVT_KERNELS, or of @def when it is not set, whose
 * guests are under @dir; a missing one is kept with present false and named in one line on stdout,
 * "kernel K: no guest in DIR/K (make guest KERNEL=K)". Returns how many were filled, or -1 (one line
 * said why) when $HVT_KERNELS names more than @max or a name longer than hv_kernel holds. */
long hv_kernels_read(const char *dir, const char *def, struct hv_kernel *out, size_t max);

#endif
