#include "host/tap/hist.h"
#include "guest-stub/stub_abi.h"
#include "host/trace/record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Binds -e field @f to the event chain @spec: its status byte's offset in the payload. */
static int bind_event_field(struct hist_field *f, const struct fe_spec *spec, const char *text,
			    char *err, size_t errlen)
{
	size_t off = 0;

	for (unsigned k = 0; spec && k < FE_MAX_CHAIN; spec = spec->next, k++)
		for (unsigned i = 0; i < spec->nr_fields; i++) {
			const struct fe_field *ff = &spec->fields[i];

			if (strcmp(ff->name, f->name)) {
				off += 1 + fe_field_data_size(ff);
				continue;
			}
			if (ff->count || ff->kind == FE_STRING || ff->kind == FE_CHARS ||
			    ff->size > 8) {
				snprintf(err, errlen,
					 "--trigger %s: %s: only a number field can be a key or "
					 "value",
					 text, f->name);
				return -EINVAL;
			}
			f->ev_offset = (uint32_t)off;
			f->ev_size = (uint8_t)ff->size;
			f->ev_signed = ff->kind == FE_SIGNED;
			return 0;
		}
	snprintf(err, errlen,
		 "--trigger %s: no field %s (common_pid, common_cpu, ip, parent_ip, duration, or "
		 "a field of the function's -e event)",
		 text, f->name);
	return -EINVAL;
}

static int bind_fields(struct hist *h, const struct probe *pr, const char *text, char *err,
		       size_t errlen)
{
	struct hist_field *fields[HIST_KEYS_MAX + HIST_VALS_MAX];
	unsigned n = 0;

	for (unsigned i = 0; i < h->spec.nr_keys; i++)
		fields[n++] = &h->spec.keys[i];
	for (unsigned i = 0; i < h->spec.nr_vals; i++)
		fields[n++] = &h->spec.vals[i];
	for (unsigned i = 0; i < n; i++) {
		if (fields[i]->src != HIST_SRC_EVENT)
			continue;
		if (h->on_return) {
			snprintf(err, errlen,
				 "--trigger %s: %s: a duration histogram counts returns, which "
				 "carry no -e field",
				 text, fields[i]->name);
			return -EINVAL;
		}
		if (bind_event_field(fields[i], pr->event, text, err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

int hist_set_init(struct hist_set *s, const struct hist_spec *specs, size_t nr,
		  const struct probe_table *probes, bool graph, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	if (!nr)
		return 0;
	s->v = calloc(nr, sizeof(*s->v));
	if (!s->v)
		return -ENOMEM;
	s->nr = nr;
	for (size_t k = 0; k < nr; k++) {
		struct hist *h = &s->v[k];
		const struct probe *pr = probe_find(probes, specs[k].func);
		char text[160];

		h->spec = specs[k];
		h->on_return = hist_wants_returns(&h->spec);
		h->stack_key = hist_stack_key(&h->spec);
		snprintf(text, sizeof(text), "%s:hist", specs[k].func);
		if (!pr || (!h->on_return && pr->quiet_entry && !pr->event)) {
			snprintf(err, errlen,
				 "--trigger %s: %s is not a traced function (-l, -g, -e)", text,
				 specs[k].func);
			return -EINVAL;
		}
		if (h->on_return &&
		    ((!graph && !pr->ret_probe && !(pr->agg && (pr->agg_mode & STUB_AGG_RET))) ||
		     pr->no_return)) {
			snprintf(err, errlen,
				 "--trigger %s: duration: the returns of %s are not hooked (-r %s, "
				 "-p function_graph; an entry probe with no return cannot)",
				 text, specs[k].func, specs[k].func);
			return -EINVAL;
		}
		if (bind_fields(h, pr, text, err, errlen) < 0)
			return -EINVAL;
		h->probe = pr->id;
		h->elts = calloc(h->spec.size, sizeof(*h->elts));
		h->slots = calloc(2 * (size_t)h->spec.size, sizeof(*h->slots));
		if (!h->elts || !h->slots)
			return -ENOMEM;
		h->mask = 2 * h->spec.size - 1;
	}
	return 0;
}

bool hist_set_watches(const struct hist_set *s, uint32_t id)
{
	for (size_t k = 0; k < s->nr; k++)
		if (s->v[k].probe == id)
			return true;
	return false;
}

/* ilog2(roundup_pow_of_two(v)), as the kernel's .log2 (0 for 0 and 1). */
static uint64_t log2_up(uint64_t v)
{
	return v <= 1 ? 0 : 64 - (uint64_t)__builtin_clzll(v - 1);
}

/* An -e field's number from the payload (0 when it faulted or the payload is short). */
static uint64_t event_value(const struct hist_field *f, const struct sink_rec *rec)
{
	const uint8_t *p = rec->payload;
	uint64_t v = 0;

	if (!p || rec->r->value < f->ev_offset + 1u + f->ev_size || p[f->ev_offset])
		return 0;
	memcpy(&v, p + f->ev_offset + 1, f->ev_size); /* little-endian host and guest */
	if (f->ev_signed && f->ev_size < 8 && (v >> (8 * f->ev_size - 1)) & 1)
		v |= ~0ull << (8 * f->ev_size);
	return v;
}

uint64_t hist_field_mod(const struct hist_field *f, uint64_t v)
{
	switch (f->mod) {
	case HIST_MOD_LOG2:
		return log2_up(v);
	case HIST_MOD_BUCKETS:
		return v / f->buckets * f->buckets;
	case HIST_MOD_USECS:
		return v / 1000;
	default:
		return v;
	}
}

uint64_t hist_field_value(const struct hist_field *f, const struct sink_rec *rec)
{
	const struct hvt_record *r = rec->r;
	uint64_t v;

	switch (f->src) {
	case HIST_SRC_HITCOUNT:
		return 1;
	case HIST_SRC_PID:
		v = (uint64_t)(int64_t)r->pid;
		break;
	case HIST_SRC_CPU:
		v = r->cpu;
		break;
	case HIST_SRC_IP:
		v = r->ip;
		break;
	case HIST_SRC_PARENT_IP:
		v = r->parent;
		break;
	case HIST_SRC_DURATION:
		v = r->duration;
		break;
	default:
		v = event_value(f, rec);
		break;
	}
	return hist_field_mod(f, v);
}

static uint32_t hash_key(const uint64_t *key, unsigned n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < n; i++) {
		h ^= key[i];
		h *= 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	return (uint32_t)(h >> 32);
}

void hist_account(struct hist *h, const uint64_t *key, const uint64_t *val, const char *comm)
{
	hist_account_n(h, key, val, comm, 1);
}

/* One event or @n of the key @key (and the frames @stack of a stacktrace key, else NULL). */
static void account(struct hist *h, const uint64_t *key, const uint64_t *stack, const uint64_t *val,
		    const char *comm, uint64_t n)
{
	unsigned nk = h->spec.nr_keys;
	struct hist_entry *e = NULL;

	for (uint32_t i = hash_key(key, nk) & h->mask;; i = (i + 1) & h->mask) {
		uint32_t s = h->slots[i];

		if (!s) {
			if (h->nr_elts == h->spec.size) {
				h->dropped += n;
				return;
			}
			e = &h->elts[h->nr_elts++];
			h->slots[i] = h->nr_elts;
			memcpy(e->key, key, nk * sizeof(*key));
			if (stack)
				memcpy(e->stack, stack, sizeof(e->stack));
			memcpy(e->comm, comm, VMI_COMM_LEN);
			e->comm[VMI_COMM_LEN - 1] = 0;
			break;
		}
		if (!memcmp(h->elts[s - 1].key, key, nk * sizeof(*key)) &&
		    (!stack || !memcmp(h->elts[s - 1].stack, stack, sizeof(e->stack)))) {
			e = &h->elts[s - 1];
			break;
		}
	}
	h->hits += n;
	e->sum[0] += n;
	for (unsigned i = 0; i < h->spec.nr_vals; i++)
		e->sum[1 + i] += val[i];
}

void hist_account_n(struct hist *h, const uint64_t *key, const uint64_t *val, const char *comm,
		    uint64_t n)
{
	account(h, key, NULL, val, comm, n);
}

void hist_account_stack(struct hist *h, const uint64_t *key, const uint64_t *stack,
			const char *comm)
{
	uint64_t k[HIST_KEYS_MAX];

	memcpy(k, key, h->spec.nr_keys * sizeof(*key));
	if (h->stack_key >= 0)
		k[h->stack_key] = (uint64_t)hash_key(stack, HIST_STACK_DEPTH) << 32 |
				  hash_key(stack + 1, HIST_STACK_DEPTH - 1);
	account(h, k, stack, NULL, comm, 1);
}

/* A stack record made for hist @h's key: its frames (at most HIST_STACK_DEPTH, the rest 0) and
 * its other keys, accounted. */
static void add_stack(struct hist *h, const struct sink_rec *rec)
{
	uint64_t key[HIST_KEYS_MAX] = {0}, stack[HIST_STACK_DEPTH] = {0};
	size_t n = rec->payload ? rec->r->value / sizeof(uint64_t) : 0;

	if (n > HIST_STACK_DEPTH)
		n = HIST_STACK_DEPTH;
	if (n)
		memcpy(stack, rec->payload, n * sizeof(uint64_t));
	for (unsigned i = 0; i < h->spec.nr_keys; i++)
		if ((int)i != h->stack_key)
			key[i] = hist_field_value(&h->spec.keys[i], rec);
	hist_account_stack(h, key, stack, rec->r->comm);
}

void hist_add(void *ctx, const struct sink_rec *rec)
{
	struct hist_set *s = ctx;
	uint8_t type = rec->r->type;
	bool ret = type == HVT_REC_RETURN || type == HVT_REC_RETURN_EVENT;
	bool call = type == HVT_REC_ENTRY || type == HVT_REC_EVENT || type == HVT_REC_EVENT_ALONE;

	bool stack = type == HVT_REC_STACK && rec->r->parent == HVT_STACK_FOR_HIST;

	if (!rec->probe || (!ret && !call && !stack))
		return;
	for (size_t k = 0; k < s->nr; k++) {
		struct hist *h = &s->v[k];
		uint64_t key[HIST_KEYS_MAX], val[HIST_VALS_MAX];

		if (h->probe != rec->probe->id || (h->stack_key >= 0) != stack)
			continue;
		if (stack) {
			add_stack(h, rec);
			continue;
		}
		if (h->on_return != ret)
			continue;
		for (unsigned i = 0; i < h->spec.nr_keys; i++)
			key[i] = hist_field_value(&h->spec.keys[i], rec);
		for (unsigned i = 0; i < h->spec.nr_vals; i++)
			val[i] = hist_field_value(&h->spec.vals[i], rec);
		hist_account(h, key, val, rec->r->comm);
	}
}

int hist_set_copy(struct hist_set *dst, const struct hist_set *src)
{
	memset(dst, 0, sizeof(*dst));
	if (!src->nr)
		return 0;
	dst->v = calloc(src->nr, sizeof(*dst->v));
	if (!dst->v)
		return -ENOMEM;
	dst->nr = src->nr;
	for (size_t k = 0; k < src->nr; k++) {
		const struct hist *h = &src->v[k];
		struct hist *c = &dst->v[k];

		*c = *h;
		c->elts = malloc(h->spec.size * sizeof(*c->elts));
		c->slots = malloc(2 * (size_t)h->spec.size * sizeof(*c->slots));
		if (!c->elts || !c->slots) {
			hist_set_free(dst);
			return -ENOMEM;
		}
		memcpy(c->elts, h->elts, h->spec.size * sizeof(*c->elts));
		memcpy(c->slots, h->slots, 2 * (size_t)h->spec.size * sizeof(*c->slots));
	}
	return 0;
}

void hist_set_free(struct hist_set *s)
{
	for (size_t k = 0; k < s->nr; k++) {
		free(s->v[k].elts);
		free(s->v[k].slots);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}
