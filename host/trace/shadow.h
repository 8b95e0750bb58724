/* Host-side shadow stacks for return tracing: the return addresses the tracer replaced with the
 * trampoline, grouped per guest stack and matched by the guest stack slot that held them, so returns are
 * found whichever vCPU the task runs on when it returns. Preallocated; no allocation after shadow_init. */
#ifndef HVT_SHADOW_H
#define HVT_SHADOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHADOW_MAX_DEPTH 128 /* entries per guest stack */

struct shadow_entry {
	uint64_t slot;	   /* guest address of the return-address slot */
	uint64_t slot_gpa; /* its guest-physical address, as the hooking vCPU saw it */
	uint64_t orig; /* the return address it held (the trampoline for a tail call) */
	uint64_t t_entry;
	uint32_t probe; /* probe id */
	uint8_t depth;
	bool in_graph; /* inside a set_graph_function call */
};

struct shadow_stack {
	_Atomic uint64_t key; /* stack id + 1; 0 = free */
	atomic_flag lock;
	unsigned nr;
	/* slot of the entry shadow_pop took last, which stays in e[nr] until the next push or drop:
	 * a return in flight (entry popped, the vCPU's RIP not yet moved) can still be resolved by
	 * a process that takes over after the tracing one died (shadow_resolve); 0 = none */
	uint64_t popped;
	struct shadow_entry e[SHADOW_MAX_DEPTH];
};

struct shadow {
	struct shadow_stack *stacks; /* open-addressing table by stack id; MAP_SHARED memory */
	size_t size;
	uint64_t mask;
	unsigned stack_shift; /* a guest stack is a 1 << stack_shift aligned region */
	uint64_t trampoline;
};

/* Room for @nr_stacks guest stacks (rounded up to a power of two), in shared memory that forked
 * processes keep seeing. Returns 0 or -ENOMEM. */
int shadow_init(struct shadow *s, unsigned nr_stacks, unsigned stack_shift, uint64_t trampoline);
void shadow_free(struct shadow *s);

/* The shadow stack of the guest stack holding @slot, created if needed and returned LOCKED; NULL if
 * the table is full (or, with !@create, if there is none). Any vCPU thread; wait-free except the lock,
 * which is held only by the thread handling that guest stack's hit. */
struct shadow_stack *shadow_lock(struct shadow *s, uint64_t slot, bool create);
void shadow_unlock(struct shadow_stack *st);

/* Entry at @slot whose current content is @cur: drops the entries of frames that are gone (deeper than
 * @slot, or at @slot itself unless @cur is the trampoline, i.e. a tail call) and returns how many. */
unsigned shadow_drop_dead(struct shadow *s, struct shadow_stack *st, uint64_t slot, uint64_t cur,
			  void (*dropped)(void *ctx, const struct shadow_entry *e), void *ctx);

/* Return through @slot: drops entries deeper than @slot (unwound without returning, reported
 * through @dropped), then pops and returns the entry for @slot into *@out, remembered as popped
 * (see struct shadow_stack) until the next push or drop. Returns false if there is none. */
bool shadow_pop(struct shadow_stack *st, uint64_t slot, struct shadow_entry *out,
		void (*dropped)(void *ctx, const struct shadow_entry *e), void *ctx);

/* The newest entry or NULL. */
static inline const struct shadow_entry *shadow_top(const struct shadow_stack *st)
{
	return st->nr ? &st->e[st->nr - 1] : NULL;
}

/* Pushes @e; false if the stack is full (the caller counts a miss). */
bool shadow_push(struct shadow_stack *st, const struct shadow_entry *e);

/* Calls @fn for every entry of every stack, newest first within a stack. Only with all vCPUs stopped. */
void shadow_for_each(struct shadow *s, void (*fn)(void *ctx, const struct shadow_entry *e), void *ctx);

/* The address a return through @slot resumes at: the oldest entry's orig for that slot that is not
 * the trampoline, else that of the entry popped last for @slot (its return was in flight: a vCPU on
 * the trampoline whose RIP was never moved). 0 if none. Only with all vCPUs stopped. */
uint64_t shadow_resolve(struct shadow *s, uint64_t slot);

/* Removes every entry for @slot (a return already handed back), and forgets it as popped; returns
 * how many (a tail call stacks several on one slot; one for a return in flight). Only with all
 * vCPUs stopped. */
unsigned shadow_forget(struct shadow *s, uint64_t slot);

/* Releases every stack lock: for a guardian process whose parent died holding one. */
void shadow_break_locks(struct shadow *s);

/* Empties every stack. Only with all vCPUs stopped. */
void shadow_clear(struct shadow *s);

#endif
