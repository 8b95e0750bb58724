/* Little-endian stores into byte buffers, no alignment assumed: the one encoding of the files and
 * tables hvtrace lays out byte by byte (trace.dat's headers and pages, boot_params, ACPI tables).
 */
#ifndef HVT_LE_BYTES_H
#define HVT_LE_BYTES_H

#include <stdint.h>

/* Stores @v at @p, least significant byte first. Pure. */
static inline void le_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* Stores @v at @p, least significant byte first. Pure. */
static inline void le_put32(uint8_t *p, uint32_t v)
{
	le_put16(p, (uint16_t)v);
	le_put16(p + 2, (uint16_t)(v >> 16));
}

/* Stores @v at @p, least significant byte first. Pure. */
static inline void le_put64(uint8_t *p, uint64_t v)
{
	le_put32(p, (uint32_t)v);
	le_put32(p + 4, (uint32_t)(v >> 32));
}

#endif
