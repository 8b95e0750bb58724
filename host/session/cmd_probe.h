/* --probe: trap or stub probes for a guest, the same choice for every backend. */
#ifndef HVT_CMD_PROBE_H
#define HVT_CMD_PROBE_H

#include "host/session/session.h"
#include "host/trace/target.h"
#include "vmi/vmi_task.h"

#include <stdbool.h>
#include <stddef.h>

/* --probe: whether the tracer uses stub probes on @tgt for the guest described by @task
 * (@target_why: why this guest cannot host the stub, or NULL). `auto` falls back to trap probes
 * where stubs cannot work, unless @no_trap (cmd_check_int3: INT3 does not exit here); `stub`, or
 * `auto` with @no_trap, says why not in @err (-ENOTSUP). */
int cmd_probe_mode(const struct session *s, const struct target *tgt,
		   const struct vmi_task_layout *task, const char *target_why, bool no_trap,
		   bool *stub, char *err, size_t errlen);

#endif
