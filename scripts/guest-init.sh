#!/bin/sh
# /init of the Linux test guest: a small, known workload, then power off.
# Kernel command line knobs: hvt.wait=SEC (sleep first, to give a tracer time to attach),
# hvt.rounds=N (workload rounds, default 3), hvt.yes=N (copies of `yes > /dev/null`, default 4),
# hvt.yes_sec=SEC (how long they run, default 2), hvt.bm=N (after the workload start line and
# hvt.bm_wait=SEC, read the status of binfmt_misc, a module loaded at boot, N times: N calls of its
# bm_status_read), hvt.tmpfs=N (then read a file on a tmpfs N times, each one read(2) by dd: N calls of
# shmem_file_read_iter, through vfs_read's f_op->read_iter), hvt.end=reboot (reset at the end, where
# the guest would power off).
# make bench: hvt.bench=N runs N rounds of the file workload alone between "bench start UPTIME" and
# "bench end UPTIME" lines (hvt.bench_work=syscalls: of 2000 one-byte reads and writes by dd instead, syscall-dense), then
# powers off (hvt.nfuncs=1 and hvt.end below); hvt.ftrace=GLOB[,GLOB...] (or "all") turns the guest's own function tracer on
# (tracefs) for those rounds and prints how many events it recorded (hvt.ftrace_tracer=function_graph:
# that tracer instead).
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null

arg() { # name default
	v=$(tr ' ' '\n' < /proc/cmdline | sed -n "s/^hvt\.$1=//p" | tail -1)
	echo "${v:-$2}"
}
wait_sec=$(arg wait 0)
rounds=$(arg rounds 3)
yes_n=$(arg yes 4)
yes_sec=$(arg yes_sec 2)

files() {
	cat /etc/motd > /dev/null
	cat /proc/version > /dev/null
	ls / /proc/self > /dev/null
	for p in /etc/motd /proc/cpuinfo /sys/kernel /nonexistent/path; do
		[ -e "$p" ] && head -c 64 "$p" > /dev/null 2>&1
	done
}

bench=$(arg bench 0)
if [ "$bench" -gt 0 ]; then
	ftrace=$(arg ftrace "")
	t=/sys/kernel/tracing
	if [ -n "$ftrace" ]; then
		mount -t tracefs nodev $t
		echo 4096 > $t/buffer_size_kb
		if [ "$ftrace" != all ]; then
			echo "$ftrace" | tr ',' '\n' > $t/set_ftrace_filter
		fi
		echo "$(arg ftrace_tracer function)" > $t/current_tracer
		echo 0 > $t/tracing_on
		echo > $t/trace
	fi
	# the guest's own clock at each end (its uptime, read by the shell: no process started), for a
	# bench that times the window in the guest (BENCH_CLOCK=guest)
	read -r up _ < /proc/uptime
	echo "hvt-linux: bench start $up"
	[ -n "$ftrace" ] && echo 1 > $t/tracing_on
	i=0
	work=$(arg bench_work files)
	while [ "$i" -lt "$bench" ]; do
		if [ "$work" = syscalls ]; then
			dd if=/dev/zero of=/dev/null bs=1 count=2000 2>/dev/null
		else
			files
		fi
		i=$((i + 1))
	done
	[ -n "$ftrace" ] && echo 0 > $t/tracing_on
	read -r up _ < /proc/uptime
	echo "hvt-linux: bench end $up"
	if [ -n "$ftrace" ]; then
		n=0 lost=0
		for f in $t/per_cpu/cpu*/stats; do
			e=$(sed -n 's/^entries: //p' "$f")
			o=$(sed -n 's/^overrun: //p' "$f")
			n=$((n + e + o)) lost=$((lost + o))
		done
		echo "hvt-linux: bench ftrace-events $n"
		echo "hvt-linux: bench ftrace-lost $lost"
		echo nop > $t/current_tracer
	fi
	poweroff -f
fi

# hvt.share=hvt|guest (issue 36): the guest's own function tracer on vfs_read while hvtrace traces it
# too, in either order, each phase dd's 1-byte reads of a file (N calls of vfs_read, N + 1 of vfs_write):
# hvt: "workload start", hvt.share_wait=SEC for hvtrace to attach, 10 reads; the guest's function
# tracer on vfs_read and a kprobe event on vfs_write, 20 reads, both off; 30 reads (with
# hvt.share_kprobe=OFF under a kprobe event at vfs_read+OFF, which stays on); hvt.share_after=SEC
# for hvtrace to detach; (5 reads, the kprobe off, 5 reads;) then a new filter (vfs_write) and 5
# writes, which the guest's ftrace must trace.
# guest: its function tracer on vfs_read, 10 reads, "workload start", hvt.share_wait, 20 reads,
# hvt.share_after, 30 reads: its trace counts 10, 20, 30 (cleared after each count). Every count is dd's alone; then the kernel
# log's ftrace warnings are counted, and the guest powers off.
share_run() {
	t=/sys/kernel/tracing
	mount -t tracefs nodev $t
	# dd's lines keep their name however many tasks come after it (the default keeps 128)
	echo 4096 > $t/saved_cmdlines_size
	head -c 4096 /dev/zero > /tmp/share-file
	sw=$(arg share_wait 20)
	sa=$(arg share_after 20)
	if [ "$1" = guest ]; then
		echo vfs_read > $t/set_ftrace_filter
		echo function > $t/current_tracer
		share_reads 10
		echo "hvt-linux: share guest-reads $(share_count vfs_read)"
		echo "hvt-linux: workload start"
		sleep "$sw"
		share_reads 20
		echo "hvt-linux: share guest-reads $(share_count vfs_read)"
		sleep "$sa"
		share_reads 30
		echo "hvt-linux: share guest-reads $(share_count vfs_read)"
		echo nop > $t/current_tracer
	else
		echo "hvt-linux: workload start"
		sleep "$sw"
		share_reads 10
		share_at "guest tracer on"
		echo vfs_read > $t/set_ftrace_filter
		echo 'p:hvt_w vfs_write' >> $t/kprobe_events
		echo 1 > $t/events/kprobes/hvt_w/enable
		echo function > $t/current_tracer
		share_reads 20
		echo "hvt-linux: share guest-reads $(share_count vfs_read) kprobe-hits $(sed -n 's/^ *hvt_w *\([0-9]*\) .*/\1/p' $t/kprobe_profile)"
		share_at "guest tracer off"
		echo nop > $t/current_tracer
		echo 0 > $t/events/kprobes/hvt_w/enable
		echo '-:hvt_w' >> $t/kprobe_events
		echo > $t/trace
		# hvt.share_kprobe=OFF: a kprobe event (dd's only) at vfs_read+OFF, where hvtrace may
		# hold a detour (-e vfs_read+OFF), on through hvtrace's detach, then off
		kp=$(arg share_kprobe "")
		if [ -n "$kp" ]; then
			echo "p:hvt_k vfs_read+$kp" >> $t/kprobe_events
			echo 'comm == "dd"' > $t/events/kprobes/hvt_k/filter
			echo 1 > $t/events/kprobes/hvt_k/enable
		fi
		share_reads 30
		[ -n "$kp" ] && echo "hvt-linux: share kprobe-inside-reads $(share_count hvt_k)"
		echo "hvt-linux: share reads done"
		sleep "$sa"
		if [ -n "$kp" ]; then
			share_reads 5
			echo "hvt-linux: share kprobe-inside-after $(share_count hvt_k)"
			echo 0 > $t/events/kprobes/hvt_k/enable
			echo '-:hvt_k' >> $t/kprobe_events
			share_reads 5
		fi
		echo vfs_write > $t/set_ftrace_filter
		echo function > $t/current_tracer
		share_reads 5
		echo "hvt-linux: share after-detach writes $(share_count vfs_write)"
		echo nop > $t/current_tracer
	fi
	echo "hvt-linux: share ftrace-warnings $(dmesg | grep -c -e WARNING -e ftrace_bug -e 'ftrace fail' -e 'ftrace faulted')"
	echo "hvt-linux: workload done"
	poweroff -f
}
# hvt.hist=N (issue 39): the guest's own hist trigger beside hvtrace's: a kprobe event on vfs_read
# with 'hist:keys=common_pid.execname', "workload start", hvt.hist_wait=SEC for hvtrace to attach,
# dd's N one-byte reads of a tmpfs file (N calls of vfs_read), the pid of dd, the kernel's hist file
# between "hist begin" and "hist end" lines, hvt.hist_after=SEC for hvtrace to detach, power off.
# hvt.hist_func=FUNC puts the kprobe event there instead (ksys_read: dd's reads are as many, and
# vfs_read's fentry site stays free of the guest's ftrace, so hvtrace's stub probe can take it).
hist_run() {
	t=/sys/kernel/tracing
	mount -t tracefs nodev $t
	n=$(arg hist 50)
	hw=$(arg hist_wait 25)
	ha=$(arg hist_after 60)
	mkdir -p /tmp/hvt-hist && mount -t tmpfs tmpfs /tmp/hvt-hist &&
		head -c 4096 /dev/zero > /tmp/hvt-hist/f
	echo "p:hvt_hist $(arg hist_func vfs_read)" >> $t/kprobe_events
	echo 'hist:keys=common_pid.execname' > $t/events/kprobes/hvt_hist/trigger
	echo "hvt-linux: workload start"
	sleep "$hw"
	dd if=/tmp/hvt-hist/f of=/dev/null bs=1 count="$n" 2>/dev/null &
	dpid=$!
	wait "$dpid"
	echo "hvt-linux: hist dd pid $dpid reads $n"
	echo "hvt-linux: hist begin"
	cat $t/events/kprobes/hvt_hist/hist
	echo "hvt-linux: hist end"
	sleep "$ha"
	echo "hvt-linux: workload done"
	poweroff -f
}
share_at() { # what: a line with the guest's uptime
	echo "hvt-linux: share $1 at $(cut -d' ' -f1 /proc/uptime)"
}
share_reads() { # N: N calls of vfs_read and N + 1 of vfs_write (its status lines), by dd
	dd if=/tmp/share-file of=/dev/null bs=1 count="$1" 2>/dev/null
}
share_count() { # FUNC: the lines of the guest's trace for FUNC in dd (recording paused meanwhile:
	# grep's own reads of the trace would be traced as it reads, without end); then the trace is
	# cleared, so that each count is one phase's
	echo 0 > /sys/kernel/tracing/tracing_on
	grep -e " $1 <-" -e " $1: " /sys/kernel/tracing/trace | grep -c '^ *dd-'
	echo > /sys/kernel/tracing/trace
	echo 1 > /sys/kernel/tracing/tracing_on
}

# a module for module tracing: binfmt_misc, mounted
bm=$(arg bm 0)
bm_wait=$(arg bm_wait 0)
mkdir -p /tmp/binfmt
if [ -e /lib/modules/binfmt_misc.ko ]; then
	insmod /lib/modules/binfmt_misc.ko && mount -t binfmt_misc binfmt_misc /tmp/binfmt &&
		echo "hvt-linux: module binfmt_misc loaded"
else # a kernel with CONFIG_BINFMT_MISC=y (scripts/fetch-guest.sh packs no module then)
	mount -t binfmt_misc binfmt_misc /tmp/binfmt && echo "hvt-linux: binfmt_misc built in"
fi

echo "hvt-linux: init up, waiting ${wait_sec}s"
sleep "$wait_sec"
share=$(arg share "")
if [ -n "$share" ]; then
	share_run "$share" # powers off
fi
# hvt.hist (read with builtins: no fork, the forks counted by test_linux stay the same)
read -r cmdline < /proc/cmdline
case " $cmdline " in
*" hvt.hist="*) hist_run ;; # powers off
esac
echo "hvt-linux: workload start"
if [ "$bm" -gt 0 ]; then
	sleep "$bm_wait"
	k=0
	while [ "$k" -lt "$bm" ]; do # one read(2), one bm_status_read, each
		dd if=/tmp/binfmt/status of=/dev/null bs=64 count=1 2>/dev/null
		k=$((k + 1))
	done
	echo "hvt-linux: binfmt_misc status read $bm times"
fi
tmpfs=$(arg tmpfs 0)
if [ "$tmpfs" -gt 0 ]; then
	mkdir -p /tmp/hvt-tmpfs && mount -t tmpfs tmpfs /tmp/hvt-tmpfs &&
		echo "a line on tmpfs" > /tmp/hvt-tmpfs/f
	k=0
	while [ "$k" -lt "$tmpfs" ]; do # one read(2), one shmem_file_read_iter, each
		dd if=/tmp/hvt-tmpfs/f of=/dev/null bs=64 count=1 2>/dev/null
		k=$((k + 1))
	done
	echo "hvt-linux: tmpfs file read $tmpfs times"
fi
i=0
while [ "$i" -lt "$rounds" ]; do
	files
	i=$((i + 1))
done
j=0
pids=""
while [ "$j" -lt "$yes_n" ]; do
	yes > /dev/null &
	pids="$pids $!"
	j=$((j + 1))
done
sleep "$yes_sec"
kill $pids 2>/dev/null
wait 2>/dev/null
echo "hvt-linux: workload done"
# hvt.end=reboot: reset instead of powering off; hvt.nfuncs=1: first print how many functions of the
# kernel itself (modules' not) its ftrace lists as traceable, available_filter_functions, and how
# many distinct names they have (6.1's lists some 290 sites without a symbol of their own under
# the name of one before them) (both read
# with builtins when not asked: no fork, the forks counted by test_linux stay the same)
read -r cmdline < /proc/cmdline
case " $cmdline " in
*" hvt.nfuncs=1 "*)
	mkdir -p /sys/kernel/tracing
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	echo "hvt-linux: ftrace kernel functions $(grep -vc '\[' /sys/kernel/tracing/available_filter_functions)"
	echo "hvt-linux: ftrace kernel function names $(grep -v '\[' /sys/kernel/tracing/available_filter_functions | sort -u | wc -l)"
	;;
esac
case " $cmdline " in
*" hvt.end=reboot "*) reboot -f ;;
esac
poweroff -f
