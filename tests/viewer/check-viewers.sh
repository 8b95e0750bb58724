#!/bin/sh
# The viewers are the test of `report --format json|folded` (host/sink/sink_chrome.c, sink_folded.c):
#   1. every JSON file parses with a strict parser (python3 -m json.tool), and its slices nest on
#      every track (tests/viewer/check-nesting.py);
#   2. speedscope (its release build from npm, driven in headless Chromium by puppeteer-core over the
#      DevTools protocol: tests/viewer/speedscope-load.js) imports the golden files of
#      tests/unit/host/sink/test_viz_sinks.c and a real function_graph trace of the test guest (`record`, then
#      `report --format json|folded`), as JSON and as folded stacks, and shows the expected frame names; a truncated JSON must be refused.
# npm packages go to $HVTRACE_CACHE/viewer (default build/viewer); without the npm registry the
# speedscope part is skipped with one line "SKIPPED: speedscope: ...". Environment: HVTRACE (./hvtrace), GUEST (the test guest);
# FLAMEGRAPH=PNG also draws the guest's folded stacks in speedscope's Left Heavy view to PNG (the
# picture of docs/formats.md: docs/img/flamegraph-test-guest.png).
set -eu
cd "$(dirname "$0")/../.."
cache=${HVTRACE_CACHE:-build}/viewer
golden=tests/golden/viz
work=$(mktemp -d /tmp/viz-viewer.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL $*"; exit 1; }

# real traces, recorded to trace.dat and turned into both formats by `hvtrace report`: the Linux test
# guest under QEMU TCG (function_graph under do_sys_openat2, always), and the freestanding test guest
# under function_graph where /dev/kvm exists (the embedded VMM needs it)
hvtrace=${HVTRACE:-./hvtrace} guest=${GUEST:-build/guest/test-guest.elf} gdir=${GUEST_DIR:-build/guest}
traces=linux
"$hvtrace" record --qemu --kernel "$gdir/vmlinuz" --initrd "$gdir/initramfs.cpio.gz" --append nokaslr \
	-p function_graph -g do_sys_openat2 --funcgraph-retval --timeout 300 -o "$work/linux.dat" \
	>"$work/console" 2>&1 || fail "hvtrace record --qemu -p function_graph: $(tail -1 "$work/console")"
if [ -e /dev/kvm ]; then
	"$hvtrace" record -p function_graph --funcgraph-retval -o "$work/guest.dat" "$guest" \
		>"$work/console" 2>&1 || fail "hvtrace record -p function_graph $guest: $(tail -1 "$work/console")"
	traces="$traces guest"
else
	echo "SKIPPED: the freestanding guest's trace: no /dev/kvm (the Linux guest's trace is checked)"
fi
for t in $traces; do
	for fmt in json folded; do
		"$hvtrace" report -i "$work/$t.dat" --format $fmt >"$work/$t.$fmt" 2>"$work/err" ||
			fail "hvtrace report -i $t.dat --format $fmt: $(tail -1 "$work/err")"
	done
done

for f in $golden/*.json $(for t in $traces; do echo "$work/$t.json"; done); do
	python3 -m json.tool "$f" >/dev/null 2>"$work/err" || fail "$f: not strict JSON: $(cat "$work/err")"
done
echo "ok strict JSON: $(ls $golden/*.json | wc -l) golden files and the traces of: $traces"
# what Perfetto's importer needs too: named tracks, B/E pairs, slices nested on each track
python3 tests/viewer/check-nesting.py $golden/*.json $(for t in $traces; do echo "$work/$t.json"; done) ||
	fail "slices not nested"

release=$cache/node_modules/speedscope/dist/release
if [ ! -f "$release/index.html" ] || [ ! -d "$cache/node_modules/puppeteer-core" ]; then
	mkdir -p "$cache"
	if ! npm install --prefix "$cache" --no-audit --no-fund --no-save \
		speedscope@1.25.0 puppeteer-core@22.15.0 >"$cache/npm.log" 2>&1; then
		echo "SKIPPED: speedscope: npm install failed (registry unreachable?), see $cache/npm.log"
		exit 0
	fi
fi

head -c 2000 $golden/graph.json >"$work/truncated.json"
# expected frames: what speedscope's sandwich table must list (folded names escaped as written)
set -- "$golden/graph.json:main,work,leaf,we\"ird;\\sym,CPU 1,app-100" \
	"$golden/graph.folded:main,work,leaf,we\"ird\\x3b\\\\sym" \
	"$golden/function.json:work,app-100" \
	"$golden/function.folded:main,work,leaf" \
	"$golden/switch.json:main,work,leaf,worker-101" \
	"$golden/switch.folded:main,work,leaf,worker" \
	"$work/linux.json:do_sys_openat2,do_filp_open" \
	"$work/linux.folded:do_sys_openat2,do_filp_open"
case " $traces " in *" guest "*)
	set -- "$@" "$work/guest.json:workload_run,fib,deep,nl_outer,task_step" \
		"$work/guest.folded:workload_run,fib,deep,nl_outer,task_step" ;;
esac
NODE_PATH=$cache/node_modules node tests/viewer/speedscope-load.js "$release" "$@" >"$work/out" || true
cat "$work/out"
[ "$(grep -c '^ok ' "$work/out")" = $# ] || fail "speedscope refused a profile"
# and the check can fail: speedscope must refuse a cut JSON file
NODE_PATH=$cache/node_modules node tests/viewer/speedscope-load.js "$release" \
	"$work/truncated.json:main" >"$work/out" && fail "speedscope took a truncated JSON: $(cat "$work/out")"
grep -q '^FAIL' "$work/out" || fail "truncated JSON: $(cat "$work/out")"
echo "ok speedscope refuses a truncated JSON file"
if [ -n "${FLAMEGRAPH:-}" ]; then
	cp "$work/guest.folded" "$work/test-guest.folded"
	NODE_PATH=$cache/node_modules node tests/viewer/speedscope-load.js --screenshot "$FLAMEGRAPH" \
		left-heavy "$release" "$work/test-guest.folded" || fail "flame graph picture"
fi
