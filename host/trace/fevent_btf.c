#include "host/trace/fevent_btf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool fe_needs_btf(const struct fe_spec *spec)
{
	if (spec->all_args)
		return true;
	for (unsigned i = 0; i < spec->nr_fields; i++)
		if (spec->fields[i].untyped && !spec->ret_hex)
			return true;
	return false;
}

/* Gives @f the fe type of @v, or -EINVAL with a reason in @err (@what names the value). */
static int type_field(struct fe_field *f, const struct vmi_btf_value *v, const char *func,
		      const char *what, char *err, size_t errlen)
{
	f->count = 0;
	f->nr_steps = 0;
	f->memory = false;
	switch (v->cls) {
	case VMI_BTF_INT:
	case VMI_BTF_ENUM:
		f->kind = v->is_signed && !v->is_bool ? FE_SIGNED : FE_UNSIGNED;
		f->size = v->size;
		break;
	case VMI_BTF_PTR:
		f->kind = FE_HEX;
		f->size = 8;
		break;
	case VMI_BTF_STRING:
		f->kind = FE_STRING;
		f->size = 1;
		f->memory = true;
		break;
	case VMI_BTF_AGGREGATE:
		snprintf(err, errlen, "%s: %s is %s passed by value, which hvtrace does not decode",
			 func, what, v->c);
		return -EINVAL;
	default:
		snprintf(err, errlen, "%s: %s has type %s, which hvtrace does not decode", func,
			 what, v->c);
		return -EINVAL;
	}
	f->untyped = false;
	return 0;
}

/* "its parameters: a, b, c" (or "it has none") into @buf. */
static void list_params(char *buf, size_t len, const struct vmi_btf_proto *p)
{
	size_t n = (size_t)snprintf(buf, len, p->nr_params ? "its parameters: " : "it has none");

	for (unsigned i = 0; i < p->nr_params && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", p->params[i].name);
}

static int resolve_return(struct fe_spec *spec, const struct vmi_btf_proto *proto, char *err,
			  size_t errlen)
{
	struct fe_field *f = &spec->fields[0];

	if (proto->ret.cls == VMI_BTF_VOID) {
		spec->nr_fields = 0; /* nothing to print */
		return 0;
	}
	f->arg = 0; /* RAX is handed over as the first argument */
	return type_field(f, &proto->ret, spec->func, "its return value", err, errlen);
}

static int resolve_args(struct fe_spec *spec, const struct vmi_btf_proto *proto, char *err,
			size_t errlen)
{
	char what[96], list[256];

	if (spec->all_args) {
		if (proto->nr_params > FE_MAX_FIELDS) {
			snprintf(err, errlen, "%s(*): %u parameters, more than %u fields", spec->func,
				 proto->nr_params, FE_MAX_FIELDS);
			return -EINVAL;
		}
		spec->nr_fields = 0;
		for (unsigned i = 0; i < proto->nr_params; i++) {
			const struct vmi_btf_param *q = &proto->params[i];
			struct fe_field *f = &spec->fields[spec->nr_fields++];

			memset(f, 0, sizeof(*f));
			if (strlen(q->name) >= sizeof(f->name)) {
				snprintf(err, errlen, "%s(*): parameter name '%s' too long",
					 spec->func, q->name);
				return -EINVAL;
			}
			strcpy(f->name, q->name);
			f->arg = i;
			snprintf(what, sizeof(what), "parameter '%s'", q->name);
			if (type_field(f, &q->type, spec->func, what, err, errlen) < 0)
				return -EINVAL;
		}
		spec->nr_args = proto->nr_params;
		spec->all_args = false;
		return 0;
	}
	for (unsigned i = 0; i < spec->nr_fields; i++) {
		struct fe_field *f = &spec->fields[i];
		unsigned k;

		if (!f->untyped)
			continue;
		for (k = 0; k < proto->nr_params; k++)
			if (!strcmp(proto->params[k].name, f->name))
				break;
		if (k == proto->nr_params) {
			list_params(list, sizeof(list), proto);
			snprintf(err, errlen, "%s has no parameter '%s' (%s)", spec->func, f->name,
				 list);
			return -EINVAL;
		}
		f->arg = k;
		snprintf(what, sizeof(what), "parameter '%s'", f->name);
		if (type_field(f, &proto->params[k].type, spec->func, what, err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

int fe_resolve_btf(struct fe_spec *spec, bool is_return, const struct vmi_btf *btf, char *err,
		   size_t errlen)
{
	struct vmi_btf_proto proto;
	int ret;

	if (spec->ret_hex) {
		/* a bare -r: typed from BTF where the function is known, else RAX in hex as ever */
		if (!btf || vmi_btf_func_proto(btf, spec->func, &proto, err, errlen) < 0) {
			spec->fields[0].untyped = false;
			spec->ret_hex = false;
			return 0;
		}
		spec->ret_hex = false;
		spec->fprobe_style = true;
		return resolve_return(spec, &proto, err, errlen);
	}
	if (!fe_needs_btf(spec))
		return 0;
	if (!btf) {
		if (spec->all_args) {
			snprintf(err, errlen, "%s(*): every argument needs the guest's BTF, and this "
				 "guest has none", spec->func);
		} else {
			const char *name = "";

			for (unsigned i = 0; i < spec->nr_fields && !*name; i++)
				if (spec->fields[i].untyped)
					name = spec->fields[i].name;
			snprintf(err, errlen, "%s: '%s' has no type, and this guest has no BTF to take "
				 "it from (give one, e.g. 'long %s')", spec->func, name, name);
		}
		return -EINVAL;
	}
	ret = vmi_btf_func_proto(btf, spec->func, &proto, err, errlen);
	if (ret < 0)
		return -EINVAL;
	spec->fprobe_style = true;
	return is_return ? resolve_return(spec, &proto, err, errlen)
			 : resolve_args(spec, &proto, err, errlen);
}
