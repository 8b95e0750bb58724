#include "host/tap/expect.h"
#include "host/util/msg_fmt.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *expect_option(enum expect_kind kind)
{
	switch (kind) {
	case EXPECT_CALL: return "--expect-call";
	case EXPECT_NO_CALL: return "--expect-no-call";
	case EXPECT_RETURN: return "--expect-return";
	case EXPECT_ORDER: return "--expect-order";
	}
	return "?";
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$';
}

/* A function name at @p: its length (0: none). */
static size_t name_len(const char *p)
{
	size_t n = 0;

	while (name_char(p[n]))
		n++;
	return n;
}

/* The comparison at @p: its length, 0 if none. "=" is "==". */
static size_t parse_op(const char *p, enum expect_op *op)
{
	if (p[0] == '>' && p[1] == '=')
		return *op = EXPECT_GE, 2;
	if (p[0] == '<' && p[1] == '=')
		return *op = EXPECT_LE, 2;
	if (p[0] == '=' && p[1] == '=')
		return *op = EXPECT_EQ, 2;
	if (p[0] == '!' && p[1] == '=')
		return *op = EXPECT_NE, 2;
	if (p[0] == '=')
		return *op = EXPECT_EQ, 1;
	if (p[0] == '>')
		return *op = EXPECT_GT, 1;
	if (p[0] == '<')
		return *op = EXPECT_LT, 1;
	return 0;
}

/* A number: decimal (a sign allowed when @is_signed), or 0x hex; nothing after it. */
static int parse_number(const char *p, bool is_signed, int64_t *out)
{
	bool neg = is_signed && *p == '-';
	const char *d = p + neg;
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*d))
		return -EINVAL;
	errno = 0;
	v = strtoull(d, &end, d[0] == '0' && (d[1] == 'x' || d[1] == 'X') ? 16 : 10);
	if (errno || *end || end == d)
		return -EINVAL;
	if (!is_signed) {
		if (v > INT64_MAX)
			return -EINVAL;
		*out = (int64_t)v;
	} else if (neg) {
		if (v > (unsigned long long)INT64_MAX + 1)
			return -EINVAL;
		*out = (int64_t)(0 - v);
	} else {
		*out = (int64_t)v; /* 0xffffffffffffffff is -1: RAX as 64 bits */
	}
	return 0;
}

static int bad(char *err, size_t errlen, enum expect_kind kind, const char *spec, const char *why)
{
	msg_fmt(err, errlen, "%s '%s': %s", expect_option(kind), spec, why);
	return -EINVAL;
}

int expect_parse(struct expect *e, enum expect_kind kind, const char *spec, char *err,
		 size_t errlen)
{
	const char *p = spec;
	size_t n;

	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->spec = spec;
	for (;;) {
		n = name_len(p);
		if (!n)
			return bad(err, errlen, kind, spec, "expected a function name");
		if (n >= EXPECT_NAME_LEN)
			return bad(err, errlen, kind, spec, "function name too long");
		memcpy(e->funcs[e->nr_funcs++], p, n);
		p += n;
		if (kind != EXPECT_ORDER || *p != ',')
			break;
		if (e->nr_funcs == EXPECT_MAX_ORDER)
			return bad(err, errlen, kind, spec, "at most 8 functions");
		p++;
	}
	switch (kind) {
	case EXPECT_NO_CALL:
		if (*p)
			return bad(err, errlen, kind, spec,
				   "expected a function name alone (counts go with --expect-call)");
		e->op = EXPECT_EQ;
		return 0;
	case EXPECT_ORDER:
		if (*p)
			return bad(err, errlen, kind, spec, "expected FUNC,FUNC[,...]");
		if (e->nr_funcs < 2)
			return bad(err, errlen, kind, spec, "expected two functions or more, A,B");
		return 0;
	case EXPECT_CALL:
		if (!*p) {
			e->bare = true;
			e->op = EXPECT_GE;
			e->value = 1;
			return 0;
		}
		n = parse_op(p, &e->op);
		if (!n)
			return bad(err, errlen, kind, spec,
				   "expected FUNC, or FUNC followed by >= > <= < = != and a count");
		if (parse_number(p + n, false, &e->value) < 0)
			return bad(err, errlen, kind, spec, "expected a count (a decimal number) after "
							    "the comparison");
		return 0;
	case EXPECT_RETURN:
		n = parse_op(p, &e->op);
		if (!n || (e->op != EXPECT_EQ && e->op != EXPECT_NE))
			return bad(err, errlen, kind, spec, "expected FUNC==VALUE or FUNC!=VALUE");
		if (parse_number(p + n, true, &e->value) < 0)
			return bad(err, errlen, kind, spec,
				   "expected a value (decimal, or 0x hex) after the comparison");
		return 0;
	}
	return -EINVAL;
}

/* Whether typed return @spec records RAX itself, whole, as its one field. */
static bool rax_event(const struct fe_spec *spec)
{
	const struct fe_field *f = &spec->fields[0];

	return spec->nr_fields == 1 && !spec->next && f->arg == 0 && !f->memory && !f->direct &&
	       !f->nr_steps && !f->count;
}

int expect_bind(struct expect *v, size_t nr, const struct probe_table *probes, bool all_returns,
		char *err, size_t errlen)
{
	for (size_t i = 0; i < nr; i++) {
		struct expect *e = &v[i];

		for (unsigned k = 0; k < e->nr_funcs; k++) {
			const struct probe *p = probe_find(probes, e->funcs[k]);

			/* a -r only probe records no entry: only its returns can be judged */
			if (!p || (p->quiet_entry && e->kind != EXPECT_RETURN)) {
				msg_fmt(
				    err, errlen,
				    "%s %s: %s is not traced (check -l/-n and the guest's symbols)",
				    expect_option(e->kind), e->spec, e->funcs[k]);
				return -ENOENT;
			}
			if (e->kind == EXPECT_RETURN &&
			    !(p->ret_event ? rax_event(p->ret_event) : all_returns)) {
				msg_fmt(err, errlen,
					p->ret_event
					    ? "%s %s: needs %s's return values: its -r spec "
					      "must be RAX itself ('%s' or '%s(long ret)')"
					    : "%s %s: needs %s's return values: trace it with "
					      "-p function_graph or -r %s",
					expect_option(e->kind), e->spec, e->funcs[k], e->funcs[k],
					e->funcs[k]);
				return -ENOENT;
			}
			e->ids[k] = p->id;
		}
	}
	return 0;
}

int expect_state_init(struct expect_state *st, struct profile *prof, const struct expect *v,
		      size_t nr)
{
	size_t np = probe_count(prof->probes);

	memset(st, 0, sizeof(*st));
	st->prof = prof;
	st->nr = nr;
	st->v = malloc((nr ? nr : 1) * sizeof(*st->v));
	st->first_ts = malloc((np ? np : 1) * sizeof(*st->first_ts));
	if (!st->v || !st->first_ts) {
		expect_state_free(st);
		return -ENOMEM;
	}
	if (nr)
		memcpy(st->v, v, nr * sizeof(*v));
	for (size_t i = 0; i < np; i++)
		st->first_ts[i] = UINT64_MAX;
	for (size_t i = 0; i < nr; i++)
		st->any_return |= v[i].kind == EXPECT_RETURN;
	return 0;
}

/* Whether RAX @rax is @want: as 64 bits, or as a 32-bit int when @want is in int range. */
static bool value_matches(uint64_t rax, int64_t want)
{
	if (rax == (uint64_t)want)
		return true;
	return want >= INT32_MIN && want <= INT32_MAX && (int32_t)(uint32_t)rax == (int32_t)want;
}

/* a call of @rec's probe: its first one's time */
static void expect_call(void *ctx, const struct sink_rec *rec)
{
	struct expect_state *st = ctx;
	const struct probe *p = rec->probe;

	if (p && rec->r->ts < st->first_ts[p->id])
		st->first_ts[p->id] = rec->r->ts;
}

/* A return of @rec's probe with RAX @rax, against each --expect-return of it. */
static void expect_return(struct expect_state *st, const struct sink_rec *rec, uint64_t rax)
{
	const struct probe *p = rec->probe;

	for (size_t i = 0; i < st->nr; i++) {
		struct expect *e = &st->v[i];

		if (e->kind != EXPECT_RETURN || e->ids[0] != p->id)
			continue;
		e->returns++;
		if (value_matches(rax, e->value) != (e->op == EXPECT_EQ)) {
			if (!e->mismatches)
				e->first_bad = rax;
			e->mismatches++;
		}
	}
}

static void expect_ret(void *ctx, const struct sink_rec *rec)
{
	struct expect_state *st = ctx;

	if (rec->probe && st->any_return)
		expect_return(st, rec, rec->r->value);
}

/* a typed return: RAX is its one field (expect_bind), after the field's status byte */
static void expect_ret_event(void *ctx, const struct sink_rec *rec)
{
	struct expect_state *st = ctx;
	uint64_t rax;

	if (!rec->probe || !st->any_return)
		return;
	if (!rec->spec || !rax_event(rec->spec) || !rec->payload || rec->r->value < 9)
		return;
	memcpy(&rax, rec->payload + 1, sizeof(rax));
	expect_return(st, rec, rax);
}

static const struct sink_tap_ops expect_ops = {
    .call = expect_call, .ret = expect_ret, .ret_event = expect_ret_event};

void expect_tap(void *ctx, const struct sink_rec *rec)
{
	struct expect_state *st = ctx;

	profile_add(st->prof, rec);
	sink_tap_record(&expect_ops, ctx, rec);
}

static bool compare(uint64_t n, enum expect_op op, int64_t v)
{
	uint64_t u = (uint64_t)v;

	switch (op) {
	case EXPECT_GE: return n >= u;
	case EXPECT_GT: return n > u;
	case EXPECT_LE: return n <= u;
	case EXPECT_LT: return n < u;
	case EXPECT_EQ: return n == u;
	case EXPECT_NE: return n != u;
	}
	return false;
}

static void judge_order(struct expect_state *st, struct expect *e)
{
	for (unsigned k = 0; k < e->nr_funcs; k++)
		if (st->first_ts[e->ids[k]] == UINT64_MAX) {
			msg_fmt(e->reason, sizeof(e->reason), "%s was never called", e->funcs[k]);
			return;
		}
	for (unsigned k = 1; k < e->nr_funcs; k++)
		if (st->first_ts[e->ids[k]] <= st->first_ts[e->ids[k - 1]]) {
			msg_fmt(e->reason, sizeof(e->reason), "%s was first called before %s",
				e->funcs[k], e->funcs[k - 1]);
			return;
		}
	e->passed = true;
	msg_fmt(e->reason, sizeof(e->reason), "first calls in this order");
}

static void judge_return(struct expect *e)
{
	if (!e->returns) {
		msg_fmt(e->reason, sizeof(e->reason), "%s never returned while traced",
			e->funcs[0]);
		return;
	}
	e->passed = !e->mismatches;
	if (e->passed)
		msg_fmt(e->reason, sizeof(e->reason), "%s returned %s%" PRId64 " %" PRIu64 " times",
			e->funcs[0], e->op == EXPECT_NE ? "other than " : "", e->value, e->returns);
	else
		msg_fmt(
		    e->reason, sizeof(e->reason),
		    "%s returned 0x%" PRIx64 " (%" PRId64 ") in %" PRIu64 " of %" PRIu64 " returns",
		    e->funcs[0], e->first_bad, (int64_t)e->first_bad, e->mismatches, e->returns);
}

int expect_evaluate(struct expect_state *st)
{
	int unmet = 0;

	for (size_t i = 0; i < st->nr; i++) {
		struct expect *e = &st->v[i];
		uint64_t hits = st->prof->v[e->ids[0]].hits;

		e->passed = false;
		switch (e->kind) {
		case EXPECT_CALL:
		case EXPECT_NO_CALL:
			e->passed = compare(hits, e->op, e->value);
			if (e->bare && !hits)
				msg_fmt(e->reason, sizeof(e->reason), "the guest never called it");
			else if (e->kind == EXPECT_NO_CALL && hits)
				msg_fmt(e->reason, sizeof(e->reason),
					"the guest called it %" PRIu64 " times", hits);
			else
				msg_fmt(e->reason, sizeof(e->reason),
					"the guest called %s %" PRIu64 " times", e->funcs[0], hits);
			break;
		case EXPECT_RETURN: judge_return(e); break;
		case EXPECT_ORDER: judge_order(st, e); break;
		}
		unmet += !e->passed;
	}
	return unmet;
}

void expect_print_unmet(const struct expect_state *st, FILE *out)
{
	for (size_t i = 0; i < st->nr; i++)
		if (!st->v[i].passed)
			fprintf(out, "hvtrace: %s %s: %s\n", expect_option(st->v[i].kind), st->v[i].spec,
				st->v[i].reason);
}

void expect_state_free(struct expect_state *st)
{
	free(st->v);
	free(st->first_ts);
	st->v = NULL;
	st->first_ts = NULL;
}
