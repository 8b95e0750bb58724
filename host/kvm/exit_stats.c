#include "host/kvm/exit_stats.h"
#include "host/kvm/vcpu_exit.h"

#include <inttypes.h>
#include <string.h>

#define XS_WRITE (1ull << 63)

static void count(struct xs_slot *t, unsigned *nr, uint64_t *other, uint64_t key)
{
	for (unsigned i = 0; i < *nr; i++)
		if (t[i].key == key) {
			t[i].n++;
			return;
		}
	if (*nr < XS_SLOTS) {
		t[*nr].key = key;
		t[(*nr)++].n = 1;
		return;
	}
	(*other)++;
}

void exit_stats_add(struct exit_stats *xs, const struct kvm_run *run)
{
	uint32_t r = run->exit_reason;

	xs->reason[r < XS_REASONS ? r : XS_REASONS]++;
	if (r == KVM_EXIT_IO)
		count(xs->io, &xs->nr_io, &xs->io_other,
		      run->io.port | (run->io.direction == KVM_EXIT_IO_OUT ? XS_WRITE : 0));
	else if (r == KVM_EXIT_MMIO)
		count(xs->mmio, &xs->nr_mmio, &xs->mmio_other,
		      run->mmio.phys_addr | (run->mmio.is_write ? XS_WRITE : 0));
}

/* @t's entries as " @rd|@wr KEY N", most frequent first (a copy is sorted: at most XS_SLOTS). */
static void print_slots(const struct xs_slot *t, unsigned nr, uint64_t other, const char *what,
			const char *rd, const char *wr, unsigned cpu, FILE *f)
{
	struct xs_slot s[XS_SLOTS];

	if (!nr)
		return;
	memcpy(s, t, nr * sizeof(*s));
	for (unsigned i = 1; i < nr; i++)
		for (unsigned j = i; j > 0 && s[j].n > s[j - 1].n; j--) {
			struct xs_slot x = s[j];

			s[j] = s[j - 1];
			s[j - 1] = x;
		}
	fprintf(f, "hvtrace: stats: cpu%u %s", cpu, what);
	for (unsigned i = 0; i < nr; i++)
		fprintf(f, " %s 0x%" PRIx64 " %" PRIu64, s[i].key & XS_WRITE ? wr : rd,
			(uint64_t)(s[i].key & ~XS_WRITE), s[i].n);
	if (other)
		fprintf(f, " other %" PRIu64, other);
	fputc('\n', f);
}

void exit_stats_print(const struct exit_stats *xs, unsigned cpu, FILE *f)
{
	fprintf(f, "hvtrace: stats: cpu%u exits", cpu);
	for (unsigned r = 0; r <= XS_REASONS; r++)
		if (xs->reason[r])
			fprintf(f, " %s %" PRIu64,
				r < XS_REASONS ? vcpu_exit_name(r) + strlen("KVM_EXIT_") : "other",
				xs->reason[r]);
	fprintf(f, " kicks %" PRIu64 "\n", xs->kicks);
	print_slots(xs->io, xs->nr_io, xs->io_other, "io", "in", "out", cpu, f);
	print_slots(xs->mmio, xs->nr_mmio, xs->mmio_other, "mmio", "read", "write", cpu, f);
}
