/* Function-based events (seed 003): a pseudo-prototype `func(type name, ...)` saying which argument
 * registers and which guest memory to record at a function's entry, and how to print them. Parsing and
 * printing are pure; reading the values is done by the caller through a reader (guest memory). */
#ifndef HVT_FEVENT_H
#define HVT_FEVENT_H

#include "arch/arch.h"
#include "vmi/vmi_read.h"
#include "vmi/vmi_symtab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FE_MAX_FIELDS 16
#define FE_MAX_STEPS 8
#define FE_MAX_ARRAY 64
#define FE_MAX_STRING 128
#define FE_NAME_LEN   64
#define FE_MAX_ARGS   32	  /* argument positions, NULLs included */
#define FE_MAX_OFFSET (1ll << 32) /* |+off|, |index * element size| and |8 * [K]| */

enum fe_kind { FE_SIGNED, FE_UNSIGNED, FE_HEX, FE_SYMBOL, FE_STRING, FE_CHARS };

/* One step of an address chain: add @offset, or (deref) read the pointer at base + 8 * @offset. */
struct fe_step {
	int64_t offset;
	bool deref;
};

struct fe_field {
	char name[FE_NAME_LEN];
	enum fe_kind kind;
	unsigned size;	/* element size in bytes: 1, 2, 4, 8 */
	unsigned count; /* type[N] arrays and char[N]: N; scalars: 0 */
	unsigned arg;	/* argument position (0-based, NULLs count) */
	bool memory;	/* the value is read from guest memory at the chain's address */
	bool direct;	/* "type name=0xADDR": read at guest address @addr, no argument (seed 003's
			 * direct address); address steps may follow */
	uint64_t addr;
	unsigned reg;	/* "type name=%REG": 1 + the register's place in struct arch_regs (its value
			 * instead of an argument; address steps may follow), 0 none */
	bool untyped;	/* given by name alone (and members: "file->f_path.dentry"): type, position
			 * and address steps come from BTF (fe_resolve_btf) */
	unsigned nr_steps;
	struct fe_step steps[FE_MAX_STEPS];
};

struct fe_spec {
	char func[128];
	uint32_t offset;  /* func+OFFSET: the instruction OFFSET bytes into it (kprobe's p:FUNC+OFF;
			   * fields from registers and addresses only), 0 the entry */
	unsigned nr_args; /* positions, including NULL ones */
	unsigned nr_fields;
	bool all_args;	   /* func(*): every parameter, from BTF */
	bool ret_hex;	   /* -r func: RAX in its BTF type where BTF is known, else x64 */
	bool fprobe_style; /* some field is typed from BTF: printed as fprobe events print */
	struct fe_field fields[FE_MAX_FIELDS];
	/* the next -e event of the same function (captured and printed after this one), or NULL;
	 * a chain holds at most FE_MAX_CHAIN specs */
	const struct fe_spec *next;
};

#define FE_MAX_CHAIN 3 /* -e events per function: their payloads stay below the writer's bound */

/* Parses @text. An argument may be a name alone (its type and position to come from the function's
 * BTF: untyped) and the whole list may be `*` (every parameter): fe_resolve_btf completes those.
 * Returns 0, or -EINVAL with the reason in @err and the byte offset of the offending character in
 * *@pos. Pure; any thread. */
int fe_parse(const char *text, struct fe_spec *spec, char *err, size_t errlen, size_t *pos);

#define FE_MAX_INSIDE (1u << 20) /* the largest func+OFFSET */

/* The event's name as the user wrote it: "func", or "func+0xOFF" inside a function. Pure. */
const char *fe_label(const struct fe_spec *spec, char *buf, size_t len);

/* The place "func" or "func+OFF" (OFF decimal or 0x hex, 1..FE_MAX_INSIDE) in the @n bytes at @s,
 * written to @out as fe_label writes it ("func", "func+0xOFF"; "func+0" is "func"). Returns 0, or
 * -EINVAL (not such a place, or longer than @outlen). Pure. */
int fe_place_label(const char *s, size_t n, char *out, size_t outlen);

/* The one-line error display: the spec, then a caret under @pos, then the reason. */
void fe_format_error(char *buf, size_t len, const char *text, size_t pos, const char *reason);

/* Value of argument @n (0-based) at an entry of ISA @a: registers, then the stack above the return
 * address. */
uint64_t fe_arg(const struct arch *a, const struct arch_regs *regs, unsigned n, vmi_read_fn read,
		void *ctx);

/* True if every field of @spec (and of its chain) comes from the argument registers alone (no guest memory, no stack
 * argument; a %REG field only of RDI, RSI, RDX, RCX, R8 or R9), so it can be captured from registers saved earlier (stub
 * probes). Pure. */
bool fe_registers_only(const struct fe_spec *spec);

/* True if every field of typed return @spec (and of its chain) is the return register itself: the
 * first argument position (RAX is handed over there), no guest memory, no dereference, no direct
 * address. Such a return can be captured from the RAX a stub recorded. Pure. */
bool fe_return_register_only(const struct fe_spec *spec);

/* Bytes fe_capture writes for @spec and the specs chained after it (->next). Pure. */
size_t fe_payload_size(const struct fe_spec *spec);

/* Bytes of field @f's data in a payload (after its status byte: 0 ok, 1 fault). Pure. */
size_t fe_field_data_size(const struct fe_field *f);

/* Bytes of @spec's own part of that payload (without the chained specs). Pure. */
size_t fe_event_size(const struct fe_spec *spec);

/* At the function's entry (vCPU thread): copies each field's raw value (registers, guest memory
 * through the address chains) of @spec, then of each chained spec, into @payload, fe_payload_size
 * bytes; @regs are of ISA @a. No formatting, no allocation. */
void fe_capture(const struct arch *a, const struct fe_spec *spec, const struct arch_regs *regs,
		vmi_read_fn read, void *ctx, uint8_t *payload);

/* Writer thread: "name=value, name=value" of @spec alone (not its chain) from its part of a captured
 * @payload; a field whose memory could not
 * be read prints "(fault)". A spec typed from BTF (fprobe_style) prints as the kernel's fprobe
 * events do: "name=value name=value", strings in double quotes, hex with 0x. Returns the length.
 * Pure. */
int fe_format(char *buf, size_t len, const struct fe_spec *spec, const uint8_t *payload,
	      const struct vmi_symtab *syms);

#endif
