/* Function-based events typed from the guest's BTF: an argument given by name alone, `func(*)`
 * (every parameter) and a bare `-r func` get their types and argument positions from the function's
 * prototype (vmi_btf). Runs once, after the guest's BTF is read and before any probe is inserted.
 */
#ifndef HVT_FEVENT_BTF_H
#define HVT_FEVENT_BTF_H

#include "host/trace/fevent.h"
#include "vmi/vmi_btf.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether @spec has something only BTF can type (a bare -r does not: it falls back to x64). Pure.
 */
bool fe_needs_btf(const struct fe_spec *spec);

/* Completes @spec (an -e event, or with @is_return an -r return probe whose one field is RAX) from
 * @btf, which may be NULL (a guest without BTF). Untyped fields get the type of the parameter of
 * that name (or of the return) and its position; `*` becomes one field per parameter; a bare -r
 * takes the return's type (no field for void), or stays x64 without BTF. Int -> s/u of its size,
 * bool -> u8, enum -> s/u, char pointer -> string, other pointer -> x64; a struct by value or any
 * other type is refused. A spec typed this way prints fprobe-style. Returns 0, or -EINVAL with one
 * line in @err naming the function and what was wrong. @spec is unchanged when nothing needs BTF.
 */
int fe_resolve_btf(struct fe_spec *spec, bool is_return, const struct vmi_btf *btf, char *err,
		   size_t errlen);

#endif
