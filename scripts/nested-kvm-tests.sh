#!/bin/bash
# Runs embedded-VMM test binaries on real KVM (AMD, nested) with stub probes: scripts/run-tests.sh in
# the nested lane (scripts/nested-kvm.sh; INT3 does not exit there, what needs it skips). Usage:
# scripts/nested-kvm-tests.sh build/tests/kvm/test_kvm_stub ... (built first). Exit status as
# run-tests.sh's, or nested-kvm.sh's 125 (infrastructure) and 2 (the lane cannot run here).
exec "$(dirname "$0")/nested-kvm.sh" env HVTRACE=./hvtrace GUEST="${GUEST:-build/guest/test-guest.elf}" \
	HVTRACE_TEST_PROBE=stub HVT_TEST_TIMEOUT="${HVT_TEST_TIMEOUT:-600}" scripts/run-tests.sh "$@"
