/* Contexts a guest saved on its kernel stacks: where an interrupted or preempted task will resume.
 * Stub detours ask before they replace a function's first bytes (no task may resume inside them),
 * and the stub's detach before it unmaps the stub (no task may resume inside it). */
#ifndef HVT_LIVE_FRAMES_H
#define HVT_LIVE_FRAMES_H

#include "host/trace/target.h"
#include "vmi/vmi_task.h"

#include <stdbool.h>
#include <stdint.h>

/* Called for each 8-byte word @v in the scanned range (with the word after it, @next: an
 * interrupt frame's saved RIP is followed by its CS); true ends the scan. */
typedef bool (*live_frame_fn)(void *ctx, uint64_t v, uint64_t next);

/* Where live_frames_scan looked. */
enum live_frames_scope {
	LIVE_FRAMES_TASKS, /* the live part of every task's kernel stack: exact */
	LIVE_FRAMES_RAM,   /* all of guest RAM: stale frames in dead stack memory count too */
};

struct live_frames_seen {
	enum live_frames_scope scope;
	unsigned long stacks; /* LIVE_FRAMES_TASKS: the task stacks scanned */
};

/* Offers @hit every word whose value lies in [@lo, @hi] that may be the saved RIP of a live
 * context. With the guest's task list (@task->list.valid): each task's kernel stack from the
 * stack pointer saved at its last switch up to the stack's top (a task sleeping or preempted has
 * every frame it will resume there), and the whole stack of a task that runs on one of the
 * @nr_cpus vCPUs (its saved pointer is stale). Without it: every word of guest RAM, through the
 * target's scan_ram, also when the task list cannot be walked (unreadable, a list that never comes
 * back to its head, past VMI_TASKS_MAX tasks or 64 MiB of stacks). A stack that cannot be read is
 * skipped (its task cannot run again). @seen says where it looked, and how many stacks. Returns 1
 * (@hit said true), 0, -ENOTSUP (neither way is there), or -errno (nothing can be said).
 * Target paused; main thread; allocates one stack-sized buffer for the call. */
int live_frames_scan(struct target *t, const struct vmi_task_layout *task, unsigned nr_cpus,
		     uint64_t lo, uint64_t hi, live_frame_fn hit, void *ctx,
		     struct live_frames_seen *seen);

/* Whether @next, the word after a saved RIP, is a ring-0 code selector (FRED keeps more bits above
 * it): the test that a word is a saved kernel context rather than any value. Pure. */
bool live_frame_kernel_cs(uint64_t next);

#endif
