/* A process's /proc/PID/maps, read line by line within bounds (the process is a peer: its mapping
 * names are its own choice, and it may change its mappings while they are read), and its comm as
 * hvtrace's lines name it. Used by the discovery of a KVM VMM (kvm_proc) and by syscall injection
 * (ptrace_inject). */
#ifndef HVT_PROC_MAPS_H
#define HVT_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_MAPS_NAME_MAX  256	   /* bytes of a mapping's name kept (longer: cut, `cut` set) */
#define PROC_MAPS_LINE_MAX  8192   /* a longer line is skipped whole */
#define PROC_MAPS_MAX_LINES 200000 /* lines read at most (vm.max_map_count is 65530 by default) */

/* One line of /proc/PID/maps: [lo, hi), permissions, and the name (path, [stack], anon_inode:...).
 */
struct proc_maps_entry {
	uint64_t lo, hi, offset;
	bool r, w, x, shared;
	bool cut; /* the name was longer than PROC_MAPS_NAME_MAX - 1 bytes */
	char name[PROC_MAPS_NAME_MAX];
};

/* Parses one line (@len bytes, no NUL needed, without its newline) into @e: 0, or -EINVAL when it
 * is not "LO-HI PERMS OFFSET DEV INODE [NAME]" with LO < HI. Pure; any thread. */
int proc_maps_parse_line(const char *line, size_t len, struct proc_maps_entry *e);

/* Calls @each for every well-formed line of /proc/@pid/maps (at most PROC_MAPS_MAX_LINES) until it
 * returns non-zero, which is then returned. 0 at the end, or a negative errno when the file cannot
 * be opened or read (-ENOENT: no such process; -EACCES: not allowed). Reads through a buffer on
 * its stack; allocates nothing. Any thread. */
int proc_maps_each(pid_t pid, int (*each)(void *ctx, const struct proc_maps_entry *e), void *ctx);

/* /proc/@pid/comm (or /proc/@pid/task/@tid/comm when @tid > 0) escaped by peer_text into @out
 * (@outlen >= 16); "?" when it cannot be read. Returns @out. Any thread. */
const char *proc_comm(pid_t pid, pid_t tid, char *out, size_t outlen);

#endif
