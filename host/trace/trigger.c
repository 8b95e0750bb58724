#include "host/trace/trigger.h"
#include "host/trace/fevent.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
    [TRIG_TRACEON] = "traceon",
    [TRIG_TRACEOFF] = "traceoff",
    [TRIG_STACKTRACE] = "stacktrace",
    [TRIG_SNAPSHOT] = "snapshot",
};

const char *trigger_cmd_name(enum trigger_cmd c)
{
	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

int trigger_parse(const char *text, struct trigger *t, char *err, size_t errlen)
{
	const char *colon = strchr(text, ':'), *cmd, *count;
	size_t flen, clen;
	const char *why;
	unsigned k;

	memset(t, 0, sizeof(*t));
	t->count = -1;
	why = "expected FUNC:COMMAND[:N]";
	if (!colon || colon == text)
		goto bad;
	flen = (size_t)(colon - text);
	why = "function name too long";
	if (flen >= sizeof(t->func))
		goto bad;
	why = "bad function name";
	for (size_t i = 0; i < flen; i++)
		if (!(text[i] == '_' || text[i] == '.' || (text[i] >= '0' && text[i] <= '9') ||
		      (text[i] >= 'a' && text[i] <= 'z') || (text[i] >= 'A' && text[i] <= 'Z') ||
		      (text[i] == '+' && i)))
			goto bad;
	/* FUNC+OFFSET: the -e event inside a function, named as fe_label names it */
	why = "bad offset into the function";
	if (fe_place_label(text, flen, t->func, sizeof(t->func)) < 0)
		goto bad;
	cmd = colon + 1;
	count = strchr(cmd, ':');
	clen = count ? (size_t)(count - cmd) : strlen(cmd);
	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strlen(names[k]) == clen && !strncmp(cmd, names[k], clen))
			break;
	why = "unknown command (traceon, traceoff, stacktrace, snapshot, hist)";
	if (k == sizeof(names) / sizeof(names[0]))
		goto bad;
	t->cmd = (enum trigger_cmd)k;
	if (count) {
		char *end;
		long n;

		errno = 0;
		n = strtol(count + 1, &end, 10);
		why = "expected a count from 1 to 2147483647 after the command";
		if (errno || end == count + 1 || *end || count[1] == '-' || count[1] == '+' ||
		    n < 1 || n > 2147483647l)
			goto bad;
		t->count = n;
	}
	return 0;
bad:
	msg_fmt(err, errlen, "--trigger '%s': %s", text, why);
	return -EINVAL;
}

void tracing_state_init(struct tracing_state *s, bool on)
{
	memset(s, 0, sizeof(*s));
	s->initial = on;
	atomic_flag_clear(&s->busy);
}

bool tracing_state_at(const struct tracing_state *s, uint64_t ts)
{
	uint64_t n = atomic_load_explicit(&s->n, memory_order_acquire);
	uint64_t oldest = n > TRACING_LOG ? n - TRACING_LOG : 0;
	uint64_t e = 0;

	for (uint64_t k = n; k-- > oldest;) {
		e = atomic_load_explicit(&s->log[k % TRACING_LOG], memory_order_relaxed);
		if ((e >> 1) <= ts)
			return e & 1;
	}
	/* before every logged switch: the initial state, or the state the oldest one left */
	return oldest ? !(e & 1) : s->initial;
}

bool tracing_state_set(struct tracing_state *s, bool on, uint64_t ts)
{
	bool changed = false;
	uint64_t n, cur_ts;
	bool cur;

	while (atomic_flag_test_and_set_explicit(&s->busy, memory_order_acquire))
		;
	n = atomic_load_explicit(&s->n, memory_order_relaxed);
	cur = n ? atomic_load_explicit(&s->log[(n - 1) % TRACING_LOG], memory_order_relaxed) & 1
		: s->initial;
	if (cur != on) {
		/* switches stay in time order: one racing from an earlier hit takes the last's time
		 */
		cur_ts = n ? atomic_load_explicit(&s->log[(n - 1) % TRACING_LOG],
						  memory_order_relaxed) >>
				 1
			   : 0;
		if (ts < cur_ts)
			ts = cur_ts;
		ts &= ~0ull >> 1;
		atomic_store_explicit(&s->log[n % TRACING_LOG], ts << 1 | on, memory_order_relaxed);
		atomic_store_explicit(&s->n, n + 1, memory_order_release);
		changed = true;
	}
	atomic_flag_clear_explicit(&s->busy, memory_order_release);
	return changed;
}

static bool in_text(uint64_t a, uint64_t lo, uint64_t hi)
{
	return a >= lo && a < hi;
}

/* The return address slot @slot holds (@v as read), through a hooked return to the original. */
static uint64_t real_ret(const struct trigger_stack_cfg *c, uint64_t slot, uint64_t v)
{
	return c->trampoline && v == c->trampoline && c->resolve ? c->resolve(c->ctx, slot) : v;
}

size_t trigger_walk_stack(const struct trigger_stack_cfg *c, uint64_t ip, uint64_t rsp,
			  uint64_t rbp, uint64_t *out, size_t max)
{
	uint64_t ret, frame[2], top = rsp + TRIGGER_STACK_WINDOW, words[64];
	size_t n = 0;

	if (!max)
		return 0;
	out[n++] = ip;
	if (top < rsp)
		return n; /* a stack at the end of the address space: no window */
	if (n == max || c->read(c->ctx, rsp, &ret, 8) < 0)
		return n;
	ret = real_ret(c, rsp, ret);
	if (!in_text(ret, c->text_lo, c->text_hi))
		return n;
	out[n++] = ret;
	/* frame pointers: at the entry RBP is still the caller's frame */
	for (uint64_t fp = rbp, prev = rsp; n < max && !c->no_frame_pointers;
	     prev = fp, fp = frame[0]) {
		if (fp <= prev || fp >= top - 16 || (fp & 7) || c->read(c->ctx, fp, frame, 16) < 0)
			break;
		frame[1] = real_ret(c, fp + 8, frame[1]);
		if (!in_text(frame[1], c->text_lo, c->text_hi))
			break;
		out[n++] = frame[1];
	}
	if (n > 2 || n == max || c->reliable_only)
		return n;
	/* no chain: the text addresses on the stack above the return address */
	for (uint64_t a = rsp + 8; a < top && n < max;) {
		size_t chunk = sizeof(words);

		if (chunk > 4096 - (a & 4095))
			chunk = 4096 - (a & 4095);
		if (chunk > top - a)
			chunk = top - a;
		if (c->read(c->ctx, a, words, chunk) < 0)
			break;
		for (size_t i = 0; i < chunk / 8 && n < max; i++) {
			uint64_t v = real_ret(c, a + 8 * i, words[i]);

			if (in_text(v, c->text_lo, c->text_hi))
				out[n++] = v;
		}
		a += chunk;
	}
	return n;
}
