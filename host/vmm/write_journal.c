#include "host/vmm/write_journal.h"
#include "host/vmm/ptrace_inject.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

/* The mapping: this header, then entries, each {addr, len, taken} + old + new (padded to 8) + its
 * own size (a u64), so that they can be walked newest first; a taken range's entry holds old only.
 */
struct head {
	_Atomic uint64_t used;	  /* bytes of entries, published after each one is whole */
	_Atomic uint64_t entries; /* how many */
};

struct entry {
	uint64_t addr;
	uint32_t len;
	uint32_t taken; /* 1: memory taken (write_journal_note_taken), its old bytes alone */
};

static size_t entry_size(size_t len, bool taken)
{
	return sizeof(struct entry) + (((taken ? 1 : 2) * len + 7) & ~(size_t)7) + sizeof(uint64_t);
}

int write_journal_open(struct write_journal *j, size_t cap)
{
	j->map = NULL;
	j->cap = 0;
	if (cap < sizeof(struct head) + entry_size(1, false))
		return -EINVAL;
	j->map = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0);
	if (j->map == MAP_FAILED) {
		j->map = NULL;
		return -errno;
	}
	j->cap = cap;
	return 0;
}

void write_journal_close(struct write_journal *j)
{
	if (j->map)
		munmap(j->map, j->cap);
	j->map = NULL;
	j->cap = 0;
}

/* Appends one entry (@new NULL: a taken range's). */
static int note(struct write_journal *j, uint64_t addr, const void *old, const void *new,
		size_t len)
{
	struct head *h = (struct head *)j->map;
	uint8_t *p;
	uint64_t used, size = entry_size(len, !new);
	struct entry e = {addr, (uint32_t)len, !new};

	if (!h || !len || len > WRITE_JOURNAL_WRITE_MAX)
		return -EINVAL;
	used = atomic_load(&h->used);
	if (size > j->cap - sizeof(*h) - used)
		return -ENOSPC;
	p = j->map + sizeof(*h) + used;
	memcpy(p, &e, sizeof(e));
	memcpy(p + sizeof(e), old, len);
	if (new)
		memcpy(p + sizeof(e) + len, new, len);
	memcpy(p + size - sizeof(uint64_t), &size, sizeof(uint64_t));
	atomic_store(&h->entries, atomic_load(&h->entries) + 1);
	atomic_store(&h->used, used + size); /* the entry is whole: publish it */
	return 0;
}

int write_journal_note(struct write_journal *j, uint64_t addr, const void *old, const void *new,
		       size_t len)
{
	return new ? note(j, addr, old, new, len) : -EINVAL;
}

int write_journal_note_taken(struct write_journal *j, uint64_t addr, const void *old, size_t len)
{
	return note(j, addr, old, NULL, len);
}

size_t write_journal_count(const struct write_journal *j)
{
	const struct head *h = (const struct head *)j->map;

	return h ? (size_t)atomic_load(&h->entries) : 0;
}

void write_journal_clear(struct write_journal *j)
{
	struct head *h = (struct head *)j->map;

	if (!h)
		return;
	atomic_store(&h->used, 0);
	atomic_store(&h->entries, 0);
}

size_t write_journal_undo(const struct write_journal *j, write_journal_read_fn read,
			  write_journal_write_fn write, void *ctx, size_t *left, char *why,
			  size_t whylen)
{
	struct head *h = (struct head *)j->map;
	uint8_t now[WRITE_JOURNAL_WRITE_MAX];
	size_t done = 0, kept = 0;
	uint64_t end;

	if (left)
		*left = 0;
	if (why && whylen)
		*why = 0;
	if (!h)
		return 0;
	end = atomic_load(&h->used);
	if (end > j->cap - sizeof(*h))
		return 0; /* (the mapping is hvtrace's own: never so) */
	while (end > 0) {
		const uint8_t *base = j->map + sizeof(*h);
		uint64_t size;
		struct entry e;

		memcpy(&size, base + end - sizeof(uint64_t), sizeof(size));
		if (size > end || size < entry_size(1, true))
			break;
		memcpy(&e, base + end - size, sizeof(e));
		if (!e.len || e.len > WRITE_JOURNAL_WRITE_MAX || e.taken > 1 ||
		    entry_size(e.len, e.taken) != size)
			break;
		const uint8_t *old = base + end - size + sizeof(e), *new = old + e.len;

		if (e.taken) { /* the guest wrote there too (the stub's rings): put back as it was
				*/
			if (write(ctx, e.addr, old, e.len) == 0)
				done++;
			else if (!kept++ && why)
				msg_fmt(why, whylen,
					"0x%llx (%llu bytes) unwritable (memory hvtrace took)",
					(unsigned long long)e.addr, (unsigned long long)e.len);
			end -= size;
			continue;
		}
		int rd = read(ctx, e.addr, now, e.len);

		if (rd == 0 && !memcmp(now, new, e.len) &&
		    (!memcmp(old, new, e.len) || write(ctx, e.addr, old, e.len) == 0)) {
			done++;
		} else if (rd == 0 && !memcmp(now, old, e.len)) {
			/* logged, never made (hvtrace died between the two), or made and put
			 * back already: nothing to undo */
		} else {
			if (!kept++ && why) /* the newest one left, said */
				msg_fmt(
				    why, whylen,
				    "0x%llx (%llu bytes) %s%02x%s, hvtrace wrote %02x, was %02x",
				    (unsigned long long)e.addr, (unsigned long long)e.len,
				    rd ? "unreadable" : "holds ", rd ? 0 : now[0], rd ? "" : "..",
				    new[0], old[0]);
		}
		end -= size;
	}
	if (left)
		*left = kept;
	return done;
}

int write_journal_takeover(const struct write_journal *j, struct ptrace_inject *pi, pid_t pid,
			   write_journal_read_fn read, write_journal_write_fn write, void *ctx,
			   size_t *undone, size_t *left, char *err, size_t errlen)
{
	int ret = ptrace_inject_attach(pi, pid, 0, err, errlen);

	*undone = *left = 0;
	if (ret < 0)
		return ret;
	*undone = write_journal_undo(j, read, write, ctx, left, err, errlen);
	ptrace_inject_detach(pi);
	return 0;
}
