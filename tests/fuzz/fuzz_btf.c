/* libFuzzer harness for the guest's BTF as hvtrace reads it (vmi_btf): the input is the raw .BTF
 * bytes. What libbpf accepts is then asked what the tracer asks: every function's prototype, every
 * struct's members by name, and -e / -r specs typed from it (fe_resolve_btf). Loops, dangling ids
 * and absurd counts must end in an error, never a hang or a crash. */
#include "host/trace/fevent_btf.h"
#include "vmi/vmi_btf.h"

#include <bpf/btf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TYPES 4096 /* types looked at per input: keeps each run short */

static void ask_func(const struct vmi_btf *b, const char *name)
{
	struct vmi_btf_proto p;
	struct fe_spec spec;
	char err[256], text[160];
	size_t pos;

	if (vmi_btf_func_proto(b, name, &p, err, sizeof(err)) == 0) {
		if (p.nr_params > VMI_BTF_MAX_PARAMS)
			abort();
		for (unsigned i = 0; i < p.nr_params; i++)
			if (!memchr(p.params[i].name, 0, sizeof(p.params[i].name)))
				abort();
	}
	snprintf(text, sizeof(text), "%s(*)", name);
	if (fe_parse(text, &spec, err, sizeof(err), &pos) == 0 &&
	    fe_resolve_btf(&spec, false, b, err, sizeof(err)) == 0 &&
	    spec.nr_fields > FE_MAX_FIELDS)
		abort();
	snprintf(text, sizeof(text), "%s(ret)", name);
	if (fe_parse(text, &spec, err, sizeof(err), &pos) == 0) {
		spec.ret_hex = true;
		if (fe_resolve_btf(&spec, true, b, err, sizeof(err)) == 0 && spec.nr_fields > 1)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct vmi_btf *b = vmi_btf_new(data, size, err, sizeof(err));
	struct btf *raw;
	__u32 n;

	if (!b) {
		if (strchr(err, '\n'))
			abort(); /* one line */
		return 0;
	}
	raw = btf__new(data, (__u32)size); /* the harness's own view, to know what to ask */
	if (!raw)
		abort(); /* vmi_btf accepted what libbpf refuses */
	n = btf__type_cnt(raw);
	for (__u32 id = 1; id < n && id < MAX_TYPES; id++) {
		const struct btf_type *t = btf__type_by_id(raw, id);
		const char *name = t ? btf__name_by_offset(raw, t->name_off) : NULL;

		if (!t || !name)
			continue;
		if (btf_is_func(t) && *name && strlen(name) < 120) {
			ask_func(b, name);
		} else if (btf_is_composite(t)) {
			const struct btf_member *m = btf_members(t);
			struct vmi_btf_value v;
			uint32_t off;

			for (__u16 i = 0; i < btf_vlen(t) && i < 64; i++, m++) {
				const char *mn = btf__name_by_offset(raw, m->name_off);

				if (mn && *mn)
					vmi_btf_member(b, id, mn, &off, &v);
			}
			vmi_btf_member(b, id, "no_such_member", &off, &v);
			if (*name)
				vmi_btf_struct_offset(b, name, "pid");
		}
	}
	btf__free(raw);
	vmi_btf_free(b);
	return 0;
}
