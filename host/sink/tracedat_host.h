/* `report --exits`' view of the host: a host trace.dat written by `record --host` (or trace-cmd's
 * host-guest tracing), read with libtracecmd: the GUEST option's vCPU -> host thread map for the
 * guest file's trace id, and per vCPU when its thread was away from the guest (descheduled, or in
 * host mode between kvm_exit and kvm_entry) and each kvm_exit with its reason; on a host whose KVM
 * fires no kvm_exit (PVM), from each kvm_userspace_exit (the exit, by KVM_EXIT_ reason) to the
 * thread's next ioctl(KVM_RUN). Everything is
 * bounded (HOST_SIDE_MAX_EVENTS per vCPU). Main thread. */
#ifndef HVT_TRACEDAT_HOST_H
#define HVT_TRACEDAT_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_SIDE_MAX_VCPUS  64
#define HOST_SIDE_MAX_EVENTS (1u << 24)
#define HOST_SIDE_NAMES	     64 /* exit reasons named, the first ones seen */
#define HOST_SIDE_NAME_LEN   32
/* reasons below this are found through an index (VMX's go to 80, SVM's to 0x403); others by a scan */
#define HOST_SIDE_INDEXED    2048

struct hs_span {
	uint64_t from, to; /* host ns, [from, to) */
};

struct hs_exit {
	uint64_t ts;
	uint64_t rip;	 /* the guest's RIP at the exit (kvm_exit's guest_rip) */
	uint32_t reason; /* UINT32_MAX: unreadable */
	bool hw;	 /* a kvm_exit (else a kvm_userspace_exit, rip 0) */
};

struct hs_vcpu {
	int tid;
	struct hs_span *away; /* sorted, disjoint */
	size_t nr_away, cap_away;
	struct hs_exit *exits; /* sorted */
	size_t nr_exits, cap_exits;
	/* while reading */
	bool is_away, kvm_seen;
	bool hw_seen; /* kvm_exit / kvm_entry seen (not only kvm_userspace_exit and KVM_RUN) */
	uint64_t away_since;
};

struct host_side {
	char guest[64];
	unsigned nr_vcpus;
	struct hs_vcpu v[HOST_SIDE_MAX_VCPUS];
	unsigned long long events; /* host records read */
	bool kvm;		   /* kvm_exit events of the vCPU threads seen */
	bool user_exits; /* a vCPU with no kvm_exit, only kvm_userspace_exits: a host whose KVM
			  * fires no kvm_exit */
	/* exit reasons as the host's own kvm_exit format prints them (its __print_symbolic table:
	 * VMX's or SVM's, as the host is), learnt from the first exit of each reason */
	struct {
		uint32_t reason;
		char name[HOST_SIDE_NAME_LEN];
	} names[HOST_SIDE_NAMES];
	unsigned nr_names;
	uint8_t named[HOST_SIDE_INDEXED]; /* reason -> 1 + its index in names[], 0: not seen */
};
_Static_assert(HOST_SIDE_NAMES < 256, "host_side.named holds an index + 1 in a byte");

/* Reads @path for the guest whose trace id is @guest_id. 0, or -EINVAL with one line in @err (not
 * a trace.dat, no GUEST option for that guest, too many events). */
int host_side_read(struct host_side *h, const char *path, unsigned long long guest_id, char *err,
		   size_t errlen);

/* Nanoseconds of [from, to) that vCPU @cpu spent away from the guest, and how many kvm_exits of
 * each reason fell in it (@by_reason[r] += n for r < @nr_reasons; others counted in *@other).
 * Returns the number of exits. Pure. */
uint64_t host_side_away(const struct host_side *h, unsigned cpu, uint64_t from, uint64_t to,
			uint64_t *away_ns, uint64_t *by_reason, unsigned nr_reasons,
			uint64_t *other);

/* The kvm_exit that took vCPU @cpu out of its guest for the host-mode stretch that holds host time
 * @t (no kvm_entry of its thread between the two): true with its time and guest RIP, false when @t
 * is in guest mode, the vCPU has no such exit, or the stretch began otherwise (a kvm_userspace_exit
 * of a host whose KVM fires no kvm_exit). Pure. */
bool host_side_exit_of(const struct host_side *h, unsigned cpu, uint64_t t, uint64_t *exit_ts,
		       uint64_t *rip);

/* The name of exit reason @reason as the host file's kvm_exit format prints it, or NULL (no exit of
 * that reason read, or the format gives no name). Pure. */
const char *host_side_reason_name(const struct host_side *h, uint32_t reason);

/* Whether an exit of @reason is the first of its reason and there is room to name it. Pure. */
bool host_side_learns(const struct host_side *h, uint32_t reason);

/* The first exit of @reason, printed by the host file's kvm_exit format as @info (NULL: it could not
 * be printed): its name (host_side_reason_from_info), or none, kept for host_side_reason_name. A
 * reason already seen, or one past the first HOST_SIDE_NAMES, changes nothing. */
void host_side_learn(struct host_side *h, uint32_t reason, const char *info);

/* The reason's name in a kvm_exit's printed text @info ("vcpu 0 reason HLT rip 0x..."): the word
 * after "reason ", into @name. False when there is none or it is a number (the format's table has
 * no name for it). Pure. */
bool host_side_reason_from_info(const char *info, char *name, size_t len);

void host_side_free(struct host_side *h);

#endif
