#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/kvm/kvm_common.h"
#include "host/kvm/kvm_int3_probe.h"
#include "host/kvm/step_slots.h"
#include "host/kvm/target_kvm.h"
#include "vmi/vmi_dwarf.h"
#include "host/session/detour_plan.h"
#include "host/session/entry_sites.h"
#include "host/session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

const char *hv_guest(const char *variant)
{
	static char buf[512];
	const char *g = getenv("GUEST");

	if (!g)
		g = "build/guest/test-guest.elf";
	if (!variant)
		return g;
	snprintf(buf, sizeof(buf), "%.*s-%s.elf", (int)(strlen(g) - 4), g, variant);
	return buf;
}

long guest_count(const struct hv_result *r, const char *func, unsigned cpu)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "hvt-guest: count %s cpu %u = ", func, cpu);
	p = strstr(r->console, key);
	return p ? atol(p + strlen(key)) : 0;
}

long guest_count_all(const struct hv_result *r, const char *func, unsigned nr_cpus)
{
	long n = 0;

	for (unsigned c = 0; c < nr_cpus; c++)
		n += guest_count(r, func, c);
	return n;
}

bool kvm_offers_rdtscp(void)
{
	struct {
		struct kvm_cpuid2 h;
		struct kvm_cpuid_entry2 e[128];
	} c = {.h.nent = 128};
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	bool has = false;

	if (fd < 0 || ioctl(fd, KVM_GET_SUPPORTED_CPUID, &c) < 0)
		fail_msg("KVM_GET_SUPPORTED_CPUID");
	for (unsigned i = 0; i < c.h.nent; i++)
		if (c.e[i].function == 0x80000001)
			has = c.e[i].edx >> 27 & 1;
	close(fd);
	return has;
}

void assert_ran(const struct hv_result *r)
{
	if (r->status != 0 || !strstr(r->console, "hvt-guest: ok\n"))
		fail_msg("status %d, stderr: %s", r->status, r->err);
}

void kvm_require(void)
{
	int fd = open("/dev/kvm", O_RDWR);

	if (fd < 0)
		hv_skip_binary("KVM integration tests: /dev/kvm: %s", strerror(errno));
	close(fd);
}

void kvm_require_test(const char *what)
{
	int fd = open("/dev/kvm", O_RDWR);

	if (fd < 0) {
		printf("SKIPPED: %s: runs the guest: /dev/kvm: %s\n", what, strerror(errno));
		skip();
	}
	close(fd);
}

bool needs_int3_exits(const char *what)
{
	const struct kvm_int3_check *c = kvm_int3_check();
	char why[256];

	if (kvm_int3_exits(c->verdict, false))
		return true;
	printf("SKIPPED: %s: needs INT3 exits (trap probes): INT3 in a guest does not exit on this "
	       "host's KVM (%s)\n",
	       what, kvm_int3_why(c, false, why, sizeof(why)));
	return false;
}

const char *test_probe(void)
{
	const char *env = getenv("HVTRACE_TEST_PROBE");

	return env && *env ? env : "trap";
}

void kvm_fixture_boot(struct kvm_fixture *f, const char *guest, bool returns, bool stub)
{
	char err[256];
	struct vm_config cfg = {.smp = 2, .mem_mb = 64};
	/* a guest without fentry sites: the functions the -pg build instruments (workloads.c,
	 * tailcall.c), not the runtime's (every call of count_call and lock doubles the event rate:
	 * the in-flight detach lost records to a full ring under CI's load) */
	static char *workloads[] = {"workload_run", "fib",     "tree_*", "task_body", "task_step",
				    "task_leaf",    "tail_*", "nl_*",   "deep",	     "ev_target"};
	struct session s = {.filter = workloads, .nr_filter = sizeof(workloads) / sizeof(*workloads)};

	memset(f, 0, sizeof(*f));
	assert_int_equal(guest_image_open(&f->g, guest, err, sizeof(err)), 0);
	if (f->g.no_fentry) {
		assert_true(entry_sites_add(f->g.arch, &s, &f->g.sites, &f->g.elf.funcs,
					    guest_image_read, &f->g, NULL, 0, true, err,
					    sizeof(err)) > 0);
		assert_true(step_slots_check(&s, &f->g.sites, &f->g.elf.funcs, guest_image_read,
					     &f->g, NULL, err, sizeof(err)) >= 0);
		cfg.step_slots = step_slots_count(&f->g.sites);
	}
	f->devnull = fopen("/dev/null", "w");
	cfg.console = f->devnull;
	assert_int_equal(vm_create(&f->vm, &cfg, err, sizeof(err)), 0);
	assert_int_equal(vm_load_elf(&f->vm, &f->g.elf, err, sizeof(err)), 0);
	assert_int_equal(vm_write_step_slots(&f->vm, &f->g.sites, err, sizeof(err)), 0);
	f->sel = calloc(f->g.sites.nr, sizeof(*f->sel));
	f->pristine = calloc(f->g.sites.nr, sizeof(*f->pristine));
	for (size_t i = 0; i < f->g.sites.nr; i++) {
		f->sel[i] = &f->g.sites.v[i];
		memcpy(f->pristine[i], vm_gpa_ptr(&f->vm, f->sel[i]->addr, X86_NOP5_LEN), X86_NOP5_LEN);
	}
	target_kvm_init(&f->tgt, &f->vm);
	const struct vmi_symtab *fs = &f->g.elf.funcs;
	struct tracer_opts opts = {
		.returns = returns, .hook_all = returns, .ring_records = 1 << 16, .stub = stub,
		/* as pipeline_build: where return addresses may point */
		.text_lo = fs->syms[0].addr,
		.text_hi = fs->syms[fs->nr - 1].addr + fs->syms[fs->nr - 1].size};

	assert_int_equal(tracer_new(&f->tr, &f->tgt, f->sel, f->g.sites.nr, &f->g.task, &opts), 0);
	/* as pipeline_build: returns hooked only for the C functions of the guest's DWARF */
	for (size_t i = 0; f->g.no_fentry && returns && i < probe_count(tracer_probes(f->tr));
	     i++) {
		const struct probe *p = probe_at(tracer_probes(f->tr), i);

		if (!vmi_dwarf_is_c_function(&f->g.c_funcs, p->func->addr))
			assert_int_equal(tracer_set_no_return(f->tr, p->id), 0);
	}
	if (f->g.no_fentry && stub)
		assert_true(detour_plan(f->tr, &s, &f->g.elf.funcs, guest_image_read, &f->g, true,
					NULL) > 0);
}

void kvm_fixture_free(struct kvm_fixture *f)
{
	tracer_free(f->tr);
	vm_destroy(&f->vm);
	free(f->sel);
	free(f->pristine);
	fclose(f->devnull);
	guest_image_close(&f->g);
}

bool kvm_sites_pristine(struct kvm_fixture *f)
{
	for (size_t i = 0; i < f->g.sites.nr; i++)
		if (memcmp(vm_gpa_ptr(&f->vm, f->sel[i]->addr, X86_NOP5_LEN), f->pristine[i],
			   X86_NOP5_LEN))
			return false;
	return true;
}
