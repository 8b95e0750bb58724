/* The example CI job of docs/ci/, run for real: docs/ci/boot-test.sh boots the Linux test guest
 * (make guest: Debian's cloud kernel and the test initramfs) under ./hvtrace (QEMU TCG) with
 * docs/ci/boot-test.session's expectations; its exit status is the verdict, its JUnit report is
 * valid against tests/common/junit.xsd and junitparser reads one passed case per expectation (and
 * the failure of an expectation added on its command line), its summary's counts are those of its
 * JSON Lines trace. The GitHub Actions workflow and the GitLab CI job parse as YAML and both run
 * the script and read its JUnit report (tests/common/ci_yaml.py). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/hv_run.h"
#include "tests/common/junit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT "/tmp/json-ci-example"
#define CASE "hvtrace|hvtrace.expect|"

static char kernel[512], initrd[512];

/* Runs docs/ci/boot-test.sh on the test guest with @extra after its "--" (or nothing); its stdout
 * and stderr, then " status=N". */
static char *boot_test(const char *extra)
{
	return hv_sh("rm -rf " OUT " && HVTRACE=%s OUT=" OUT " APPEND=hvt.yes_sec=1 "
		  "docs/ci/boot-test.sh %s %s %s%s 2>&1; echo \" status=$?\"",
		  hv_binary(), kernel, initrd, *extra ? "-- " : "", extra);
}

/* The calls of @func: in the summary, and the entry lines of the JSON Lines trace, which must be
 * the same. */
static long calls(const char *func)
{
	char *a = hv_sh("jq '.functions[] | select(.name==\"%s\") | .calls' " OUT "/summary.json", func);
	char *b = hv_sh("jq -s 'map(select(.type==\"entry\" and .func==\"%s\")) | length' " OUT
		     "/trace.jsonl",
		     func);
	long n = atol(a);

	assert_string_equal(a, b);
	free(a);
	free(b);
	return n;
}

/* A healthy boot: every expectation met, exit 0. */
static void test_boot_passes(void **state)
{
	char *out, want[512];
	long opens, reads;

	(void)state;
	out = boot_test("");
	opens = calls("do_sys_openat2");
	reads = calls("vfs_read");
	assert_true(opens >= 1 && reads >= 10);
	snprintf(want, sizeof(want),
		 "boot-test: ok (exit 0), 0 events lost, 0 of 4 expectations unmet\n status=0\n");
	assert_non_null(strstr(out, want));
	free(out);
	assert_junit(OUT "/junit.xml", CASE "--expect-call do_sys_openat2>=1|passed\n" CASE
		     "--expect-call vfs_read>=10|passed\n" CASE "--expect-no-call __warn|passed\n" CASE
		     "--expect-no-call oops_begin|passed\n");
	/* the guest's console: it booted and powered off */
	out = hv_sh("grep -c 'reboot: Power down' " OUT "/console.log");
	assert_string_equal(out, "1\n");
	free(out);
}

/* An expectation a boot cannot meet, added on the script's command line: exit 7, its failure in
 * the JUnit report with the count the trace holds. */
static void test_boot_fails(void **state)
{
	char *out, want[1024];
	long reads;

	(void)state;
	out = boot_test("--expect-call 'vfs_read<5'");
	reads = calls("vfs_read");
	assert_true(reads >= 5);
	assert_non_null(strstr(
	    out, "boot-test: expect-unmet (exit 7), 0 events lost, 1 of 5 expectations unmet\n"
		 " status=7\n"));
	free(out);
	snprintf(want, sizeof(want),
		 CASE "--expect-call do_sys_openat2>=1|passed\n" CASE
		      "--expect-call vfs_read>=10|passed\n" CASE "--expect-no-call __warn|passed\n" CASE
		      "--expect-no-call oops_begin|passed\n" CASE
		      "--expect-call vfs_read<5|failure|expect-call|the guest called vfs_read %ld "
		      "times\n",
		 reads);
	assert_junit(OUT "/junit.xml", want);
}

/* Bad use of the script: exit 2 and one line saying why, before anything runs. */
static void test_script_usage(void **state)
{
	char *out;

	(void)state;
	out = hv_sh("docs/ci/boot-test.sh 2>&1; echo \" status=$?\"");
	assert_string_equal(out, "usage: boot-test.sh KERNEL [INITRD] [-- EXTRA HVTRACE OPTIONS...]\n"
				 " status=2\n");
	free(out);
	out = hv_sh("docs/ci/boot-test.sh /nonexistent/bzImage 2>&1; echo \" status=$?\"");
	assert_string_equal(out, "boot-test.sh: /nonexistent/bzImage: cannot read it\n status=2\n");
	free(out);
}

/* Both CI files parse as YAML; each job runs the script on the kernel and reads its JUnit file. */
static void test_ci_yaml(void **state)
{
	char *out;

	(void)state;
	out = hv_sh("tests/common/ci_yaml.py docs/ci/github-actions.yml docs/ci/gitlab-ci.yml");
	assert_string_equal(out,
			    "github-actions.yml: job boot-test, OUT=hvtrace-results, runs "
			    "['hvtrace-src/docs/ci/boot-test.sh bzImage initramfs.cpio.gz'], junit "
			    "['hvtrace-results/junit.xml'], keeps ['hvtrace-results/']\n"
			    "gitlab-ci.yml: job boot-test, OUT=hvtrace-results, runs "
			    "['hvtrace-src/docs/ci/boot-test.sh bzImage initramfs.cpio.gz'], junit "
			    "['hvtrace-results/junit.xml'], keeps ['hvtrace-results/']\n");
	free(out);
	/* and a file that does not parse is caught */
	out = hv_command_output("printf 'jobs: [\\n' > " OUT ".yml && tests/common/ci_yaml.py " OUT
				".yml");
	assert_null(out);
	unlink(OUT ".yml");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ci_yaml),
	    cmocka_unit_test(test_script_usage),
	    cmocka_unit_test(test_boot_passes),
	    cmocka_unit_test(test_boot_fails),
	};
	const char *dir = getenv("LINUX_GUEST_DIR") ? getenv("LINUX_GUEST_DIR") : "build/guest";

	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", dir);
	snprintf(initrd, sizeof(initrd), "%s/initramfs.cpio.gz", dir);
	if (access(kernel, R_OK) || access(initrd, R_OK)) {
		fprintf(stderr, "test_ci_example: no Linux test guest in %s (make guest)\n", dir);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
