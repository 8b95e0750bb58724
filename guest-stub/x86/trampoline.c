#include "guest-stub/trampoline.h"

/* RET: what __fentry__ holds in a Linux guest. The tracer writes INT3 over it while tracing returns. */
const uint8_t guest_stub_trampoline[] = {0xc3};
const size_t guest_stub_trampoline_size = sizeof(guest_stub_trampoline);
