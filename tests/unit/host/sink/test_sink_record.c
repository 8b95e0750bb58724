/* The one dispatch of records to a sink's per-type callbacks (host/sink/sink_record.c): each type
 * to its callback, an event to entry and a typed return to ret where the sink has no callback of
 * their own, unknown types and missing callbacks skipped, the next record only to entries; the
 * same for a tap's callbacks; and sink_next_returns' leaf test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/sink/sink.h"

#include <string.h>

static char seen[64]; /* one letter per callback, in call order */
static const struct sink_rec *seen_next;

static void mark(char c)
{
	size_t n = strlen(seen);

	assert_true(n + 1 < sizeof(seen));
	seen[n] = c;
	seen[n + 1] = '\0';
}

static unsigned on_entry(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next)
{
	(void)s;
	(void)rec;
	seen_next = next;
	mark('n');
	return next ? 2 : 1;
}

static unsigned on_event(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next)
{
	(void)s;
	(void)rec;
	seen_next = next;
	mark('e');
	return 1;
}

#define ONE(name, letter)                                                                          \
	static void name(struct sink *s, const struct sink_rec *rec)                               \
	{                                                                                          \
		(void)s;                                                                           \
		(void)rec;                                                                         \
		mark(letter);                                                                      \
	}
ONE(on_alone, 'a')
ONE(on_ret, 'r')
ONE(on_ret_event, 't')
ONE(on_stack, 's')

static void on_lost(struct sink *s, const struct hvt_record *r)
{
	(void)s;
	(void)r;
	mark('l');
}

static void on_snapshot(struct sink *s, const struct hvt_record *r)
{
	(void)s;
	(void)r;
	mark('p');
}

static const uint8_t types[] = {HVT_REC_ENTRY,
				HVT_REC_EVENT,
				HVT_REC_EVENT_ALONE,
				HVT_REC_RETURN,
				HVT_REC_RETURN_EVENT,
				HVT_REC_LOST,
				HVT_REC_STACK,
				HVT_REC_SNAPSHOT,
				0,
				99};

/* Feeds one record of each type (and two unknown ones) to @ops; returns what was seen. */
static const char *feed(const struct sink_ops *ops)
{
	struct sink s = {.ops = ops};

	seen[0] = '\0';
	for (size_t i = 0; i < sizeof(types); i++) {
		struct hvt_record r = {.type = types[i]};

		assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &r}, NULL), 1);
	}
	return seen;
}

static void each_type_its_callback(void **state)
{
	const struct sink_ops all = {.entry = on_entry,
				     .event = on_event,
				     .event_alone = on_alone,
				     .ret = on_ret,
				     .ret_event = on_ret_event,
				     .lost = on_lost,
				     .stack = on_stack,
				     .snapshot = on_snapshot};
	const struct sink_ops fallbacks = {.entry = on_entry, .ret = on_ret};
	const struct sink_ops none = {0};

	(void)state;
	assert_string_equal(feed(&all), "neartlsp");
	/* an event is an entry, a typed return a return, to a sink without their own */
	assert_string_equal(feed(&fallbacks), "nnrr");
	assert_string_equal(feed(&none), "");
}

/* the next record goes to entries (and events), and the count they return is the writer's */
static void next_to_entries(void **state)
{
	const struct sink_ops ops = {.entry = on_entry, .event = on_event, .ret = on_ret};
	struct sink s = {.ops = &ops};
	struct hvt_record e = {.type = HVT_REC_ENTRY}, v = {.type = HVT_REC_EVENT},
			  r = {.type = HVT_REC_RETURN};
	struct sink_rec next = {.r = &r};

	(void)state;
	seen[0] = '\0';
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &e}, &next), 2);
	assert_ptr_equal(seen_next, &next);
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &v}, &next), 1);
	assert_ptr_equal(seen_next, &next);
	assert_int_equal(sink_record(&s, &(struct sink_rec){.r = &r}, &next), 1);
	assert_string_equal(seen, "ner");
}

static void tap_call(void *ctx, const struct sink_rec *rec)
{
	(void)ctx;
	(void)rec;
	mark('c');
}

static void tap_ret(void *ctx, const struct sink_rec *rec)
{
	(void)ctx;
	(void)rec;
	mark('r');
}

static void tap_ret_event(void *ctx, const struct sink_rec *rec)
{
	(void)ctx;
	(void)rec;
	mark('t');
}

static void taps(void **state)
{
	const struct sink_tap_ops all = {
	    .call = tap_call, .ret = tap_ret, .ret_event = tap_ret_event};
	const struct sink_tap_ops plain = {.call = tap_call, .ret = tap_ret};

	(void)state;
	seen[0] = '\0';
	for (size_t i = 0; i < sizeof(types); i++) {
		struct hvt_record r = {.type = types[i]};

		sink_tap_record(&all, NULL, &(struct sink_rec){.r = &r});
	}
	/* entries, events and events alone are calls */
	assert_string_equal(seen, "cccrt");
	seen[0] = '\0';
	for (size_t i = 0; i < sizeof(types); i++) {
		struct hvt_record r = {.type = types[i]};

		sink_tap_record(&plain, NULL, &(struct sink_rec){.r = &r});
	}
	assert_string_equal(seen, "cccrr");
}

static void leaf(void **state)
{
	struct hvt_record e = {.type = HVT_REC_ENTRY, .ip = 0x10, .depth = 2, .pid = 7};
	struct hvt_record r = e, t, other, deeper, lost = {.type = HVT_REC_LOST};
	struct sink_rec re = {.r = &e};

	(void)state;
	r.type = HVT_REC_RETURN;
	t = r;
	t.type = HVT_REC_RETURN_EVENT;
	other = r;
	other.pid = 8;
	deeper = r;
	deeper.depth = 3;
	assert_true(sink_next_returns(&re, &(struct sink_rec){.r = &r}));
	assert_true(sink_next_returns(&re, &(struct sink_rec){.r = &t}));
	assert_false(sink_next_returns(&re, &(struct sink_rec){.r = &other}));
	assert_false(sink_next_returns(&re, &(struct sink_rec){.r = &deeper}));
	assert_false(sink_next_returns(&re, &(struct sink_rec){.r = &lost}));
	assert_false(sink_next_returns(&re, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(each_type_its_callback),
	    cmocka_unit_test(next_to_entries),
	    cmocka_unit_test(taps),
	    cmocka_unit_test(leaf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
