#include "host/tap/verdict_files.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* @s as a JSON string, quotes included: '"', '\\' and every byte outside printable ASCII escaped
 * (bytes >= 0x80 as \u00XX, their Latin-1 reading): valid JSON whatever the bytes. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static int finish(FILE *f)
{
	return ferror(f) ? -(errno ? errno : EIO) : 0;
}

int verdict_write_summary(FILE *f, const struct expect_state *st, const struct verdict_end *end)
{
	const struct profile *prof = st->prof;
	bool first = true;
	int unmet = 0;

	errno = 0;
	fprintf(f, "{\"exit_status\":%d,\"exit_reason\":", end->exit_status);
	json_str(f, end->exit_reason);
	fprintf(f, ",\"tracer\":");
	json_str(f, end->tracer);
	fprintf(f, ",\"elapsed\":%.6f,\"lost\":%llu,\"functions\":[", end->elapsed, end->lost);
	for (size_t i = 0; i < probe_count(prof->probes); i++) {
		const struct profile_entry *e = &prof->v[i];
		const struct probe *pr = probe_at(prof->probes, i);

		if (!e->hits && !e->returns)
			continue;
		fprintf(f, "%s{\"name\":", first ? "" : ",");
		json_str(f, pr->func->name);
		fprintf(
		    f, ",\"addr\":\"0x%" PRIx64 "\",\"calls\":%" PRIu64 ",\"returns\":%" PRIu64 "}",
		    pr->addr, e->hits, e->returns);
		first = false;
	}
	fprintf(f, "],\"expectations\":[");
	for (size_t i = 0; i < st->nr; i++) {
		const struct expect *e = &st->v[i];

		fprintf(f, "%s{\"option\":", i ? "," : "");
		json_str(f, expect_option(e->kind));
		fprintf(f, ",\"spec\":");
		json_str(f, e->spec);
		fprintf(f, ",\"passed\":%s,\"detail\":", e->passed ? "true" : "false");
		json_str(f, e->reason);
		fputc('}', f);
		unmet += !e->passed;
	}
	fprintf(f, "],\"unmet\":%d}\n", unmet);
	return finish(f);
}

/* @s as XML character data or attribute value: markup characters as entities, bytes >= 0x80 as
 * character references (their Latin-1 reading), control characters XML 1.0 cannot hold as '?'. */
static void xml_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if (c >= 0x80)
				fprintf(f, "&#x%02x;", c);
			else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				fputc('?', f);
			else
				fputc(c, f);
		}
	}
}

int verdict_write_junit(FILE *f, const struct expect_state *st, const struct verdict_end *end)
{
	bool run_failed = end->exit_status != 0 && end->exit_status != 7;
	size_t failures = 0;

	errno = 0;
	for (size_t i = 0; i < st->nr; i++)
		failures += !st->v[i].passed;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f,
		"<testsuites tests=\"%zu\" failures=\"%zu\" errors=\"%d\" time=\"%.3f\">\n"
		"  <testsuite name=\"hvtrace\" tests=\"%zu\" failures=\"%zu\" errors=\"%d\" "
		"skipped=\"0\" time=\"%.3f\">\n",
		st->nr + run_failed, failures, run_failed, end->elapsed, st->nr + run_failed, failures,
		run_failed, end->elapsed);
	for (size_t i = 0; i < st->nr; i++) {
		const struct expect *e = &st->v[i];

		fprintf(f, "    <testcase classname=\"hvtrace.expect\" name=\"%s ",
			expect_option(e->kind));
		xml_str(f, e->spec);
		fprintf(f, "\" time=\"0\"");
		if (e->passed) {
			fprintf(f, "/>\n");
			continue;
		}
		fprintf(f, ">\n      <failure type=\"%s\" message=\"", expect_option(e->kind) + 2);
		xml_str(f, e->reason);
		fprintf(f, "\">");
		xml_str(f, expect_option(e->kind));
		fputc(' ', f);
		xml_str(f, e->spec);
		fprintf(f, ": ");
		xml_str(f, e->reason);
		fprintf(f, "</failure>\n    </testcase>\n");
	}
	if (run_failed) {
		fprintf(f,
			"    <testcase classname=\"hvtrace\" name=\"run\" time=\"%.3f\">\n"
			"      <error type=\"exit-status\" message=\"exit status %d: ",
			end->elapsed, end->exit_status);
		xml_str(f, end->exit_reason);
		fprintf(f, "\"/>\n    </testcase>\n");
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
	return finish(f);
}
