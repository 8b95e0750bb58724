#include "host/trace/shadow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int shadow_init(struct shadow *s, unsigned nr_stacks, unsigned stack_shift, uint64_t trampoline)
{
	uint64_t n = 16;

	while (n < nr_stacks)
		n <<= 1;
	/* shared, so that a guardian process forked later still sees them if hvtrace dies */
	s->size = n * sizeof(*s->stacks);
	s->stacks = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s->stacks == MAP_FAILED) {
		s->stacks = NULL;
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++)
		atomic_flag_clear(&s->stacks[i].lock);
	s->mask = n - 1;
	s->stack_shift = stack_shift;
	s->trampoline = trampoline;
	return 0;
}

void shadow_free(struct shadow *s)
{
	if (s->stacks)
		munmap(s->stacks, s->size);
	s->stacks = NULL;
}

unsigned shadow_forget(struct shadow *s, uint64_t slot)
{
	struct shadow_stack *st = shadow_lock(s, slot, false);
	unsigned o = 0, gone;

	if (!st)
		return 0;
	for (unsigned i = 0; i < st->nr; i++)
		if (st->e[i].slot != slot)
			st->e[o++] = st->e[i];
	gone = st->nr - o;
	if (st->popped == slot && !gone)
		gone = 1; /* the return in flight */
	st->nr = o;
	st->popped = 0;
	shadow_unlock(st);
	return gone;
}

void shadow_break_locks(struct shadow *s)
{
	for (uint64_t i = 0; s->stacks && i <= s->mask; i++)
		atomic_flag_clear(&s->stacks[i].lock);
}

struct shadow_stack *shadow_lock(struct shadow *s, uint64_t slot, bool create)
{
	uint64_t key = (slot >> s->stack_shift) + 1;
	uint64_t h = (key * 0x9e3779b97f4a7c15ull) >> 17;

	for (uint64_t n = 0; n <= s->mask; n++, h++) {
		struct shadow_stack *st = &s->stacks[h & s->mask];
		uint64_t k = atomic_load_explicit(&st->key, memory_order_acquire);

		if (!k) {
			uint64_t zero = 0;

			if (!create)
				return NULL;
			if (!atomic_compare_exchange_strong(&st->key, &zero, key) && zero != key)
				continue;
			k = key;
		}
		if (k != key)
			continue;
		while (atomic_flag_test_and_set_explicit(&st->lock, memory_order_acquire))
			__builtin_ia32_pause();
		return st;
	}
	return NULL;
}

void shadow_unlock(struct shadow_stack *st)
{
	atomic_flag_clear_explicit(&st->lock, memory_order_release);
}

unsigned shadow_drop_dead(struct shadow *s, struct shadow_stack *st, uint64_t slot, uint64_t cur,
			  void (*dropped)(void *ctx, const struct shadow_entry *e), void *ctx)
{
	unsigned n = 0;

	while (st->nr) {
		const struct shadow_entry *top = &st->e[st->nr - 1];

		if (top->slot > slot || (top->slot == slot && cur == s->trampoline))
			break;
		if (dropped)
			dropped(ctx, top);
		st->popped = 0;
		st->nr--;
		n++;
	}
	return n;
}

bool shadow_pop(struct shadow_stack *st, uint64_t slot, struct shadow_entry *out,
		void (*dropped)(void *ctx, const struct shadow_entry *e), void *ctx)
{
	while (st->nr && st->e[st->nr - 1].slot < slot) {
		if (dropped)
			dropped(ctx, &st->e[st->nr - 1]);
		st->popped = 0;
		st->nr--;
	}
	if (!st->nr || st->e[st->nr - 1].slot != slot)
		return false;
	*out = st->e[st->nr - 1];
	/* the memory is shared with a guardian that acts only once this process is dead: mark it
	 * popped before it leaves the stack, so that a kill between the two still finds it */
	st->popped = slot;
	atomic_signal_fence(memory_order_seq_cst);
	st->nr--;
	return true;
}

bool shadow_push(struct shadow_stack *st, const struct shadow_entry *e)
{
	if (st->nr == SHADOW_MAX_DEPTH)
		return false;
	st->popped = 0;
	atomic_signal_fence(memory_order_seq_cst);
	st->e[st->nr++] = *e;
	return true;
}

void shadow_for_each(struct shadow *s, void (*fn)(void *ctx, const struct shadow_entry *e), void *ctx)
{
	for (uint64_t i = 0; i <= s->mask; i++) {
		struct shadow_stack *st = &s->stacks[i];

		for (unsigned j = st->nr; j-- > 0;)
			fn(ctx, &st->e[j]);
	}
}

uint64_t shadow_resolve(struct shadow *s, uint64_t slot)
{
	struct shadow_stack *st = shadow_lock(s, slot, false);
	uint64_t orig = 0;

	if (!st)
		return 0;
	for (unsigned j = st->nr; j-- > 0;) {
		if (st->e[j].slot != slot)
			continue;
		if (st->e[j].orig != s->trampoline) {
			orig = st->e[j].orig;
		}
	}
	if (!orig && st->popped == slot && st->nr < SHADOW_MAX_DEPTH &&
	    st->e[st->nr].slot == slot && st->e[st->nr].orig != s->trampoline)
		orig = st->e[st->nr].orig; /* popped, the vCPU never moved on */
	shadow_unlock(st);
	return orig;
}

void shadow_clear(struct shadow *s)
{
	for (uint64_t i = 0; i <= s->mask; i++) {
		s->stacks[i].nr = 0;
		s->stacks[i].popped = 0;
	}
}
