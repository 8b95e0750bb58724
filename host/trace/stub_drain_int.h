/* What stub_drain.c (the drain thread) and stub_drain_attach.c (attach, stop, detach) share: the
 * drain's constants, its task cache, and the two functions the attach side calls. Private to
 * those two files. */
#ifndef HVT_STUB_DRAIN_INT_H
#define HVT_STUB_DRAIN_INT_H

#include "vmi/vmi_task.h"

#include <stdint.h>

struct stub_drain;

#define CLOCK_WARMUP_NAP_NS 20000ull	  /* learning the guest's clock: naps at most this, */
#define CLOCK_WARMUP_NS	    500000000ull /* until the first record and for this long after it */
#define DRAIN_BATCH	    1024
#define DRAIN_IDLE_US	    200	       /* the final drain, waiting for the writer */
#define DRAIN_SLEEP_MIN_NS  STUB_DRAIN_SLEEP_MIN_NS /* the drain sleeps after every pass: at least
						     * this, */
#define DRAIN_SLEEP_IDLE_NS STUB_DRAIN_SLEEP_MAX_NS /* at most this, also while nothing comes
						     * (a TCG vCPU fills a 65536-record ring in
						     * ~35 ms: a wake-up 15 times late loses
						     * nothing), */
#define DRAIN_SLEEP_COLD_NS 1000000ull	/* or this before the first record, */
#define DRAIN_HOLD_NS	    200000ull	/* while the vCPUs are held: the writer makes room */
#define DRAIN_FILL_DIV                                                                             \
	4 /* and at most what fills 1/4 of a ring at the peak rate:                                \
	   * a wake-up that comes late by 3 times its sleep loses                                  \
	   * nothing */
/* Backpressure in the guest: a stub that finds its ring full waits up to this long for the drain
 * (measured: a drain at nice -10 on a busy 2-CPU host woke up to ~150 ms late), then gives up on
 * waiting until the drain comes again. */
#define DRAIN_GUEST_WAIT_MS  250ull
#define DRAIN_TSC_KHZ_GUESS  3000000ull /* a TSC rate when none is known */
#define DRAIN_NICE	    -10
#define DRAIN_SLICE_NS	    100000ull /* EEVDF slice asked for without real-time priority */

/* sched_setattr(2)'s argument (linux/sched/types.h clashes with <sched.h>). */
struct drain_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};
#define HORIZON_SLACK_NS  2000000ull /* a record is committed within this of its timestamp */
#define FINAL_WAIT_PASSES 25000	     /* 5 s without progress at detach: give up on the rest */
#define TASK_CACHE	  4096 /* tasks named at once (a hash of pointer and identity) */
#define TASK_CACHE_NS	  50000000ull
#define LEAVE_TRIES	  2000
#define LEAVE_SCANS	  5 /* guest RAM scans for contexts inside bytes a detour replaces */
#define LEAVE_RUN_US	  20 /* each short run lets a vCPU finish the stub routine it is in */
#define LEAVE_TASK_RUN_US 20000 /* a task preempted inside the stub waits for its CPU */
#define LEAVE_TASK_SCANS  25	/* so many times, a walk of every task's kernel stack each */
#define LEAVE_MS	  3000 /* and all of them together at most (QEMU: each run is a gdbstub round trip) */
#define LEAVE_HOOKED_MS	  10000 /* hooked returns in a register (arm64) coming back, at most */

/* Tasks by task struct pointer and the identity the stub recorded (R_TASK_ID), as the stub announced
 * them (STUB_REC_TASK: pid and comm read in the guest when that task started running on a CPU, or
 * changed) or else as read from guest memory: a task struct reused by a new task, or a task renamed
 * by exec, has a new identity, so a record is named as its task was when the event happened, however
 * late the drain reads it. Records without an identity (0: a guest layout without comm) fall back
 * to the pointer alone, those entries emptied every TASK_CACHE_NS. */
struct task_cache {
	uint64_t ptr[TASK_CACHE];
	uint32_t id[TASK_CACHE];
	struct vmi_task task[TASK_CACHE];
	uint64_t filled_at;
};

/* The drain thread (@arg: the struct stub_drain): drains until stub_drain_stop, then the rest. */
void *stub_drain_thread(void *arg);

/* Notes vCPU @c's guest-reported lost count as it stands now: a loss mark for what is new. */
void stub_drain_note_guest_lost(struct stub_drain *d, unsigned c);

#endif
