/* The return trampoline: the guest address every hooked return slot points at while return tracing is
 * on. hvtrace keeps an INT3 on its first byte, so each return exits to the host, which resumes the vCPU
 * at the saved return address. For a Linux guest it is a byte of its own text that is never executed
 * once ftrace has NOPed the call sites (the body of __fentry__, a RET); for an ELF guest of the embedded
 * VMM it is these bytes, placed in a page the VMM maps; for a kernel the embedded VMM boots with trap
 * probes, these bytes too, in a page the tracer maps (target.trampoline_page). */
#ifndef HVT_GUEST_STUB_TRAMPOLINE_H
#define HVT_GUEST_STUB_TRAMPOLINE_H

#include <stddef.h>
#include <stdint.h>

extern const uint8_t guest_stub_trampoline[];
extern const size_t guest_stub_trampoline_size;

#endif
