/* An undo log of the writes hvtrace makes into a VMM's guest while it holds the VMM (issue 41: the
 * ptrace patch hold), kept in memory shared with the guardian (guardian.h), which forks before the
 * hold: if hvtrace dies mid-hold (SIGKILL), the guardian puts back every byte the log names that
 * still holds what hvtrace wrote, newest first. Each write is logged (its old and new bytes)
 * before it is made, so a write the log lacks was never made. */
#ifndef HVT_WRITE_JOURNAL_H
#define HVT_WRITE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WRITE_JOURNAL_WRITE_MAX 4096 /* bytes of one logged write at most (a page table) */

struct write_journal {
	uint8_t *map; /* shared anonymous mapping: a header, then the entries; NULL: none */
	size_t cap;   /* its size */
};

/* Maps a journal of @cap bytes (MAP_SHARED: a process forked afterwards sees every later entry).
 * 0 or -errno. Caller's thread. */
int write_journal_open(struct write_journal *j, size_t cap);

/* Unmaps it (in this process only). Idempotent. */
void write_journal_close(struct write_journal *j);

/* Logs a write of @len (1..WRITE_JOURNAL_WRITE_MAX) bytes at @addr: @old as they are, @new as they
 * will be. Call before making the write. 0, or -ENOSPC (the journal is full: do not make the
 * write) or -EINVAL (@len out of range, no journal). The one thread that writes. */
int write_journal_note(struct write_journal *j, uint64_t addr, const void *old, const void *new,
		       size_t len);

/* Logs that guest memory at @addr (@len bytes, 1..WRITE_JOURNAL_WRITE_MAX) is taken for hvtrace's
 * own (the stub's pages): @old as it is, before hvtrace first writes there. The guest writes there
 * too once it runs (the stub's rings), so the undo puts @old back whatever it holds then, after
 * every newer entry. Call before the first write there; those writes need no entry of their own. 0,
 * -ENOSPC or -EINVAL, as write_journal_note. */
int write_journal_note_taken(struct write_journal *j, uint64_t addr, const void *old, size_t len);

/* How many writes are logged. */
size_t write_journal_count(const struct write_journal *j);

/* Forgets every entry (the writes are accounted for another way). */
void write_journal_clear(struct write_journal *j);

typedef int (*write_journal_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
typedef int (*write_journal_write_fn)(void *ctx, uint64_t addr, const void *buf, size_t len);

/* Undoes the logged writes, newest first: where @read finds the new bytes, @write puts the old
 * ones back; where it finds the old ones (the write was logged and never made) nothing is to be
 * done; elsewhere (the bytes changed since, or unreadable) nothing is written. Taken memory gets
 * its old bytes back unconditionally. Returns how many were undone (taken ranges put back
 * included); *@left (if not NULL) how many were changed since or unreadable, the newest of those
 * described in @why (if not NULL; "" when none). Any process that shares the mapping (the
 * guardian). */
size_t write_journal_undo(const struct write_journal *j, write_journal_read_fn read,
			  write_journal_write_fn write, void *ctx, size_t *left, char *why,
			  size_t whylen);

struct ptrace_inject;

/* The guardian's takeover after the writer died mid-hold: every thread of @pid seized and stopped
 * again through @pi (no call injected), write_journal_undo through @read/@write, the threads let
 * go. 0 with *@undone and *@left (@err: the newest write left, as write_journal_undo's @why), or
 * the attach's negative errno with one line in @err (nothing written). Main thread of the guardian.
 */
int write_journal_takeover(const struct write_journal *j, struct ptrace_inject *pi, pid_t pid,
			   write_journal_read_fn read, write_journal_write_fn write, void *ctx,
			   size_t *undone, size_t *left, char *err, size_t errlen);

#endif
