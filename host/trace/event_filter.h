/* --filter-event 'FUNC: EXPR': ftrace's event filter syntax (a subset) on the fields of a -e event,
 * evaluated on the captured payload before the record reaches the writer. Numbers: == != < > <= >=
 * and & (nonzero when masked); strings: == != (exact, or an ftrace glob with '*') and ~ (glob);
 * && || ! and parentheses. A field whose guest memory could not be read satisfies no comparison. */
#ifndef HVT_EVENT_FILTER_H
#define HVT_EVENT_FILTER_H

#include "host/trace/fevent.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EF_MAX_NODES 64	 /* comparisons and operators of one expression */
#define EF_MAX_TEXT  512 /* characters of one --filter-event */

enum ef_op { EF_EQ, EF_NE, EF_LT, EF_GT, EF_LE, EF_GE, EF_AND_MASK, EF_GLOB };
enum ef_node_kind { EF_CMP, EF_AND, EF_OR, EF_NOT };

struct ef_node {
	enum ef_node_kind kind;
	int l, r; /* EF_AND, EF_OR: operand nodes; EF_NOT: l */
	/* EF_CMP */
	char field[FE_NAME_LEN];
	enum ef_op op;
	bool is_string;		 /* the value was a quoted string or a bare word */
	int64_t num;		 /* numeric value */
	char str[FE_MAX_STRING]; /* string value */
	size_t pos;		 /* column of the field name, for errors */
	/* bound (ef_bind) */
	size_t offset; /* of the field's status byte in the payload */
	const struct fe_field *f;
};

struct ef_filter {
	char func[128];
	char text[EF_MAX_TEXT]; /* as given, for errors */
	int root;
	size_t need; /* bound: the payload's size (fe_payload_size of the spec) */
	unsigned nr_nodes;
	struct ef_node nodes[EF_MAX_NODES];
};

/* Parses "FUNC: EXPR". Returns 0, or -EINVAL with "--filter-event 'TEXT': REASON at column N" in
 * @err. Pure; never reads past @text's NUL. */
int ef_parse(const char *text, struct ef_filter *f, char *err, size_t errlen);

/* Binds each comparison to a field of @spec and the specs chained after it (their payload layout),
 * checking the operator fits the field's type (strings: == != ~; numbers: not ~; arrays: none).
 * Returns 0 or -EINVAL with a reason naming the field in @err. */
int ef_bind(struct ef_filter *f, const struct fe_spec *spec, char *err, size_t errlen);

/* Whether the bound filter @f accepts @payload (fe_payload_size of the bound spec, @len bytes; a
 * shorter payload is accepted by nothing). Pure, allocation-free (hot path). */
bool ef_match(const struct ef_filter *f, const uint8_t *payload, size_t len);

#endif
