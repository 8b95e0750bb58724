#include "host/trace/fevent.h"
#include "host/trace/escape.h"
#include "host/util/msg_fmt.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ------------------------------------------------------------------------------------ */

struct parser {
	const char *s;
	size_t i;
	char *err;
	size_t errlen;
	size_t *pos;
};

static int fail(struct parser *p, size_t at, const char *fmt, const char *what)
{
	msg_fmt(p->err, p->errlen, fmt, what);
	*p->pos = at;
	return -EINVAL;
}

static void skip_ws(struct parser *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\t')
		p->i++;
}

/* An identifier into @out (at most @len - 1 characters). Returns its length, 0 if none. */
static size_t ident(struct parser *p, char *out, size_t len)
{
	size_t n = 0;

	if (!isalpha((unsigned char)p->s[p->i]) && p->s[p->i] != '_')
		return 0;
	while (isalnum((unsigned char)p->s[p->i]) || p->s[p->i] == '_' || p->s[p->i] == '.') {
		if (n + 1 < len)
			out[n] = p->s[p->i];
		n++;
		p->i++;
	}
	out[n < len ? n : len - 1] = 0;
	return n;
}

/* A number at p->i: decimal, 0x hex or 0 octal, with a '-' only when @lo < 0 (no blanks, no '+'),
 * in @lo..@hi; else -EINVAL naming @what at its first character. */
static int number(struct parser *p, int64_t *v, int64_t lo, int64_t hi, const char *what)
{
	const char *s = p->s + p->i;
	size_t at = p->i;
	char *end;

	if (!isdigit((unsigned char)s[s[0] == '-' && lo < 0]))
		return fail(p, at, "%s", "expected a number");
	errno = 0;
	*v = strtoll(s, &end, 0);
	if (errno || *v < lo || *v > hi) {
		msg_fmt(p->err, p->errlen, "%s out of range (%" PRId64 "..%" PRId64 ")", what, lo,
			hi);
		*p->pos = at;
		return -EINVAL;
	}
	p->i = (size_t)(end - p->s);
	return 0;
}

struct type_name {
	const char *name;
	enum fe_kind kind;
	unsigned size;
};

static const struct type_name types[] = {
	{"char", FE_SIGNED, 1},	   {"short", FE_SIGNED, 2},   {"int", FE_SIGNED, 4},
	{"long", FE_SIGNED, 8},	   {"s8", FE_SIGNED, 1},      {"s16", FE_SIGNED, 2},
	{"s32", FE_SIGNED, 4},	   {"s64", FE_SIGNED, 8},     {"u8", FE_UNSIGNED, 1},
	{"u16", FE_UNSIGNED, 2},   {"u32", FE_UNSIGNED, 4},   {"u64", FE_UNSIGNED, 8},
	{"x8", FE_HEX, 1},	   {"x16", FE_HEX, 2},	      {"x32", FE_HEX, 4},
	{"x64", FE_HEX, 8},	   {"symbol", FE_SYMBOL, 8},  {"string", FE_STRING, 1},
	{"size_t", FE_UNSIGNED, 8}, {"ssize_t", FE_SIGNED, 8},
};

/* The type words at the start of a field: "unsigned long", "x8", "char", ... Sets *@is_char for the
 * spellings "char" and "unsigned char" (whose arrays are strings). */
static int parse_type(struct parser *p, struct fe_field *f, bool *is_char)
{
	char word[32];
	size_t at = p->i;
	bool is_unsigned = false;

	if (!ident(p, word, sizeof(word)))
		return fail(p, at, "%s", "expected a type");
	if (!strcmp(word, "unsigned")) {
		size_t save = p->i;

		is_unsigned = true;
		skip_ws(p);
		at = p->i;
		if (!ident(p, word, sizeof(word)) ||
		    (strcmp(word, "char") && strcmp(word, "short") && strcmp(word, "int") &&
		     strcmp(word, "long"))) {
			/* plain "unsigned" is unsigned int, and what followed is the name */
			p->i = save;
			strcpy(word, "int");
		}
	}
	*is_char = !strcmp(word, "char");
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
		if (!strcmp(word, types[k].name)) {
			f->kind = types[k].kind;
			f->size = types[k].size;
			if (is_unsigned && f->kind == FE_SIGNED)
				f->kind = FE_UNSIGNED;
			return 0;
		}
	return fail(p, at, "unknown type '%s'", word);
}

static bool is_type_word(const char *word)
{
	if (!strcmp(word, "unsigned"))
		return true;
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
		if (!strcmp(word, types[k].name))
			return true;
	return false;
}

/* Length of the C identifier at @s (letters, digits, '_'; not starting with a digit), 0 if none. */
static size_t c_ident(const char *s)
{
	size_t n = 0;

	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_')
		n++;
	return n;
}

/* An argument given by its name alone ("dfd" in "f(dfd, string name)"), maybe followed by members
 * ("file->f_path.dentry"): a field whose type, argument position and address steps come from BTF
 * later. Returns 1 and fills @f if that is what is at p->i, 0 (nothing consumed) if not, or
 * -EINVAL. */
static int parse_name_only(struct parser *p, struct fe_field *f)
{
	const char *s = p->s + p->i;
	size_t at = p->i, n = c_ident(s), k;
	char word[32];

	if (!n)
		return 0;
	snprintf(word, sizeof(word), "%.*s", (int)n, s); /* type words are short */
	if (n < sizeof(word) && is_type_word(word))
		return 0;
	for (;;) {
		size_t op = s[n] == '.' ? 1 : s[n] == '-' && s[n + 1] == '>' ? 2 : 0;

		if (!op)
			break;
		k = c_ident(s + n + op);
		if (!k)
			return fail(p, at + n + op, "%s", "expected a member name");
		n += op + k;
	}
	p->i = at + n;
	skip_ws(p);
	if (p->s[p->i] != ',' && p->s[p->i] != ')') {
		p->i = at;
		return 0;
	}
	if (n >= FE_NAME_LEN)
		return fail(p, at, "%s", "field name too long");
	memset(f, 0, sizeof(*f));
	memcpy(f->name, s, n);
	f->name[n] = 0;
	f->untyped = true;
	f->kind = FE_HEX; /* until fe_resolve_btf types it */
	f->size = 8;
	return 1;
}

/* parse_name_only into the next field of @spec (the argument starting at @at). Returns 1 when
 * added, 0 when what is there is no name alone, or -EINVAL. */
static int add_name_only(struct parser *p, struct fe_spec *spec, size_t at)
{
	struct fe_field *f = &spec->fields[spec->nr_fields];
	int ret;

	if (spec->nr_fields == FE_MAX_FIELDS)
		return 0; /* parse_field says "too many fields" */
	ret = parse_name_only(p, f);
	if (ret <= 0)
		return ret;
	for (unsigned k = 0; k < spec->nr_fields; k++)
		if (!strcmp(spec->fields[k].name, f->name))
			return fail(p, at, "%s", "duplicate field name");
	spec->nr_fields++;
	return 1;
}

/* 1 + the place of register @name in the register set, 0 if it is none. A spec is parsed before
 * the guest is known: its registers are named as arch_default()'s. */
static unsigned register_place(const char *name)
{
	return (unsigned)(arch_reg_index(arch_default(), name) + 1);
}

/* One field: type, optional [N], name, optional [K], then +off / [K] steps. */
static int parse_field(struct parser *p, struct fe_field *f, unsigned arg)
{
	size_t at;
	int64_t v;
	bool is_char;
	int ret;

	memset(f, 0, sizeof(*f));
	f->arg = arg;
	ret = parse_type(p, f, &is_char);
	if (ret < 0)
		return ret;
	skip_ws(p);
	if (p->s[p->i] == '[') {
		at = p->i++;
		if (number(p, &v, 1, is_char ? FE_MAX_STRING : FE_MAX_ARRAY, "array length") < 0)
			return -EINVAL;
		if (p->s[p->i] != ']')
			return fail(p, p->i, "%s", "expected ']'");
		p->i++;
		if (f->kind == FE_STRING || f->kind == FE_SYMBOL)
			return fail(p, at, "%s", "no arrays of this type");
		f->count = (unsigned)v;
		/* char[N] and unsigned char[N] are strings of N bytes (u8[N] stays numbers) */
		if (is_char)
			f->kind = FE_CHARS;
		f->memory = true;
	}
	skip_ws(p);
	at = p->i;
	if (!ident(p, f->name, sizeof(f->name)))
		return fail(p, at, "%s", "expected a field name");
	if (strlen(f->name) + 1 >= sizeof(f->name))
		return fail(p, at, "%s", "field name too long");
	if (f->kind == FE_STRING)
		f->memory = true;
	/* name=%REG: a register's value instead of an argument */
	if (p->s[p->i] == '=' && p->s[p->i + 1] == '%') {
		char reg[8];

		p->i += 2;
		at = p->i;
		if (!ident(p, reg, sizeof(reg)) || !(f->reg = register_place(reg)))
			return fail(p, at, "%s",
				    "expected a register (rax..r15, rip, rflags)");
	} else if (p->s[p->i] == '=') {
		/* name=ADDR: a guest address (a global), read there instead of an argument */
		const char *s = p->s + ++p->i;
		char *end;

		at = p->i;
		if (!isdigit((unsigned char)s[0]))
			return fail(p, at, "%s", "expected an address");
		errno = 0;
		f->addr = strtoull(s, &end, 0);
		if (errno)
			return fail(p, at, "%s", "address out of range (at most 64 bits)");
		p->i = (size_t)(end - p->s);
		f->direct = true;
		f->memory = true;
	}
	/* name[K]: index into what the argument points to */
	if (p->s[p->i] == '[') {
		int64_t max = FE_MAX_OFFSET / (int64_t)f->size;

		at = p->i++;
		if (number(p, &v, -max, max, "index") < 0)
			return -EINVAL;
		if (p->s[p->i] != ']')
			return fail(p, p->i, "%s", "expected ']'");
		p->i++;
		f->steps[f->nr_steps++] = (struct fe_step){.offset = v * (int64_t)f->size};
		f->memory = true;
	}
	/* +off and [K] dereferences */
	while (p->s[p->i] == '+' || p->s[p->i] == '-' || p->s[p->i] == '[') {
		struct fe_step st = {0};

		at = p->i;
		if (f->nr_steps == FE_MAX_STEPS)
			return fail(p, at, "%s", "too many offsets and dereferences");
		if (p->s[p->i] == '[') {
			p->i++;
			if (number(p, &v, -FE_MAX_OFFSET / 8, FE_MAX_OFFSET / 8, "index") < 0)
				return -EINVAL;
			if (p->s[p->i] != ']')
				return fail(p, p->i, "%s", "expected ']'");
			p->i++;
			st.deref = true;
			st.offset = v;
		} else {
			bool neg = p->s[p->i] == '-';

			p->i++;
			if (number(p, &v, 0, FE_MAX_OFFSET, "offset") < 0)
				return -EINVAL;
			st.offset = neg ? -v : v;
		}
		f->steps[f->nr_steps++] = st;
		f->memory = true;
	}
	/* a chain ending in a dereference already holds the value for a scalar */
	if (f->nr_steps && f->steps[f->nr_steps - 1].deref && !f->count && f->kind != FE_STRING)
		f->memory = false;
	return 0;
}

int fe_parse(const char *text, struct fe_spec *spec, char *err, size_t errlen, size_t *pos)
{
	struct parser p = {.s = text, .err = err, .errlen = errlen, .pos = pos};
	size_t at;
	int ret;

	memset(spec, 0, sizeof(*spec));
	*pos = 0;
	skip_ws(&p);
	at = p.i;
	if (!ident(&p, spec->func, sizeof(spec->func)))
		return fail(&p, at, "%s", "expected a function name");
	if (p.i - at >= sizeof(spec->func))
		return fail(&p, at, "%s", "function name too long");
	if (text[p.i] == '+') {
		int64_t off;

		p.i++;
		if (number(&p, &off, 0, FE_MAX_INSIDE, "offset") < 0)
			return -EINVAL;
		spec->offset = (uint32_t)off;
	}
	skip_ws(&p);
	if (text[p.i] != '(')
		return fail(&p, p.i, "%s", "expected '('");
	p.i++;
	skip_ws(&p);
	if (text[p.i] == ')') {
		p.i++;
	} else {
		for (;;) {
			char word[8];
			size_t save;
			bool null, direct_only = false;

			skip_ws(&p);
			save = p.i;
			if (spec->nr_args == FE_MAX_ARGS)
				return fail(&p, p.i, "%s", "too many arguments");
			null = ident(&p, word, sizeof(word)) == 4 && !strcmp(word, "NULL");
			if (!null)
				p.i = save;
			if (null) {
				/* NULL skips an argument */
			} else if (text[p.i] == '*') {
				/* every argument, as fprobe's $arg* */
				p.i++;
				skip_ws(&p);
				if (spec->nr_args || text[p.i] != ')')
					return fail(&p, save, "%s",
						    "'*' (every argument) comes alone");
				if (spec->offset)
					return fail(&p, save, "%s",
						    "'*' (every argument) is for a function's entry, "
						    "not inside it");
				spec->all_args = true;
			} else if (spec->offset && (ret = add_name_only(&p, spec, save)) != 0) {
				return ret < 0 ? ret
					       : fail(&p, save, "%s",
						      "inside a function the arguments may be gone: "
						      "read a register (type name=%REG) or an "
						      "address (type name=0xADDR)");
			} else if ((ret = add_name_only(&p, spec, save)) != 0) {
				if (ret < 0)
					return ret;
			} else {
				unsigned first = spec->nr_fields;

				for (;;) {
					if (spec->nr_fields == FE_MAX_FIELDS)
						return fail(&p, p.i, "%s", "too many fields");
					ret = parse_field(&p, &spec->fields[spec->nr_fields],
							  spec->nr_args);
					if (ret < 0)
						return ret;
					for (unsigned k = 0; k < spec->nr_fields; k++)
						if (!strcmp(spec->fields[k].name,
							    spec->fields[spec->nr_fields].name))
							return fail(&p, save, "%s",
								    "duplicate field name");
					spec->nr_fields++;
					skip_ws(&p);
					if (text[p.i] != '|')
						break;
					p.i++;
					skip_ws(&p);
				}
				/* direct addresses and registers alone take no argument position */
				for (; first < spec->nr_fields &&
				       (spec->fields[first].direct || spec->fields[first].reg);
				     first++)
					;
				if (spec->offset && first < spec->nr_fields)
					return fail(&p, save, "%s",
						    "inside a function the arguments may be gone: "
						    "read a register (type name=%REG) or an "
						    "address (type name=0xADDR)");
				if (first == spec->nr_fields)
					direct_only = true;
			}
			if (!direct_only)
				spec->nr_args++;
			skip_ws(&p);
			if (text[p.i] == ',') {
				p.i++;
				continue;
			}
			if (text[p.i] == ')') {
				p.i++;
				break;
			}
			return fail(&p, p.i, "%s", "expected ',' or ')'");
		}
	}
	skip_ws(&p);
	if (text[p.i])
		return fail(&p, p.i, "%s", "unexpected text after ')'");
	return 0;
}

const char *fe_label(const struct fe_spec *spec, char *buf, size_t len)
{
	if (spec->offset)
		snprintf(buf, len, "%s+0x%" PRIx32, spec->func, spec->offset);
	else
		snprintf(buf, len, "%s", spec->func);
	return buf;
}

int fe_place_label(const char *s, size_t n, char *out, size_t outlen)
{
	const char *plus = memchr(s, '+', n);
	size_t flen = plus ? (size_t)(plus - s) : n;
	unsigned long long off = 0;
	char num[24], *end;
	int k;

	if (!flen || plus == s + n - 1)
		return -EINVAL;
	if (plus) {
		if (n - flen - 1 >= sizeof(num) || !isdigit((unsigned char)plus[1]))
			return -EINVAL;
		memcpy(num, plus + 1, n - flen - 1);
		num[n - flen - 1] = 0;
		errno = 0;
		off = strtoull(num, &end, 0);
		if (errno || *end || off > FE_MAX_INSIDE)
			return -EINVAL;
	}
	k = off ? snprintf(out, outlen, "%.*s+0x%llx", (int)flen, s, off)
		: snprintf(out, outlen, "%.*s", (int)flen, s);
	return k < 0 || (size_t)k >= outlen ? -EINVAL : 0;
}

void fe_format_error(char *buf, size_t len, const char *text, size_t pos, const char *reason)
{
	snprintf(buf, len, "%s\n%*s^ %s", text, (int)pos, "", reason);
}

/* ---- capture (vCPU thread) ---------------------------------------------------------------------- */

/* Payload per field: one status byte (0 ok, 1 fault) and the field's data. */
static size_t field_data_size(const struct fe_field *f)
{
	switch (f->kind) {
	case FE_STRING: return FE_MAX_STRING;
	case FE_CHARS: return f->count;
	default: return f->count ? (size_t)f->count * f->size : 8;
	}
}

size_t fe_field_data_size(const struct fe_field *f)
{
	return field_data_size(f);
}

size_t fe_event_size(const struct fe_spec *spec)
{
	size_t n = 0;

	for (unsigned i = 0; i < spec->nr_fields; i++)
		n += 1 + field_data_size(&spec->fields[i]);
	return n;
}

size_t fe_payload_size(const struct fe_spec *spec)
{
	size_t n = 0;

	for (unsigned k = 0; spec && k < FE_MAX_CHAIN; spec = spec->next, k++)
		n += fe_event_size(spec);
	return n;
}

uint64_t fe_arg(const struct arch *a, const struct arch_regs *regs, unsigned n, vmi_read_fn read,
		void *ctx)
{
	uint64_t v = 0;

	if (n < a->regs.nr_args)
		return arch_regs_arg(a, regs, n);
	/* at the entry: stack arguments above the return address (x86: [rsp]) */
	if (read(ctx, arch_regs_sp(a, regs) + a->regs.stack_args_off + 8 * (n - a->regs.nr_args),
		 &v, 8) < 0)
		return 0;
	return v;
}

static void capture_field(const struct fe_field *f, uint64_t base, vmi_read_fn read, void *ctx,
			  uint8_t *out)
{
	size_t size = field_data_size(f);
	uint8_t *data = out + 1;

	*out = 0;
	memset(data, 0, size);
	for (unsigned s = 0; s < f->nr_steps; s++) {
		if (f->steps[s].deref) {
			if (read(ctx, base + 8 * (uint64_t)f->steps[s].offset, &base, 8) < 0)
				goto fault;
		} else {
			base += (uint64_t)f->steps[s].offset;
		}
	}
	if (!f->memory) {
		memcpy(data, &base, 8);
		return;
	}
	if (f->kind == FE_STRING) {
		/* NUL-terminated, bounded; read up to a page boundary at a time */
		size_t got = 0;

		while (got < FE_MAX_STRING - 1) {
			size_t chunk = 4096 - ((base + got) & 4095);

			if (chunk > FE_MAX_STRING - 1 - got)
				chunk = FE_MAX_STRING - 1 - got;
			if (read(ctx, base + got, data + got, chunk) < 0) {
				if (!got)
					goto fault;
				break;
			}
			if (memchr(data + got, 0, chunk))
				break;
			got += chunk;
		}
		data[FE_MAX_STRING - 1] = 0;
		return;
	}
	if (read(ctx, base, data, f->count ? size : f->size) == 0)
		return;
fault:
	*out = 1;
}

/* Whether register place @reg (register-set order, 1-based) is one of the argument registers,
 * which a stub saves. */
static bool argument_register(unsigned reg)
{
	return reg && arch_reg_is_arg(arch_default(), reg - 1);
}

/* Whether field @f reads guest memory: its value there, or a pointer on its way (a chain ending in
 * [K] holds a scalar's value without @f->memory). */
static bool reads_memory(const struct fe_field *f)
{
	if (f->memory || f->direct)
		return true;
	for (unsigned s = 0; s < f->nr_steps; s++)
		if (f->steps[s].deref)
			return true;
	return false;
}

bool fe_registers_only(const struct fe_spec *spec)
{
	for (unsigned k = 0; spec && k < FE_MAX_CHAIN; spec = spec->next, k++)
		for (unsigned i = 0; i < spec->nr_fields; i++)
			if (reads_memory(&spec->fields[i]) ||
			    spec->fields[i].arg >= arch_default()->regs.nr_args ||
			    (spec->fields[i].reg && !argument_register(spec->fields[i].reg)))
				return false;
	return true;
}

bool fe_return_register_only(const struct fe_spec *spec)
{
	for (unsigned k = 0; spec && k < FE_MAX_CHAIN; spec = spec->next, k++)
		for (unsigned i = 0; i < spec->nr_fields; i++) {
			const struct fe_field *f = &spec->fields[i];

			if (f->memory || f->direct || f->reg || f->arg != 0 || f->kind == FE_STRING ||
			    f->kind == FE_CHARS)
				return false;
			for (unsigned s = 0; s < f->nr_steps; s++)
				if (f->steps[s].deref)
					return false;
		}
	return true;
}

void fe_capture(const struct arch *a, const struct fe_spec *spec, const struct arch_regs *regs,
		vmi_read_fn read, void *ctx, uint8_t *payload)
{
	for (unsigned k = 0; spec && k < FE_MAX_CHAIN; spec = spec->next, k++)
		for (unsigned i = 0; i < spec->nr_fields; i++) {
			const struct fe_field *f = &spec->fields[i];

			capture_field(f,
				      f->direct ? f->addr
				      : f->reg	? arch_regs_get(a, regs, f->reg - 1)
						: fe_arg(a, regs, f->arg, read, ctx),
				      read, ctx, payload);
			payload += 1 + field_data_size(f);
		}
}

/* ---- formatting (writer thread) ----------------------------------------------------------------- */

static uint64_t element(const uint8_t *data, unsigned size, bool sign)
{
	uint64_t v = 0;

	memcpy(&v, data, size);
	if (sign && size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~0ull << (8 * size);
	return v;
}

static int format_value(char *buf, size_t len, const struct fe_field *f, const uint8_t *data,
			const struct vmi_symtab *syms, bool fprobe)
{
	uint64_t v = element(data, f->memory || f->count ? f->size : 8, false);
	const struct vmi_sym *s;
	size_t n;

	switch (f->kind) {
	case FE_SIGNED:
		return snprintf(buf, len, "%" PRId64, (int64_t)element(data, f->size, true));
	case FE_UNSIGNED:
		return snprintf(buf, len, "%" PRIu64, element(data, f->size, false));
	case FE_HEX:
		return snprintf(buf, len, fprobe ? "0x%" PRIx64 : "%" PRIx64,
				element(data, f->size, false));
	case FE_SYMBOL:
		v = element(data, 8, false);
		if (!v)
			return snprintf(buf, len, "(null)");
		s = syms ? vmi_symtab_lookup(syms, v) : NULL;
		if (!s || len < 2)
			return snprintf(buf, len, "0x%" PRIx64, v);
		n = escape_str(buf, len, s->name, SIZE_MAX);
		return (int)n + snprintf(buf + n, len - n, "+0x%" PRIx64 "/0x%" PRIx64, v - s->addr,
					 s->size);
	default:
		return 0;
	}
}

int fe_format(char *buf, size_t len, const struct fe_spec *spec, const uint8_t *payload,
	      const struct vmi_symtab *syms)
{
	bool fprobe = spec->fprobe_style;
	size_t n = 0;

#define ADD(...)                                                              \
	do {                                                                  \
		int k_ = snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__); \
		if (k_ > 0)                                                   \
			n += (size_t)k_;                                      \
	} while (0)
	if (len)
		buf[0] = 0;
	for (unsigned i = 0; i < spec->nr_fields; i++) {
		const struct fe_field *f = &spec->fields[i];
		const uint8_t *data = payload + 1;

		ADD("%s%s=", i ? (fprobe ? " " : ", ") : "", f->name);
		if (*payload) {
			ADD("(fault)");
		} else if (f->kind == FE_STRING || f->kind == FE_CHARS) {
			size_t max = f->kind == FE_STRING ? FE_MAX_STRING : f->count;

			/* guest bytes: escaped, so none can start a line or a control sequence */
			if (fprobe) {
				char e[ESCAPE_SIZE(FE_MAX_STRING)];

				escape_str(e, sizeof(e), (const char *)data, max);
				ADD("\"");
				/* and a quote in the string cannot end the quoted value */
				for (const char *c = e; *c; c++)
					ADD("%s%c", *c == '"' ? "\\" : "", *c);
				ADD("\"");
			} else if (n < len) {
				n += escape_str(buf + n, len - n, (const char *)data, max);
			}
		} else if (f->count) {
			ADD("%s", fprobe ? "{" : "");
			for (unsigned k = 0; k < f->count; k++) {
				char v[32];

				format_value(v, sizeof(v), f, data + (size_t)k * f->size, syms,
					     fprobe);
				ADD("%s%s", k ? "," : "", v);
			}
			ADD("%s", fprobe ? "}" : "");
		} else {
			char v[160];

			format_value(v, sizeof(v), f, data, syms, fprobe);
			ADD("%s", v);
		}
		payload += 1 + field_data_size(f);
	}
#undef ADD
	return (int)(n < len ? n : (len ? len - 1 : 0));
}
