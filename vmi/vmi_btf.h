/* A guest kernel's BTF (its .BTF section, copied out of guest memory and parsed with libbpf), and
 * the questions hvtrace asks it: a function's prototype, a struct member's offset and type. The
 * bytes are the guest's: every type id and member followed is checked, and chains of typedefs,
 * modifiers and anonymous members are bounded, so a hostile BTF gets an error, never a loop or a
 * crash. */
#ifndef HVT_VMI_BTF_H
#define HVT_VMI_BTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMI_BTF_MAX_SIZE   (64u << 20) /* largest BTF accepted (a distribution kernel's: ~6 MiB) */
#define VMI_BTF_MAX_HOPS   32 /* typedef / const / volatile / ... links followed per type */
#define VMI_BTF_MAX_NEST   16 /* anonymous structs and unions searched for a member */
#define VMI_BTF_MAX_PARAMS 32 /* parameters of a prototype */
#define VMI_BTF_NAME_LEN   64 /* parameter names, C spellings of types (truncated) */

struct vmi_btf;

/* How a value of some BTF type can be printed. */
enum vmi_btf_class {
	VMI_BTF_VOID,	/* no value (a void return) */
	VMI_BTF_INT,	/* integer of @size bytes, @is_signed; bool included (@is_bool) */
	VMI_BTF_ENUM,	/* enumeration of @size bytes, @is_signed */
	VMI_BTF_PTR,	/* pointer to anything but char */
	VMI_BTF_STRING, /* pointer to char, signed or unsigned char (const, volatile, __user ...) */
	VMI_BTF_AGGREGATE, /* struct or union by value */
	VMI_BTF_OTHER,	   /* anything else: float, array, function, a bitfield-sized int */
};

struct vmi_btf_value {
	enum vmi_btf_class cls;
	unsigned size; /* bytes (0 for void) */
	bool is_signed, is_bool;
	uint32_t id;		  /* the type id, typedefs and modifiers stripped (0: void) */
	uint32_t target;	  /* pointers: the pointed-to type, stripped (0: void *) */
	char c[VMI_BTF_NAME_LEN]; /* a C spelling for messages: "struct open_how", "int", "ptr" */
};

struct vmi_btf_param {
	char name[VMI_BTF_NAME_LEN];
	struct vmi_btf_value type;
};

struct vmi_btf_proto {
	struct vmi_btf_value ret;
	unsigned nr_params;
	bool variadic; /* ends in "..." (not counted in nr_params) */
	struct vmi_btf_param params[VMI_BTF_MAX_PARAMS];
};

/* Parses the raw BTF @data of @size bytes (copied: @data may be freed after). Returns the BTF, or
 * NULL with one line in @err (too large, or libbpf refused it). Free with vmi_btf_free. */
struct vmi_btf *vmi_btf_new(const void *data, size_t size, char *err, size_t errlen);

void vmi_btf_free(struct vmi_btf *b);

/* The prototype of function @func (its BTF_KIND_FUNC, the first of that name). Returns 0, -ENOENT
 * when BTF has no such function, or -EINVAL with a reason in @err (a broken or unbounded type
 * chain, more than VMI_BTF_MAX_PARAMS parameters). Any thread, read-only. */
int vmi_btf_func_proto(const struct vmi_btf *b, const char *func, struct vmi_btf_proto *out,
		       char *err, size_t errlen);

/* Member @member of the struct or union with (stripped) type id @id, searched through anonymous
 * members: its byte offset from the start of @id and its type. Returns 0, -ENOENT (no such member,
 * or
 * @id is not a struct or union), -EOPNOTSUPP for a bitfield, -EINVAL for a broken type chain. */
int vmi_btf_member(const struct vmi_btf *b, uint32_t id, const char *member, uint32_t *offset,
		   struct vmi_btf_value *type);

/* Whether BTF has a FUNC record named @name: a C function of the guest (asm code has none).
 * O(log n); false for a NULL @b. Any thread, read-only. */
bool vmi_btf_has_func(const struct vmi_btf *b, const char *name);

/* Byte offset of @member in `struct @type`. Returns it, or a negative errno as vmi_btf_member. */
int vmi_btf_struct_offset(const struct vmi_btf *b, const char *type, const char *member);

#endif
