#include "host/out/expect.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* Hits of the probe on function @name; -1 if no probe has that name. */
static int64_t hits_of(const struct probe_table *probes, const struct profile *prof, const char *name)
{
	for (size_t i = 0; i < probes->nr; i++)
		if (!strcmp(probes->v[i].func->name, name))
			return prof ? (int64_t)prof->v[probes->v[i].id].hits : 0;
	return -1;
}

int expect_check_names(const struct probe_table *probes, char *const *calls, size_t nr_calls,
		       char *const *no_calls, size_t nr_no_calls, char *err, size_t errlen)
{
	for (size_t i = 0; i < nr_calls + nr_no_calls; i++) {
		const char *name = i < nr_calls ? calls[i] : no_calls[i - nr_calls];

		if (hits_of(probes, NULL, name) < 0) {
			snprintf(err, errlen, "%s %s: %s is not traced (check -l/-n and the guest's symbols)",
				 i < nr_calls ? "--expect-call" : "--expect-no-call", name, name);
			return -ENOENT;
		}
	}
	return 0;
}

int expect_verdict(const struct profile *prof, char *const *calls, size_t nr_calls,
		   char *const *no_calls, size_t nr_no_calls, FILE *out)
{
	int unmet = 0;

	for (size_t i = 0; i < nr_calls; i++)
		if (hits_of(prof->probes, prof, calls[i]) <= 0) {
			fprintf(out, "hvtrace: --expect-call %s: the guest never called it\n", calls[i]);
			unmet++;
		}
	for (size_t i = 0; i < nr_no_calls; i++) {
		int64_t n = hits_of(prof->probes, prof, no_calls[i]);

		if (n > 0) {
			fprintf(out, "hvtrace: --expect-no-call %s: the guest called it %" PRId64 " times\n",
				no_calls[i], n);
			unmet++;
		}
	}
	return unmet;
}
