#include "host/session/pipeline.h"
#include "host/trace/stub_drain.h"

bool pipeline_selected(const struct pipeline *p)
{
	return p->s != NULL;
}

int pipeline_sink_err(const struct pipeline *p)
{
	return p->sink.err;
}

bool pipeline_has_tracer(const struct pipeline *p)
{
	return p->have_tr;
}

bool pipeline_backpressure(const struct pipeline *p)
{
	return p->have_tr && tracer_backpressure(p->tr);
}

bool pipeline_drain_holding(struct pipeline *p)
{
	return tracer_drain_holding(p->tr);
}

void pipeline_count_pauses(struct pipeline *p, uint64_t n, uint64_t ns)
{
	tracer_count_pauses(p->tr, n, ns);
}

struct target *pipeline_target(const struct pipeline *p)
{
	return tracer_target(p->tr);
}

void pipeline_stop_drain(struct pipeline *p)
{
	if (p->have_tr)
		tracer_stop_drain(p->tr);
}

const struct vmi_site *const *pipeline_selection(const struct pipeline *p, size_t *nr)
{
	*nr = p->nr_sel;
	return p->sel;
}

void pipeline_set_before_detach(struct pipeline *p, void (*fn)(void *ctx), void *ctx)
{
	tracer_set_before_detach(p->tr, fn, ctx);
}

size_t pipeline_forget_range(struct pipeline *p, uint64_t lo, uint64_t hi)
{
	return tracer_forget_range(p->tr, lo, hi);
}

void pipeline_set_task_slots(struct pipeline *p, const uint64_t *current, const uint64_t *preempt)
{
	tracer_set_task_slots(p->tr, current, preempt);
}

const struct tracer *pipeline_tracer(const struct pipeline *p)
{
	return p->tr;
}

int pipeline_takeover_detach(struct pipeline *p)
{
	return tracer_takeover_detach(p->tr);
}
