/* record --host pairs as trace-cmd shows them (issue 26's tests): the GUEST option's vCPU threads,
 * and a walk of `trace-cmd report -R -t -i HOST -i GUEST` that rebuilds what report --exits prints,
 * from trace-cmd's view, independently of hvtrace's reader. */
#ifndef HVT_TESTS_HOST_PAIR_H
#define HVT_TESTS_HOST_PAIR_H

#include <stddef.h>

#define HV_PAIR_FUNCS 32

/* The GUEST option's vCPU -> host thread map in `trace-cmd dump --options` output @opt: vCPU i's
 * thread in @tids[i] (at most @max, vCPUs in order, else the test fails). Returns how many. */
unsigned hv_guest_threads(const char *opt, int *tids, unsigned max);

struct hv_pair_fn {
	char name[64];
	long calls, exits;
	unsigned long long total, away; /* ns */
};

struct hv_pair {
	long guest_events, exits_total;
	long outside;	 /* guest events of a vCPU whose thread was not in guest mode (kvm) */
	double worst_us; /* ... the farthest after that thread's kvm_exit */
	struct hv_pair_fn fn[HV_PAIR_FUNCS];
	size_t nfn;
};

/* Walks @raw, `trace-cmd report -R -t -i HOST -i GUEST` output (host lines begin with
 * @host_label, "NAME:"), in time order. A vCPU thread (@tids[v]) is out of guest mode from its
 * switch out or its kvm_exit until it shows it runs guest code again: its kvm_entry once it has
 * kvm events, else its switch in or any event it is the task of; a thread with no kvm_exit (PVM)
 * is out from its kvm_userspace_exit (then an exit) to its ioctl(KVM_RUN). Each guest funcgraph_exit is a
 * call [ts - (rettime - calltime), ts] of its function: counted with its total, the time its vCPU's
 * thread was out of guest mode in it and the kvm_exits of that thread in it. */
void hv_pair_walk(const char *raw, const char *host_label, const int *tids, unsigned nv,
		  struct hv_pair *w);

/* report --exits output @rep has, for each function of @w, the calls, total, guest and host time
 * (us with 3 decimals) and exits @w has; fails the test naming the first that differs. */
void hv_pair_check_exits(const char *rep, const struct hv_pair *w);

#endif
