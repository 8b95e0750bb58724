/* What the session asks of each probe, set on the tracer before it attaches (probe_setup.h). */
#include "host/session/probe_setup.h"
#include "host/session/detour_plan.h"
#include "guest-stub/stub_blob.h"
#include "host/session/entry_sites.h"
#include "host/session/exitcode.h"
#include "host/trace/filter.h"
#include "host/trace/stub_drain.h"
#include "vmi/vmi_dwarf.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* set_graph_function: marks the probes whose function matches a -g glob; each glob must match one
 * traced function, else -ENOENT with a reason in @err. */
int probe_setup_graph_roots(struct tracer *t, const struct session *s, char *err, size_t errlen)
{
	const struct probe_table *probes = tracer_probes(t);

	for (size_t g = 0; g < s->nr_graph; g++) {
		bool any = false;

		probe_for_each(pr, probes)
			if (!pr->inside && filter_glob_match(s->graph[g], pr->func->name)) {
				tracer_set_graph_root(t, pr->id);
				any = true;
			}
		if (!any) {
			msg_fmt(err, errlen, "-g '%s': matches no traced function", s->graph[g]);
			return -ENOENT;
		}
	}
	return 0;
}

/* --trigger: each on the probe of its function, which must be a traced one. */
int probe_setup_triggers(struct tracer *t, const struct session *s, char *err, size_t errlen)
{
	const struct probe_table *probes = tracer_probes(t);

	for (size_t k = 0; k < s->nr_triggers; k++) {
		const struct trigger *tg = &s->triggers[k];
		const struct probe *pr = probe_find(probes, tg->func);

		if (!pr || (pr->quiet_entry && !pr->event)) {
			msg_fmt(err, errlen,
				"--trigger %s:%s: %s is not a traced function (-l, -g, -e)",
				tg->func, trigger_cmd_name(tg->cmd), tg->func);
			return EXIT_BAD_INPUT;
		}
		if (tracer_add_trigger(t, pr->id, tg) < 0) {
			msg_fmt(err, errlen, "out of memory");
			return EXIT_HOST_ERROR;
		}
	}
	/* a hist keyed by stacktrace: its function's stack walked at each call (a trap probe; a
	 * function that is not traced is told by hist_set_init) */
	for (size_t k = 0; k < s->nr_hists; k++) {
		const struct probe *pr = probe_find(probes, s->hists[k].func);

		if (pr && hist_stack_key(&s->hists[k]) >= 0)
			tracer_set_stack_key(t, pr->id);
	}
	return 0;
}

/* With no trap probe allowed: true (and why in @err) if a probe can only be a trap probe. */
bool probe_setup_need_trap(const struct tracer *t, char *err, size_t errlen)
{
	const struct probe_table *probes = tracer_probes(t);
	const struct probe *first = NULL;
	size_t stuck = 0;

	/* functions without an fentry site whose first bytes no detour can move */
	probe_for_each(pr, probes)
		if (pr->entry && !pr->inside && !pr->detour && !stuck++)
			first = pr;
	if (stuck == 1)
		snprintf(
		    err, errlen,
		    "trap probes: INT3 in a guest does not exit on this host's KVM, and %s has no "
		    "fentry site and no stub detour (its first bytes cannot be moved): leave it "
		    "out with -n",
		    first->func->name);
	else if (stuck)
		snprintf(
		    err, errlen,
		    "trap probes: INT3 in a guest does not exit on this host's KVM, and %zu "
		    "functions without an fentry site (%s, ...) have no stub detour (their first "
		    "bytes cannot be moved): leave them out with -n",
		    stuck, first->func->name);
	if (stuck)
		return true;
	probe_for_each(pr, probes) {
		if (stub_drain_capable(pr) && !tracer_has_trigger(t, pr))
			continue;
		msg_fmt(err, errlen,
			"trap probes: INT3 in a guest does not exit on this host's KVM, and %s %s "
			"needs one",
			pr->ret_event && !fe_return_register_only(pr->ret_event)
			    ? "the return probe -r of"
			: pr->inside && !pr->detour ? "the -e event with no stub detour at"
			: pr->event && !fe_registers_only(pr->event) ? "the -e event of"
								     : "the --trigger on",
			pr->func->name);
		return true;
	}
	return false;
}

/* --probe stub: one line naming the -e events and -r return probes that read guest memory at the
 * call and so stay trap probes (nothing when there is none). */
void probe_setup_say_trap(const struct tracer *t)
{
	const struct probe_table *probes = tracer_probes(t);
	char list[512];
	size_t len = 0, more = 0;

	list[0] = 0;
	probe_for_each(pr, probes) {
		bool r = pr->ret_event && !fe_return_register_only(pr->ret_event);
		bool e = pr->event && !pr->inside && !fe_registers_only(pr->event);

		for (int k = 0; k < 2; k++) {
			int n;

			if (!(k ? r : e))
				continue;
			n = snprintf(list + len, sizeof(list) - len, "%s%s %s", len ? ", " : "",
				     k ? "-r" : "-e", pr->func->name);
			if (n < 0 || (size_t)n >= sizeof(list) - len - 16) {
				list[len] = 0;
				more++;
			} else {
				len += (size_t)n;
			}
		}
	}
	if (len || more)
		fprintf(stderr,
			"hvtrace: --probe stub: these read guest memory at the call and stay trap "
			"probes: %s%s\n",
			len ? list : "", more ? (len ? " and more" : "several") : "");
	len = more = 0;
	probe_for_each(pr, probes) {
		len += pr->inside && stub_drain_capable(pr);
		more += pr->inside && !stub_drain_capable(pr);
	}
	if (len || more)
		fprintf(stderr,
			"hvtrace: --probe stub: -e events inside a function: %zu through stub "
			"detours, %zu trap probes (a detour records only RDI, RSI, RDX, RCX, R8 "
			"and R9, and only where the instructions there can be moved)\n",
			len, more);
}

/* Whether @f is a C function of the guest's BTF (else of its DWARF): entered by a CALL, its
 * return address at RSP. A compiler's clone (foo.isra.0, foo.constprop.0, foo.part.0) is its
 * origin's in BTF, and has an entry of its own in DWARF; a .cold part is entered by a jump. */
static bool c_function(const struct pipeline_guest *g, const struct vmi_sym *f)
{
	char base[128];
	size_t n = strcspn(f->name, ".");

	if (strstr(f->name, ".cold") || n >= sizeof(base))
		return false;
	if (!g->btf)
		return vmi_dwarf_is_c_function(g->c_funcs, f->addr);
	memcpy(base, f->name, n);
	base[n] = 0;
	return vmi_btf_has_func(g->btf, base);
}

/* Why entry probes on @g's functions trace no return, as words for a line. */
static const char *no_c_function(const struct pipeline_guest *g)
{
	if (g->btf)
		return "not a C function in the guest's BTF";
	if (g->c_funcs && g->c_funcs->nr)
		return "not a C function in the guest's DWARF";
	return g->c_funcs ? "the guest has no DWARF of C functions" : "the guest has no BTF";
}

/* Entry probes on what the guest's BTF does not know as a C function (asm: interrupt and exception
 * entries, code reached by a jump) trace entries only: a hooked "return" there would overwrite an
 * interrupt frame or whatever lies at RSP. One line says so when returns are traced (a function
 * named exactly, else a count); -r on one is refused. 0 or EXIT_BAD_INPUT with @err. */
int probe_setup_no_returns(struct tracer *t, const struct session *s,
			   const struct pipeline_guest *g, char *err, size_t errlen)
{
	const struct probe_table *probes = tracer_probes(t);
	long globbed = 0;

	if (!tracer_returns(t))
		return 0;
	probe_for_each(v, probes) {
		if (!v->entry || v->inside || c_function(g, v->func))
			continue; /* inside a function: never a return (probe_table_build) */
		if (v->ret_probe) {
			msg_fmt(err, errlen,
				"-r %s: %s, so its return cannot be hooked (it may be entered "
				"without a CALL)",
				v->func->name, no_c_function(g));
			return EXIT_BAD_INPUT;
		}
		tracer_set_no_return(t, v->id);
		if (entry_sites_named(s, v->func->name))
			fprintf(stderr,
				"hvtrace: %s: %s: its entries are traced, not its returns (it may "
				"be entered without a CALL)\n",
				v->func->name, no_c_function(g));
		else
			globbed++;
	}
	if (globbed)
		fprintf(stderr,
			"hvtrace: %ld function%s without an fentry site (%s): entries traced, not "
			"returns (asm code may be entered without a CALL)\n",
			globbed, globbed == 1 ? "" : "s", no_c_function(g));
	return 0;
}

int probe_setup_detours(struct tracer *t, const struct session *s, const struct pipeline_guest *g)
{
	const struct probe_table *probes = tracer_probes(t);
	long entries = 0, planned = 0;

	long inside = 0;

	probe_for_each(pr, probes) {
		entries += pr->entry && !pr->inside;
		inside += pr->inside;
	}
	if ((!entries && !inside) || s->cmd == CMD_LIST_FUNCTIONS)
		return 0;
	const struct stub_blob *blob = stub_blob_of(target_arch(g->tgt)->elf_machine);

	/* a stub without detour routines (arm64's, so far): those functions take trap probes */
	if (g->stub && g->text_read && g->funcs && blob && blob->entry[8]) {
		planned =
		    detour_plan(t, s, g->funcs, g->text_read, g->text_ctx, g->no_user, stderr);
		if (planned < 0)
			return (int)planned;
	}
	if (!g->stub)
		return 0;
	probe_for_each(pr, probes)
		planned -= pr->inside && pr->detour; /* said by say_trap_probes */
	if (!entries)
		return 0;
	if (planned == entries)
		fprintf(stderr,
			"hvtrace: %ld function%s without an fentry site probed at %s entry through "
			"%s\n",
			entries, entries == 1 ? "" : "s", entries == 1 ? "its" : "their",
			entries == 1 ? "a stub detour" : "stub detours");
	else
		fprintf(stderr,
			"hvtrace: %ld function%s without an fentry site probed at %s entry: %ld "
			"through stub detours, %ld with trap probes\n",
			entries, entries == 1 ? "" : "s", entries == 1 ? "its" : "their", planned,
			entries - planned);
	return 0;
}
