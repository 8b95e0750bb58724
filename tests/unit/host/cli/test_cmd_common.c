/* host/cli/cmd_common.c: the --probe decision with the INT3 check's verdict. The verdict is forced
 * through the HVTRACE_TEST_INT3 test hook ("guest-idt": INT3 does not exit on this host), set
 * before the first check of this process. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/cli/cmd_common.h"
#include "host/kvm/kvm_int3_probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int no_stub_map(struct target *t, uint64_t lo, uint64_t hi, uint64_t min, uint64_t want,
		       struct target_region *r, char *err, size_t errlen)
{
	(void)t, (void)lo, (void)hi, (void)min, (void)want, (void)r, (void)err, (void)errlen;
	return -ENOSYS; /* never called: only its presence is looked at */
}

/* cmd_check_int3 for @probe; what it printed on stderr into @printed. */
static int check(enum probe_kind probe, bool qemu, bool *no_trap, char *err, char *printed)
{
	struct session s = {.probe = probe};
	FILE *tmp = tmpfile();
	int saved = dup(2), ret;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	ret = cmd_check_int3(&s, qemu, no_trap, err, 512);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(printed, 1, 511, tmp);
	printed[n] = 0;
	fclose(tmp);
	return ret;
}

static void test_trap_refused(void **state)
{
	char err[512] = "", printed[512];
	bool no_trap = false;

	(void)state;
	assert_true(kvm_int3_check()->forced);
	for (int qemu = 0; qemu < 2; qemu++) {
		assert_int_equal(check(PROBE_TRAP, qemu, &no_trap, err, printed), -ENOTSUP);
		assert_true(no_trap);
		assert_string_equal(err,
				    "trap probes: INT3 in a guest does not exit on this host's "
				    "KVM (it goes to the guest's IDT); use --probe stub");
		assert_string_equal(printed, "");
	}
}

static void test_auto_says_stub(void **state)
{
	char err[512] = "", printed[512];
	bool no_trap = false;

	(void)state;
	assert_int_equal(check(PROBE_AUTO, true, &no_trap, err, printed), 0);
	assert_true(no_trap);
	assert_string_equal(err, "");
	assert_string_equal(printed,
			    "hvtrace: --probe auto: stub probes for every site: INT3 in a "
			    "guest does not exit on this host's KVM (it goes to the guest's "
			    "IDT)\n");
	/* --probe stub needs no word */
	no_trap = false;
	assert_int_equal(check(PROBE_STUB, false, &no_trap, err, printed), 0);
	assert_true(no_trap);
	assert_string_equal(printed, "");
}

/* Where the stub gets the CPU number: RDTSCP, %gs:offset or CPUID's APIC ID, any one of them; with
 * none, --probe stub is refused with the reason and --probe auto falls back to trap probes. */
static void test_probe_mode_cpu_number(void **state)
{
	struct target_ops ops = {.stub_map = no_stub_map};
	struct target t = {.ops = &ops};
	struct vmi_task_layout apic = {.cpu_apic_id = true}, aux = {.cpu_aux_mask = 0xfff},
			       gs = {.has_cpu_gs = true}, none = {0};
	const struct vmi_task_layout *ok[] = {&apic, &aux, &gs};
	struct session s = {.probe = PROBE_STUB};
	char err[512] = "";
	bool stub;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		stub = false;
		assert_int_equal(
		    cmd_probe_mode(&s, &t, ok[i], NULL, false, &stub, err, sizeof(err)), 0);
		assert_true(stub);
	}
	assert_int_equal(cmd_probe_mode(&s, &t, &none, NULL, false, &stub, err, sizeof(err)),
			 -ENOTSUP);
	assert_false(stub);
	assert_string_equal(err,
			    "--probe stub: the guest's CPU has no RDTSCP with IA32_TSC_AUX set, "
			    "its CPUID does not give each vCPU's index, and the guest does "
			    "not say where its CPU number is (hvtrace_cpu_gs)");
	s.probe = PROBE_AUTO;
	stub = true;
	assert_int_equal(cmd_probe_mode(&s, &t, &none, NULL, false, &stub, err, sizeof(err)), 0);
	assert_false(stub);
}

/* With no trap probes, auto cannot fall back to them where stubs cannot work. */
static void test_probe_mode_no_trap(void **state)
{
	struct target_ops ops = {.stub_map = no_stub_map}, none = {0};
	struct target t = {.ops = &ops};
	struct vmi_task_layout task = {.has_cpu_gs = true};
	struct session s = {.probe = PROBE_AUTO};
	char err[512] = "";
	bool stub = false;

	(void)state;
	assert_int_equal(cmd_probe_mode(&s, &t, &task, NULL, true, &stub, err, sizeof(err)), 0);
	assert_true(stub);
	/* without the check's no, auto falls back to trap probes */
	assert_int_equal(cmd_probe_mode(&s, &t, &task, "no room", false, &stub, err, sizeof(err)),
			 0);
	assert_false(stub);
	/* with it, that is refused */
	assert_int_equal(cmd_probe_mode(&s, &t, &task, "no room", true, &stub, err, sizeof(err)),
			 -ENOTSUP);
	assert_string_equal(err,
			    "trap probes: INT3 in a guest does not exit on this host's KVM, and "
			    "stub probes cannot work: no room");
	t.ops = &none;
	assert_int_equal(cmd_probe_mode(&s, &t, &task, NULL, true, &stub, err, sizeof(err)),
			 -ENOTSUP);
	assert_string_equal(err,
			    "trap probes: INT3 in a guest does not exit on this host's KVM, and "
			    "stub probes cannot work: this target cannot place the stub");
}

/* On a host where the check could make no VM (forced: "no-check"), the embedded VMM refuses every
 * probe kind with one line about KVM, not advice to use stub probes; QEMU (its own KVM question)
 * keeps the probe decision. In a child: the verdict is cached per process. */
static void test_no_vm_refused(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		enum probe_kind kinds[3] = {PROBE_TRAP, PROBE_AUTO, PROBE_STUB};
		char err[512], printed[512];
		bool no_trap;

		setenv("HVTRACE_TEST_INT3", "no-check", 1);
		for (int i = 0; i < 3; i++) {
			err[0] = 0;
			if (check(kinds[i], false, &no_trap, err, printed) != -ENODEV ||
			    strncmp(err, "the embedded VMM cannot make a VM (", 35) ||
			    !strstr(err, "; a Linux guest runs without KVM under QEMU: run --qemu") ||
			    strstr(err, "--probe stub") || printed[0])
				_exit(1);
		}
		err[0] = 0;
		if (check(PROBE_AUTO, true, &no_trap, err, printed) != 0 || err[0] || !no_trap)
			_exit(2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_vm_refused), /* first: before this process caches a check */
	    cmocka_unit_test(test_trap_refused),
	    cmocka_unit_test(test_auto_says_stub),
	    cmocka_unit_test(test_probe_mode_no_trap),
	    cmocka_unit_test(test_probe_mode_cpu_number),
	};

	setenv("HVTRACE_TEST_INT3", "guest-idt", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
