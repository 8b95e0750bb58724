/* Little-endian stores into (and loads from) byte buffers, no alignment assumed: the one encoding
 * of the files and tables hvtrace lays out byte by byte (trace.dat's headers and pages,
 * boot_params, ACPI tables).
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

/* The value stored at @p, least significant byte first. Pure. */
static inline uint32_t le_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The value stored at @p, least significant byte first. Pure. */
static inline uint64_t le_get64(const uint8_t *p)
{
	return (uint64_t)le_get32(p) | (uint64_t)le_get32(p + 4) << 32;
}

#endif
