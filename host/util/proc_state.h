/* The scheduler state of a host process or thread, as /proc shows it: the one reader of
 * /proc/PID/stat and /proc/PID/task/TID/stat that the backends use to tell a process that exited (a
 * zombie, or gone) from one that refused them. */
#ifndef HVT_PROC_STATE_H
#define HVT_PROC_STATE_H

#include <sys/types.h>

/* The state letter ('R', 'S', 'D', 'T', 't', 'Z', 'X', ...) of process @pid (@tid <= 0) or of its
 * thread @tid, into *@state: the character after the last ')' of /proc/PID[/task/TID]/stat and
 * its space (the comm before it may hold any byte, ')' and spaces included). 0, or -errno of the
 * open (-ENOENT: no such process or thread; -EACCES, ...), -ENODATA (nothing read: it went while
 * being read), -EBADMSG (no state after the last ')'). Any thread. */
int proc_state(pid_t pid, pid_t tid, char *state);

/* The kernel's task flags (PF_*, /proc's ninth stat field) of process @pid (@tid <= 0) or of its
 * thread @tid, into *@flags. 0, or proc_state's errors. Any thread. */
int proc_flags(pid_t pid, pid_t tid, unsigned long *flags);

/* A task of a process that is the kernel's, not the program's: a kernel thread (PF_KTHREAD), an
 * io_uring worker (PF_IO_WORKER) or a user worker (PF_USER_WORKER: vhost, and KVM's NX huge page
 * recovery thread since Linux 6.13, cloned from a vCPU thread in its KVM_RUN: its /proc syscall
 * file shows that ioctl). */
#define PROC_FLAGS_KERNEL_WORKER(f) (((f) & (0x00200000ul | 0x00000010ul | 0x00004000ul)) != 0)

/* Whether @state (proc_state's) is that of a task that exited: a zombie ('Z') or dead ('X'). */
#define PROC_STATE_EXITED(state) ((state) == 'Z' || (state) == 'X')

#endif
