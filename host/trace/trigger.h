/* ftrace's function commands as --trigger 'FUNC:CMD[:N]': traceon, traceoff, stacktrace, snapshot
 * (their parser), the tracing on/off timeline they switch, and the guest stack walk of stacktrace.
 */
#ifndef HVT_TRIGGER_H
#define HVT_TRIGGER_H

#include "vmi/vmi_read.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum trigger_cmd { TRIG_TRACEON, TRIG_TRACEOFF, TRIG_STACKTRACE, TRIG_SNAPSHOT };

#define TRIGGER_MAX_FRAMES   32	   /* return addresses a stacktrace records (without frame pointers
				    * stale text words above RSP count too: room for the real chain) */
#define TRIGGER_STACK_WINDOW 16384 /* bytes above RSP a frame may lie in, or the scan reads */

struct trigger {
	char func[128];
	enum trigger_cmd cmd;
	long count; /* :N, the times it may fire; -1 without */
};

/* Parses "FUNC:traceon|traceoff|stacktrace|snapshot[:N]" (N from 1 to 2^31-1). 0, or -EINVAL with
 * "--trigger 'TEXT': REASON" in @err. Pure. */
int trigger_parse(const char *text, struct trigger *t, char *err, size_t errlen);

/* "traceon", "traceoff", "stacktrace", "snapshot". */
const char *trigger_cmd_name(enum trigger_cmd c);

/* Tracing on or off over time (tracing_on): the last TRACING_LOG switches, each at a record
 * timestamp, so a record made before a switch but seen after it (stub probes' records are drained
 * late) is judged by its own time. Writers: trigger hits (any vCPU thread); readers: any thread. */
#define TRACING_LOG 64

struct tracing_state {
	bool initial;			   /* before the first switch */
	_Atomic uint64_t n;		   /* switches so far */
	_Atomic uint64_t log[TRACING_LOG]; /* switch k at log[k % TRACING_LOG]: ts << 1 | on */
	atomic_flag busy;		   /* one switch at a time */
};

/* Starts with tracing @on. */
void tracing_state_init(struct tracing_state *s, bool on);

/* Whether tracing was on at record time @ts (a record older than the TRACING_LOG-th last switch:
 * as at that switch). Pure reader, lock-free (hot path). */
bool tracing_state_at(const struct tracing_state *s, uint64_t ts);

/* Switches tracing to @on at @ts if it is not already so. Returns true if it switched. */
bool tracing_state_set(struct tracing_state *s, bool on, uint64_t ts);

/* The guest's call chain at a function's entry (RIP @ip, the return address at @rsp): @ip, then
 * return addresses, at most @max, into @out; returns how many. The frame-pointer chain from @rbp
 * first (unless c->no_frame_pointers) (each frame above the last, within TRIGGER_STACK_WINDOW of
 * @rsp, 8-aligned, its return address in [@text_lo, @text_hi)); if it does not reach past the
 * caller, every word of the window (up to the first unreadable page) that lies in the text range,
 * as the kernel's unwinder does without frame pointers (unless c->reliable_only: then the frames
 * the chain vouches for alone). Every read is bounded and through c->read. */
struct trigger_stack_cfg {
	uint64_t text_lo, text_hi; /* code addresses */
	bool no_frame_pointers;	   /* the guest's code keeps none (an ORC kernel): scan at once */
	vmi_read_fn read;	   /* guest memory, as the hitting vCPU sees it */
	void *ctx;
	/* hooked returns: a slot holding @trampoline (when not 0) holds in truth what @resolve
	 * says (0 if it does not know) */
	uint64_t trampoline;
	uint64_t (*resolve)(void *ctx, uint64_t slot);
	/* no scan: the words a scan finds include stale return addresses from earlier calls (in
	 * the live frames' unset slots), which would split a hist's stacktrace key per call */
	bool reliable_only;
};

size_t trigger_walk_stack(const struct trigger_stack_cfg *c, uint64_t ip, uint64_t rsp,
			  uint64_t rbp, uint64_t *out, size_t max);

#endif
