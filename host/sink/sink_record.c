/* The one place a record's type picks what a sink (struct sink_ops) or a tap (struct sink_tap_ops)
 * does with it. */
#include "host/sink/sink.h"

unsigned sink_record(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next)
{
	const struct sink_ops *o = s->ops;
	const struct hvt_record *r = rec->r;

	switch (r->type) {
	case HVT_REC_ENTRY:
		return o->entry ? o->entry(s, rec, next) : 1;
	case HVT_REC_EVENT:
		if (o->event)
			return o->event(s, rec, next);
		return o->entry ? o->entry(s, rec, next) : 1;
	case HVT_REC_EVENT_ALONE:
		if (o->event_alone)
			o->event_alone(s, rec);
		return 1;
	case HVT_REC_RETURN:
		if (o->ret)
			o->ret(s, rec);
		return 1;
	case HVT_REC_RETURN_EVENT:
		if (o->ret_event)
			o->ret_event(s, rec);
		else if (o->ret)
			o->ret(s, rec);
		return 1;
	case HVT_REC_LOST:
		if (o->lost)
			o->lost(s, r);
		return 1;
	case HVT_REC_STACK:
		if (o->stack)
			o->stack(s, rec);
		return 1;
	case HVT_REC_SNAPSHOT:
		if (o->snapshot)
			o->snapshot(s, r);
		return 1;
	default:
		return 1;
	}
}

void sink_tap_record(const struct sink_tap_ops *ops, void *ctx, const struct sink_rec *rec)
{
	uint8_t type = rec->r->type;
	void (*fn)(void *ctx, const struct sink_rec *rec) = ops->ret;

	if (type == HVT_REC_ENTRY || type == HVT_REC_EVENT || type == HVT_REC_EVENT_ALONE)
		fn = ops->call;
	else if (type == HVT_REC_RETURN_EVENT && ops->ret_event)
		fn = ops->ret_event;
	else if (type != HVT_REC_RETURN && type != HVT_REC_RETURN_EVENT)
		fn = NULL;
	if (fn)
		fn(ctx, rec);
}

bool sink_next_returns(const struct sink_rec *rec, const struct sink_rec *next)
{
	const struct hvt_record *r = rec->r, *n = next ? next->r : NULL;

	return n && (n->type == HVT_REC_RETURN || n->type == HVT_REC_RETURN_EVENT) &&
	       n->ip == r->ip && n->depth == r->depth && n->pid == r->pid;
}
