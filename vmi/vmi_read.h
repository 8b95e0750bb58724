/* The one way guest memory is read by code that only reads it (vmi, function-based events). */
#ifndef HVT_VMI_READ_H
#define HVT_VMI_READ_H

#include <stddef.h>
#include <stdint.h>

/* Reads @len bytes of guest-virtual memory at @gva into @buf, as the address space @ctx stands for
 * sees it (a vCPU's page tables, the kernel's: whoever makes the reader binds that, a CPU included,
 * into @ctx). Returns 0 or a negative errno. Which threads may call it is its maker's contract. */
typedef int (*vmi_read_fn)(void *ctx, uint64_t gva, void *buf, size_t len);

#endif
