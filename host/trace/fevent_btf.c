#include "host/trace/fevent_btf.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdint.h>
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
		msg_fmt(err, errlen, "%s: %s is %s passed by value, which hvtrace does not decode",
			func, what, v->c);
		return -EINVAL;
	default:
		msg_fmt(err, errlen, "%s: %s has type %s, which hvtrace does not decode", func,
			what, v->c);
		return -EINVAL;
	}
	f->untyped = false;
	return 0;
}

/* Adds an address step to @f. Returns 0, or -EINVAL with a reason in @err when the chain is full.
 */
static int add_step(struct fe_field *f, int64_t offset, bool deref, char *err, size_t errlen)
{
	if (!deref && !offset)
		return 0;
	if (f->nr_steps == FE_MAX_STEPS) {
		msg_fmt(err, errlen, "%s: too many dereferences", f->name);
		return -EINVAL;
	}
	f->steps[f->nr_steps++] = (struct fe_step){.offset = offset, .deref = deref};
	return 0;
}

/* The members after the parameter in @f's name ("->f_path.dentry->d_name.name" of
 * "file->f_path..."), @v being the parameter's type: each becomes an offset from BTF, each '->'
 * after the first a read of the pointer there; the field ends typed as the last member, read from
 * memory (a char pointer: the string it points to). */
static int resolve_members(struct fe_field *f, const char *path, struct vmi_btf_value v,
			   const struct vmi_btf *btf, const char *func, char *err, size_t errlen)
{
	bool in_memory = false; /* v is the type of the object at the chain's address (else: of the
				 * argument itself) */
	int64_t offset = 0;

	while (*path) {
		bool arrow = path[0] == '-';
		char m[FE_NAME_LEN];
		uint32_t off, id;
		size_t n;
		int ret;

		path += arrow ? 2 : 1;
		n = strcspn(path, ".-");
		snprintf(m, sizeof(m), "%.*s", (int)n, path);
		path += n;
		if (arrow) {
			if (v.cls != VMI_BTF_PTR || !v.target) {
				msg_fmt(err, errlen,
					"%s: '->%s' in '%s': not a pointer to a struct (%s)", func,
					m, f->name, v.c);
				return -EINVAL;
			}
			if (in_memory && (add_step(f, offset, false, err, errlen) < 0 ||
					  add_step(f, 0, true, err, errlen) < 0))
				return -EINVAL;
			offset = 0;
			id = v.target;
		} else {
			if (!in_memory || v.cls != VMI_BTF_AGGREGATE) {
				msg_fmt(err, errlen, "%s: '.%s' in '%s': not a struct (%s)%s", func,
					m, f->name, v.c, v.cls == VMI_BTF_PTR ? ", use '->'" : "");
				return -EINVAL;
			}
			id = v.id;
		}
		ret = vmi_btf_member(btf, id, m, &off, &v);
		if (ret < 0) {
			msg_fmt(err, errlen, "%s: '%s': %s '%s'", func, f->name,
				ret == -ENOENT	     ? "no member"
				: ret == -EOPNOTSUPP ? "a bitfield, which hvtrace does not decode:"
						     : "broken BTF type at",
				m);
			return -EINVAL;
		}
		offset += off;
		in_memory = true;
	}
	if (v.cls == VMI_BTF_AGGREGATE) {
		msg_fmt(err, errlen, "%s: '%s' is %s: name one of its members", func, f->name, v.c);
		return -EINVAL;
	}
	if (type_field(f, &v, func, f->name, err, errlen) < 0)
		return -EINVAL;
	if (add_step(f, offset, false, err, errlen) < 0 ||
	    (f->kind == FE_STRING && add_step(f, 0, true, err, errlen) < 0))
		return -EINVAL;
	f->memory = true;
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

static int resolve_args(struct fe_spec *spec, const struct vmi_btf_proto *proto,
			const struct vmi_btf *btf, char *err, size_t errlen)
{
	char what[96], list[256];

	if (spec->all_args) {
		if (proto->nr_params > FE_MAX_FIELDS) {
			msg_fmt(err, errlen, "%s(*): %u parameters, more than %u fields",
				spec->func, proto->nr_params, FE_MAX_FIELDS);
			return -EINVAL;
		}
		spec->nr_fields = 0;
		for (unsigned i = 0; i < proto->nr_params; i++) {
			const struct vmi_btf_param *q = &proto->params[i];
			struct fe_field *f = &spec->fields[spec->nr_fields++];

			memset(f, 0, sizeof(*f));
			if (strlen(q->name) >= sizeof(f->name)) {
				msg_fmt(err, errlen, "%s(*): parameter name '%s' too long",
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

		size_t base;

		if (!f->untyped)
			continue;
		base = strcspn(f->name, ".-"); /* the parameter, before any member */
		for (k = 0; k < proto->nr_params; k++)
			if (strlen(proto->params[k].name) == base &&
			    !strncmp(proto->params[k].name, f->name, base))
				break;
		if (k == proto->nr_params) {
			list_params(list, sizeof(list), proto);
			msg_fmt(err, errlen, "%s has no parameter '%.*s' (%s)", spec->func,
				(int)base, f->name, list);
			return -EINVAL;
		}
		f->arg = k;
		if (f->name[base]) {
			if (resolve_members(f, f->name + base, proto->params[k].type, btf,
					    spec->func, err, errlen) < 0)
				return -EINVAL;
			continue;
		}
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
			msg_fmt(err, errlen,
				"%s(*): every argument needs the guest's BTF, and this "
				"guest has none",
				spec->func);
		} else {
			const char *name = "";

			for (unsigned i = 0; i < spec->nr_fields && !*name; i++)
				if (spec->fields[i].untyped)
					name = spec->fields[i].name;
			msg_fmt(err, errlen,
				"%s: '%s' has no type, and this guest has no BTF to take "
				"it from (give one, e.g. 'long %s')",
				spec->func, name, name);
		}
		return -EINVAL;
	}
	ret = vmi_btf_func_proto(btf, spec->func, &proto, err, errlen);
	if (ret < 0)
		return -EINVAL;
	spec->fprobe_style = true;
	return is_return ? resolve_return(spec, &proto, err, errlen)
			 : resolve_args(spec, &proto, btf, err, errlen);
}
