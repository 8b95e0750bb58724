/* A struct target for unit tests, implemented on guest memory in host buffers
 * (tests/common/fake_mem.h): one address space (GVA = GPA) and no vCPUs running. A test picks the
 * operations it wants in its own struct target_ops from the ones below, adding its own (stub_map,
 * ...) where it needs them. */
#ifndef HVT_TESTS_FAKE_TARGET_H
#define HVT_TESTS_FAKE_TARGET_H

#include "host/trace/target.h"
#include "tests/common/fake_mem.h"

struct fake_target {
	struct target t; /* first: the target the code under test gets is the fake_target */
	struct fake_mem mem;
	uint64_t fail_insert_at;   /* insert_bp at this address fails with -EIO; 0: none */
	unsigned inserts, removes; /* insert_bp / remove_bp calls */
};

/* Empty memory, no failure, counters zero; @ops and @nr_cpus for the target, named "fake". */
void fake_target_init(struct fake_target *f, const struct target_ops *ops, unsigned nr_cpus);
/* The fake_target a target_ops callback was handed. */
struct fake_target *fake_target_of(struct target *t);

/* Memory: 0, or -EFAULT outside the mapped regions. */
int fake_target_read_virt(struct target *t, unsigned cpu, uint64_t gva, void *buf, size_t len);
int fake_target_write_virt(struct target *t, unsigned cpu, uint64_t gva, const void *buf,
			   size_t len);
int fake_target_read_phys(struct target *t, uint64_t gpa, void *buf, size_t len);
int fake_target_write_phys(struct target *t, uint64_t gpa, const void *buf, size_t len);
/* GVA = GPA: 0 for an address inside a mapped region, else -EFAULT. */
int fake_target_translate(struct target *t, unsigned cpu, uint64_t gva, uint64_t *gpa);
/* kernel_gpa: the same identity mapping as fake_target_translate. */
int fake_target_kernel_gpa(struct target *t, uint64_t gva, uint64_t *gpa);
/* INT3 over the byte at @gpa if it holds @orig (counted in inserts; -EIO at fail_insert_at), and
 * @orig back if it holds INT3 (removes); -ESTALE (nothing written) when the byte is not the one
 * expected, -EFAULT outside the regions. */
int fake_target_insert_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig);
int fake_target_remove_bp(struct target *t, uint64_t gva, uint64_t gpa, uint8_t orig);
/* @buf over [@gpa, @gpa + @len) if it holds @expect: 0, -ESTALE (nothing written), -EFAULT
 * (outside the regions, or more than 16 bytes). */
int fake_target_write_text(struct target *t, uint64_t gpa, const void *expect, const void *buf,
			   size_t len);

/* A target whose vCPUs are always stopped for the test: pause succeeds, resume does nothing. */
int fake_target_pause(struct target *t);
void fake_target_resume(struct target *t);

#endif
