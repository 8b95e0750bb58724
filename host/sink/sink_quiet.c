#include "host/sink/sink_quiet.h"

#include <stddef.h>

static struct sink_quiet *of(const struct sink *s)
{
	return (struct sink_quiet *)((char *)s->ops - offsetof(struct sink_quiet, ops));
}

static unsigned entry(struct sink *s, const struct sink_rec *rec, const struct sink_rec *next)
{
	struct sink_quiet *q = of(s);

	if (q->quiet(q->quiet_ctx, rec))
		return 1; /* its return, if any, comes on its own and is judged alone */
	return q->inner->entry ? q->inner->entry(s, rec, next) : 1;
}

static void ret(struct sink *s, const struct sink_rec *rec)
{
	struct sink_quiet *q = of(s);

	if (!q->quiet(q->quiet_ctx, rec) && q->inner->ret)
		q->inner->ret(s, rec);
}

void sink_quiet_wrap(struct sink *s, struct sink_quiet *q,
		     bool (*quiet)(const void *ctx, const struct sink_rec *rec), const void *ctx)
{
	q->inner = s->ops;
	q->ops = *s->ops;
	q->ops.entry = entry;
	q->ops.ret = ret;
	q->quiet = quiet;
	q->quiet_ctx = ctx;
	s->ops = &q->ops;
}
