#include "host/hosttrace/tsc_segs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tsc_segs_init(struct tsc_segs *s, unsigned nr_vcpus)
{
	memset(s, 0, sizeof(*s));
	if (!nr_vcpus || nr_vcpus > 1024)
		return -EINVAL;
	s->seg = calloc((size_t)nr_vcpus * TSC_SEGS_KEEP, sizeof(*s->seg));
	s->n = calloc(nr_vcpus, sizeof(*s->n));
	s->cursor = calloc(nr_vcpus, sizeof(*s->cursor));
	if (!s->seg || !s->n || !s->cursor) {
		tsc_segs_free(s);
		return -ENOMEM;
	}
	s->nr_vcpus = nr_vcpus;
	return 0;
}

void tsc_segs_free(struct tsc_segs *s)
{
	free(s->seg);
	free(s->n);
	free(s->cursor);
	memset(s, 0, sizeof(*s));
}

static struct tsc_seg *seg_at(struct tsc_segs *s, unsigned vcpu, uint64_t seq)
{
	return &s->seg[(size_t)vcpu * TSC_SEGS_KEEP + seq % TSC_SEGS_KEEP];
}

void tsc_segs_add(struct tsc_segs *s, unsigned vcpu, uint64_t host, uint64_t offset)
{
	struct tsc_seg *g;

	if (vcpu >= s->nr_vcpus) {
		s->bad_vcpu++;
		return;
	}
	/* in the host's order: a move that comes later than a newer one (read from another CPU's
	 * pages first) goes in its place, a few back at most */
	uint64_t i = s->n[vcpu], oldest = i >= TSC_SEGS_KEEP ? i - TSC_SEGS_KEEP + 1 : 0;

	for (unsigned k = 0; i > oldest && k < TSC_SEGS_REORDER; i--, k++) {
		struct tsc_seg *prev = seg_at(s, vcpu, i - 1);

		if (host >= prev->host)
			break;
		*seg_at(s, vcpu, i) = *prev;
	}
	g = seg_at(s, vcpu, i);
	g->host = host;
	g->offset = offset;
	s->n[vcpu]++;
	s->added++;
}

/* Whether segment @seq of @vcpu had begun, in guest time, when the guest read @guest. */
static bool begun(struct tsc_segs *s, unsigned vcpu, uint64_t seq, uint64_t guest)
{
	const struct tsc_seg *g = seg_at(s, vcpu, seq);

	return (int64_t)(guest - (g->host + g->offset)) >= 0;
}

bool tsc_segs_host(struct tsc_segs *s, unsigned vcpu, uint64_t guest, uint64_t *host)
{
	uint64_t n, oldest, i;

	if (vcpu >= s->nr_vcpus || !(n = s->n[vcpu]))
		return false;
	oldest = n > TSC_SEGS_KEEP ? n - TSC_SEGS_KEEP : 0;
	i = s->cursor[vcpu];
	if (i < oldest || i >= n)
		i = n - 1;
	/* back while the segment had not begun, then on while the next one had: each loop is
	 * bounded by the table, whatever order the starts are in */
	while (i > oldest && !begun(s, vcpu, i, guest))
		i--;
	if (i == oldest && !begun(s, vcpu, i, guest) && n > TSC_SEGS_KEEP)
		s->dropped++; /* older than the table: the oldest offset kept is the best left */
	while (i + 1 < n && begun(s, vcpu, i + 1, guest))
		i++;
	s->cursor[vcpu] = i;
	*host = guest - seg_at(s, vcpu, i)->offset;
	return true;
}
