#!/bin/sh
# /init of the Linux test guest: a small, known workload, then power off.
# Kernel command line knobs: hvt.wait=SEC (sleep first, to give a tracer time to attach),
# hvt.rounds=N (workload rounds, default 3), hvt.yes=N (copies of `yes > /dev/null`, default 4),
# hvt.yes_sec=SEC (how long they run, default 2).
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

echo "hvt-linux: init up, waiting ${wait_sec}s"
sleep "$wait_sec"
echo "hvt-linux: workload start"
i=0
while [ "$i" -lt "$rounds" ]; do
	cat /etc/motd > /dev/null
	cat /proc/version > /dev/null
	ls / /proc/self > /dev/null
	for p in /etc/motd /proc/cpuinfo /sys/kernel /nonexistent/path; do
		[ -e "$p" ] && head -c 64 "$p" > /dev/null 2>&1
	done
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
poweroff -f
