/* Little-endian stores into byte buffers (boot_params, ACPI tables): no alignment assumed. */
#ifndef HVT_HOST_KVM_LE_BYTES_H
#define HVT_HOST_KVM_LE_BYTES_H

#include <stdint.h>

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

#endif
