/* x86 instruction bytes hvtrace writes or recognises at patchable function entries. */
#ifndef HVT_X86_INSN_H
#define HVT_X86_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define X86_INT3 0xcc
#define X86_NOP5_LEN 5
#define X86_CALL_REL32 0xe8

/* True if the 5 bytes at @p are one of the NOP5 forms compilers and Linux's ftrace leave. Pure. */
bool x86_is_nop5(const uint8_t *p);

#define X86_CALL_BEFORE_LEN 7

/* Whether the @b[X86_CALL_BEFORE_LEN] bytes just before an address end with a CALL instruction
 * (rel32, or indirect through a register, a register plus displacement, RIP plus disp32 or an
 * absolute disp32), so the address may be a return address. By shape, not a decoder: a byte run
 * that only looks like one passes. Pure. */
bool x86_call_precedes(const uint8_t *b);

/* Formats @n bytes as "0f 1f 44 00 00" into @buf (needs 3*n bytes). Returns @buf. Pure. */
char *x86_format_bytes(const uint8_t *p, size_t n, char *buf);

#endif
