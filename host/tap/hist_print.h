/* A hist trigger's table as the kernel's `hist` file prints it (hist_trigger_show): the header
 * with the trigger info, one line per entry sorted as asked, the Totals. */
#ifndef HVT_HIST_PRINT_H
#define HVT_HIST_PRINT_H

#include "host/tap/hist.h"
#include "vmi/vmi_symtab.h"

#include <stdio.h>

/* One entry's line: "{ key: value[, ...] } hitcount: N[  val: N ...]\n" with the kernel's field
 * widths; @syms names .sym / .sym-offset keys and a stacktrace key's frames (NULL: addresses as
 * "0x..."), those a line each after "stacktrace:", the brace after the last. Returns the length
 * (snprintf's). Pure. */
int hist_entry_format(char *buf, size_t len, const struct hist_spec *spec,
		      const struct hist_entry *e, const struct vmi_symtab *syms);

/* Writes @h's section to @out: "\n\n" first unless @first, then the header, the entries, the
 * Totals. Returns 0 or -errno (out of memory for the sort, or a write error). After the writer
 * stopped; main thread. */
int hist_print(const struct hist *h, const struct vmi_symtab *syms, bool first, FILE *out);

#endif
