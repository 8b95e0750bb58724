/* x86 instruction bytes hvtrace writes or recognises at patchable function entries. */
#ifndef HVT_X86_INSN_H
#define HVT_X86_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/x86_machine.h"

#define X86_NOP5_LEN 5
#define X86_CALL_REL32 0xe8
#define X86_JMP_REL32  0xe9

/* True if the 5 bytes at @p are one of the NOP5 forms compilers and Linux's ftrace leave. Pure. */
bool x86_is_nop5(const uint8_t *p);

#define X86_CALL_BEFORE_LEN 7

/* Whether the @b[X86_CALL_BEFORE_LEN] bytes just before an address end with a CALL instruction
 * (rel32, or indirect through a register, a register plus displacement, RIP plus disp32 or an
 * absolute disp32), so the address may be a return address. By shape, not a decoder: a byte run
 * that only looks like one passes. Pure. */
bool x86_call_precedes(const uint8_t *b);

/* 4 when the function starting at @p opens with ENDBR64 or a NOP Linux sealed one into, else 0.
 * Pure. */
size_t x86_entry_pad_len(const uint8_t *p);

/* CALL rel32 (@call) or JMP rel32 at @at to @to into @out (5 bytes): 0, or -ERANGE when @to is
 * beyond a rel32's reach. Pure. */
int x86_encode_rel32(uint64_t at, uint64_t to, bool call, uint8_t *out);

/* The target of a CALL rel32 (or, if @jumps, a JMP rel32) at @p (@n bytes, at @at) into *@to:
 * returns 5, or 0 if none starts there. Pure. */
size_t x86_direct_branch(const uint8_t *p, size_t n, uint64_t at, bool jumps, uint64_t *to);

#endif
