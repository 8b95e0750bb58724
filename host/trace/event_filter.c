#include "host/trace/event_filter.h"

#include "host/trace/filter.h"
#include "host/util/msg_fmt.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EF_MAX_NEST 32 /* parentheses and ! deep */

struct parser {
	const char *s;
	size_t i;
	struct ef_filter *f;
	unsigned nest;
	const char *why;
	size_t at;
};

static int fail(struct parser *p, size_t at, const char *why)
{
	if (!p->why) {
		p->why = why;
		p->at = at;
	}
	return -1;
}

static void skip_ws(struct parser *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\t')
		p->i++;
}

static bool is_ident(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

/* A bare value word: a number or an unquoted string (globs allowed). */
static bool is_word(char c)
{
	return c && (is_ident(c, false) || strchr("-+./*?[]:", c) != NULL);
}

static int new_node(struct parser *p, enum ef_node_kind kind)
{
	if (p->f->nr_nodes >= EF_MAX_NODES)
		return fail(p, p->i, "too many terms (at most 64)");
	memset(&p->f->nodes[p->f->nr_nodes], 0, sizeof(p->f->nodes[0]));
	p->f->nodes[p->f->nr_nodes].kind = kind;
	return (int)p->f->nr_nodes++;
}

static int parse_or(struct parser *p);

/* FIELD OP VALUE */
static int parse_cmp(struct parser *p)
{
	static const struct {
		const char *text;
		enum ef_op op;
	} ops[] = {{"==", EF_EQ}, {"!=", EF_NE}, {"<=", EF_LE},	     {">=", EF_GE},
		   {"<", EF_LT},  {">", EF_GT},	 {"&", EF_AND_MASK}, {"~", EF_GLOB}};
	size_t start = p->i, n = 0;
	struct ef_node *e;
	unsigned k;
	int id;

	if (!is_ident(p->s[p->i], true))
		return fail(p, p->i, "expected a field name");
	id = new_node(p, EF_CMP);
	if (id < 0)
		return -1;
	e = &p->f->nodes[id];
	e->pos = start;
	while (is_ident(p->s[p->i], false)) {
		if (n + 1 >= sizeof(e->field))
			return fail(p, start, "field name too long");
		e->field[n++] = p->s[p->i++];
	}
	e->field[n] = 0;
	skip_ws(p);
	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (!strncmp(p->s + p->i, ops[k].text, strlen(ops[k].text)))
			break;
	if (k == sizeof(ops) / sizeof(ops[0]) ||
	    (ops[k].op == EF_AND_MASK && p->s[p->i + 1] == '&'))
		return fail(p, p->i, "expected an operator (== != < > <= >= & ~)");
	e->op = ops[k].op;
	p->i += strlen(ops[k].text);
	skip_ws(p);
	start = p->i;
	n = 0;
	if (p->s[p->i] == '"' || p->s[p->i] == '\'') {
		char q = p->s[p->i++];

		while (p->s[p->i] && p->s[p->i] != q) {
			if (n + 1 >= sizeof(e->str))
				return fail(p, start, "string too long");
			e->str[n++] = p->s[p->i++];
		}
		if (p->s[p->i] != q)
			return fail(p, start, "unterminated string");
		p->i++;
		e->str[n] = 0;
		e->is_string = true;
		return id;
	}
	while (is_word(p->s[p->i])) {
		if (n + 1 >= sizeof(e->str))
			return fail(p, start, "value too long");
		e->str[n++] = p->s[p->i++];
	}
	e->str[n] = 0;
	if (!n)
		return fail(p, start, "expected a value");
	/* a number if it reads as one (decimal, 0x hex, negative); else a bare string */
	{
		char *end;

		errno = 0;
		if (e->str[0] == '-')
			e->num = strtoll(e->str, &end, 0);
		else
			e->num = (int64_t)strtoull(e->str, &end, 0);
		/* digits that overflow are a number out of range, not a bare string */
		if (errno == ERANGE && !*end && end != e->str)
			return fail(p, start, "a number out of range (64 bits)");
		e->is_string = errno || *end || end == e->str;
	}
	return id;
}

static int parse_unary(struct parser *p)
{
	int id, inner;

	skip_ws(p);
	if (p->nest >= EF_MAX_NEST)
		return fail(p, p->i, "nested too deep (at most 32)");
	if (p->s[p->i] == '!' && p->s[p->i + 1] != '=') {
		p->i++;
		p->nest++;
		inner = parse_unary(p);
		p->nest--;
		if (inner < 0)
			return -1;
		id = new_node(p, EF_NOT);
		if (id < 0)
			return -1;
		p->f->nodes[id].l = inner;
		return id;
	}
	if (p->s[p->i] == '(') {
		size_t open = p->i++;

		p->nest++;
		id = parse_or(p);
		p->nest--;
		if (id < 0)
			return -1;
		skip_ws(p);
		if (p->s[p->i] != ')')
			return fail(p, p->s[p->i] ? p->i : open,
				    p->s[p->i] ? "expected ')'" : "unclosed '('");
		p->i++;
		return id;
	}
	return parse_cmp(p);
}

static int parse_binary(struct parser *p, bool is_or)
{
	const char *tok = is_or ? "||" : "&&";
	int l = is_or ? parse_binary(p, false) : parse_unary(p);

	while (l >= 0) {
		int r, id;

		skip_ws(p);
		if (strncmp(p->s + p->i, tok, 2))
			break;
		p->i += 2;
		r = is_or ? parse_binary(p, false) : parse_unary(p);
		if (r < 0)
			return -1;
		id = new_node(p, is_or ? EF_OR : EF_AND);
		if (id < 0)
			return -1;
		p->f->nodes[id].l = l;
		p->f->nodes[id].r = r;
		l = id;
	}
	return l;
}

static int parse_or(struct parser *p)
{
	return parse_binary(p, true);
}

int ef_parse(const char *text, struct ef_filter *f, char *err, size_t errlen)
{
	struct parser p = {.s = text, .f = f};
	size_t n = 0;

	memset(f, 0, sizeof(*f));
	if (strlen(text) >= EF_MAX_TEXT) {
		msg_fmt(err, errlen, "--filter-event: longer than %d characters", EF_MAX_TEXT - 1);
		return -EINVAL;
	}
	memcpy(f->text, text, strlen(text) + 1);
	skip_ws(&p);
	while (is_ident(text[p.i], n == 0) && n + 1 < sizeof(f->func))
		f->func[n++] = text[p.i++];
	f->func[n] = 0;
	/* FUNC+OFFSET: the -e event inside a function, named as fe_label names it */
	if (n && text[p.i] == '+') {
		size_t start = p.i - n;

		p.i++;
		while (isalnum((unsigned char)text[p.i]))
			p.i++;
		if (fe_place_label(text + start, p.i - start, f->func, sizeof(f->func)) < 0) {
			fail(&p, start + n + 1, "expected an offset into the function");
			goto bad;
		}
	}
	skip_ws(&p);
	if (!n || text[p.i] != ':') {
		fail(&p, p.i, n ? "expected ':' after the function" : "expected 'FUNC: EXPR'");
		goto bad;
	}
	p.i++;
	f->root = parse_or(&p);
	if (f->root < 0)
		goto bad;
	skip_ws(&p);
	if (text[p.i]) {
		fail(&p, p.i, "expected && or || or the end");
		goto bad;
	}
	return 0;
bad:
	msg_fmt(err, errlen, "--filter-event '%s': %s at column %zu", text, p.why, p.at + 1);
	return -EINVAL;
}

/* The field @name among @spec's chain, and its status byte's offset in the payload. */
static const struct fe_field *find_field(const struct fe_spec *spec, const char *name,
					 size_t *offset)
{
	size_t off = 0;

	for (unsigned k = 0; spec && k < FE_MAX_CHAIN; spec = spec->next, k++)
		for (unsigned i = 0; i < spec->nr_fields; i++) {
			if (!strcmp(spec->fields[i].name, name)) {
				*offset = off;
				return &spec->fields[i];
			}
			off += 1 + fe_field_data_size(&spec->fields[i]);
		}
	return NULL;
}

static bool is_string_field(const struct fe_field *f)
{
	return f->kind == FE_STRING || f->kind == FE_CHARS;
}

/* Whether the number of @e can be a value of its bound number field (a field of B bits holds
 * -2^(B-1) to 2^B-1: signed or unsigned, as a C comparison reads it); else what is wrong, in @why.
 */
static bool number_fits(const struct ef_node *e, char *why, size_t len)
{
	unsigned size = e->f->kind == FE_SYMBOL ? 8 : e->f->size, bits = 8 * size;

	if (size >= 8 || !size)
		return true;
	if (e->num >= -(1ll << (bits - 1)) && e->num <= (long long)((1ull << bits) - 1))
		return true;
	msg_fmt(why, len, "%s is out of range for a %u-bit field (%lld to %llu)", e->str, bits,
		-(1ll << (bits - 1)), (1ull << bits) - 1);
	return false;
}

int ef_bind(struct ef_filter *f, const struct fe_spec *spec, char *err, size_t errlen)
{
	for (unsigned i = 0; i < f->nr_nodes; i++) {
		struct ef_node *e = &f->nodes[i];
		const char *why = NULL;
		char range[96];

		if (e->kind != EF_CMP)
			continue;
		e->f = find_field(spec, e->field, &e->offset);
		if (!e->f)
			why = "no such field of the -e event";
		else if (is_string_field(e->f) &&
			 (e->op != EF_EQ && e->op != EF_NE && e->op != EF_GLOB))
			why = "a string field takes == != ~";
		else if (!is_string_field(e->f) && e->f->count)
			why = "an array field cannot be compared";
		else if (!is_string_field(e->f) && (e->op == EF_GLOB || e->is_string))
			why = "a number field takes a number and == != < > <= >= &";
		else if (!is_string_field(e->f) && !number_fits(e, range, sizeof(range)))
			why = range;
		if (why) {
			msg_fmt(err, errlen, "--filter-event '%s': %s: %s at column %zu", f->text,
				e->field, why, e->pos + 1);
			return -EINVAL;
		}
	}
	f->need = fe_payload_size(spec);
	return 0;
}

static bool cmp_string(const struct ef_node *e, const uint8_t *data)
{
	char s[FE_MAX_STRING + 1];
	size_t max = e->f->kind == FE_STRING ? FE_MAX_STRING : e->f->count;
	bool m;

	if (max > FE_MAX_STRING)
		max = FE_MAX_STRING;
	memcpy(s, data, max);
	s[max] = 0;
	m = filter_glob_match(e->str, s);
	return e->op == EF_NE ? !m : m;
}

static bool cmp_number(const struct ef_node *e, const uint8_t *data)
{
	unsigned size = e->f->kind == FE_SYMBOL ? 8 : e->f->size;
	uint64_t v = 0, w = (uint64_t)e->num;
	bool sign = e->f->kind == FE_SIGNED;

	if (size > 8)
		size = 8;
	memcpy(&v, data, size);
	if (sign && size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~0ull << (8 * size);
	switch (e->op) {
	case EF_EQ:
		return v == w;
	case EF_NE:
		return v != w;
	case EF_AND_MASK:
		return (v & w) != 0;
	case EF_LT:
		return sign ? (int64_t)v < (int64_t)w : v < w;
	case EF_GT:
		return sign ? (int64_t)v > (int64_t)w : v > w;
	case EF_LE:
		return sign ? (int64_t)v <= (int64_t)w : v <= w;
	case EF_GE:
		return sign ? (int64_t)v >= (int64_t)w : v >= w;
	default:
		return false;
	}
}

static bool eval(const struct ef_filter *f, int id, const uint8_t *payload, size_t len)
{
	const struct ef_node *e = &f->nodes[id];

	switch (e->kind) {
	case EF_AND:
		return eval(f, e->l, payload, len) && eval(f, e->r, payload, len);
	case EF_OR:
		return eval(f, e->l, payload, len) || eval(f, e->r, payload, len);
	case EF_NOT:
		return !eval(f, e->l, payload, len);
	case EF_CMP:
		if (!e->f || e->offset + 1 + fe_field_data_size(e->f) > len || payload[e->offset])
			return false; /* unbound, short payload, or a fault */
		return is_string_field(e->f) ? cmp_string(e, payload + e->offset + 1)
					     : cmp_number(e, payload + e->offset + 1);
	}
	return false;
}

bool ef_match(const struct ef_filter *f, const uint8_t *payload, size_t len)
{
	return f->nr_nodes && f->need && len >= f->need && eval(f, f->root, payload, len);
}
