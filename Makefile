# hvtrace: `make` builds ./hvtrace and the test guest; `make test` runs every test; `make bench` measures.
# Missing Debian build dependencies are installed first (scripts/deps.sh, as root).

CC      ?= gcc
BUILD   := build
CFLAGS  := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-missing-field-initializers -pthread \
           -D_GNU_SOURCE -MMD -MP -I.
LDFLAGS := -pthread
# ---- Hardening of host code (issue #10): CFLAGS builds host code and tests only, never the
# freestanding guest (GUEST_CFLAGS) or the stub (assembled with -I. alone). Without it, for a
# comparison: make BUILD=build-nohard HARDEN_CFLAGS= ...
HARDEN_CFLAGS := -fstack-protector-strong -D_FORTIFY_SOURCE=2
CFLAGS  += $(HARDEN_CFLAGS)
# SAN=1 (make check-asan sets it, with BUILD=build-asan): ASan + UBSan, every report fatal.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ifeq ($(SAN),1)
CFLAGS  += $(SAN_FLAGS) -O1 -U_FORTIFY_SOURCE
# clang calls the kvm_msrs header-plus-entry struct (host/kvm/vm.c) a GNU extension: gnu11 is ours
CFLAGS  += $(if $(findstring clang,$(CC)),-Wno-gnu-variable-sized-type-not-at-end)
LDFLAGS += $(SAN_FLAGS)
endif
# ---- end of hardening
# Evaluated lazily, after $(DEPS) has installed pkg-config and the -dev packages.
LIB_CFLAGS   = $(shell pkg-config --cflags libelf libdw libbpf libvirt libvirt-qemu libtracecmd libtraceevent liblz4 liblzma zlib libzstd lzo2)
# libbz2 and libzydis (the x86 decoder of arch/x86/x86_reloc.c) have no pkg-config file in Debian
LIB_LIBS     = $(shell pkg-config --libs libelf libdw libbpf libvirt libvirt-qemu libtracecmd libtraceevent liblz4 liblzma zlib libzstd lzo2) -lbz2 -lZydis
CMOCKA_LIBS  = $(shell pkg-config --libs cmocka)

DEPS := $(BUILD)/.deps-installed

LIB_SRCS := $(wildcard arch/*.c) $(wildcard arch/x86/*.c) $(wildcard arch/arm64/*.c) $(wildcard vmi/*.c) $(wildcard guest-stub/*.c guest-stub/*/*.c) \
            $(filter-out host/cli/main.c,$(wildcard host/*/*.c))
# One stub per guest ISA, guest-stub/<isa>/stub.S: one assembly unit that includes the other files
# of its folder (they are not assembled alone). The host's compiler assembles x86's; arm64's is
# assembled by binutils-aarch64-linux-gnu into a header of bytes (scripts/stub-blob.sh) that
# guest-stub/arm64/blob.c compiles as data.
LIB_ASMS := guest-stub/x86/stub.S
ARM64_STUB_H := $(BUILD)/guest-stub/arm64/stub_bytes.h
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(LIB_ASMS:%.S=$(BUILD)/%.o)
LIB      := $(BUILD)/libhvtrace.a

# Freestanding test guest: workloads are instrumented, the runtime is not.
GUEST_DIR    := $(BUILD)/guest
GUEST        := $(GUEST_DIR)/test-guest.elf
GUEST_VARIANTS := $(GUEST_DIR)/test-guest-loop.elf $(GUEST_DIR)/test-guest-fault.elf \
                  $(GUEST_DIR)/test-guest-hostile-cr3.elf $(GUEST_DIR)/test-guest-bare.elf
BENCH_GUEST  := $(GUEST_DIR)/bench-guest.elf
GUEST_CFLAGS := -std=gnu11 -I. -O1 -g -Wall -Wextra -Werror -ffreestanding -fno-pic -fno-pie \
                -fno-stack-protector -mno-red-zone -mgeneral-regs-only -fno-omit-frame-pointer \
                -fno-optimize-sibling-calls -fcf-protection=none -fno-asynchronous-unwind-tables
GUEST_PG     := -pg -mfentry -mnop-mcount -mrecord-mcount
GUEST_LDFLAGS := -nostdlib -static -no-pie -Wl,-T,tests/guest/guest.ld -Wl,--build-id=none \
                 -Wl,-z,noexecstack -Wl,--no-warn-rwx-segments

# Tests, one binary per tests/<folder>/test_*.c in $(BUILD)/tests/<folder>/: unit/ (cmocka, no guest),
# kvm/ (the freestanding guest in the embedded VMM), qemu/ (QEMU's gdbstub and QMP, and the Linux guest
# under QEMU TCG, launched and attached to through libvirt). tests/common/ holds the fakes and helpers
# they share, built once into one archive that every test links (each takes only what it uses).
UNIT_SRCS := $(shell find tests/unit -name 'test_*.c' | sort)
UNIT_BINS := $(UNIT_SRCS:%.c=$(BUILD)/%)
KVM_SRCS  := $(wildcard tests/kvm/test_*.c)
KVM_BINS  := $(KVM_SRCS:%.c=$(BUILD)/%)
QEMU_SRCS := $(wildcard tests/qemu/test_*.c)
QEMU_BINS := $(QEMU_SRCS:%.c=$(BUILD)/%)
# The embedded-VMM integration tests once more with --probe auto (stub probes wherever they apply).
STUB_RUNS := $(foreach t,function graph lifecycle events expect json,HVTRACE_TEST_PROBE=auto,$(BUILD)/tests/kvm/test_kvm_$(t))
TEST_COMMON := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/common/*.c))
TEST_LIB    := $(BUILD)/tests/libtestcommon.a
KVM_COMMON  := $(BUILD)/tests/kvm/kvm_common.o

.PHONY: all check-layers test unit-test kvm-test test-nested lane-qemu qemu-test viewer-test bench bench-linux bench-arm64 bench-nested clean format guest guest-kernels guest-arm64 arm64-test arm64-matrix trixie-tools qemu-versions fuzz install
all: hvtrace $(GUEST) $(GUEST_VARIANTS)

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary and its man page (docs/hvtrace.1)
PREFIX ?= /usr/local
install: hvtrace
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 hvtrace $(DESTDIR)$(PREFIX)/bin/hvtrace
	install -m 644 docs/hvtrace.1 $(DESTDIR)$(PREFIX)/share/man/man1/hvtrace.1

$(DEPS): scripts/deps.sh
	@mkdir -p $(@D)
	sh scripts/deps.sh
	@touch $@

$(BUILD)/%.o: %.c | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

# The stub is guest code assembled into the host binary as data (its bytes are copied into guests).
$(BUILD)/guest-stub/%.o: guest-stub/%.S guest-stub/stub_abi.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) -I. -MMD -MP -c $< -o $@
	@if readelf -r $@ | grep -q '^Relocation section'; then echo "$<: the stub must need no relocations" >&2; rm -f $@; exit 1; fi

$(ARM64_STUB_H): guest-stub/arm64/stub.S guest-stub/stub_abi.h scripts/stub-blob.sh | $(DEPS)
	@mkdir -p $(@D)
	scripts/stub-blob.sh aarch64-linux-gnu- $< $@

$(BUILD)/guest-stub/arm64/blob.o: $(ARM64_STUB_H)
$(BUILD)/guest-stub/arm64/blob.o: CFLAGS += -I$(BUILD)

$(LIB): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

hvtrace: $(BUILD)/host/cli/main.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(GUEST_DIR)/workloads.o: tests/guest/workloads.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(GUEST_PG) -c $< -o $@
$(GUEST_DIR)/tailcall.o: tests/guest/tailcall.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(GUEST_PG) -O2 -foptimize-sibling-calls -c $< -o $@
$(GUEST_DIR)/runtime.o: tests/guest/runtime.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -c $< -o $@
$(GUEST_DIR)/bench.o: tests/guest/bench.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(GUEST_PG) -c $< -o $@
# make bench's entry-probe part: the bench guest built without -pg (bench_leaf has no fentry site)
BENCH_NOPG_GUEST := $(GUEST_DIR)/bench-nopg.elf
$(GUEST_DIR)/bench-nopg.o: tests/guest/bench.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -c $< -o $@
$(BENCH_NOPG_GUEST): $(GUEST_DIR)/start.o $(GUEST_DIR)/runtime-for-nopg-bench.o \
		     $(GUEST_DIR)/workloads-nopg-bench.o $(GUEST_DIR)/tailcall-nopg-bench.o \
		     $(GUEST_DIR)/bench-nopg.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)
$(BENCH_GUEST): $(GUEST_DIR)/start.o $(GUEST_DIR)/runtime-bench.o $(GUEST_DIR)/workloads.o \
		$(GUEST_DIR)/tailcall.o $(GUEST_DIR)/bench.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)
$(GUEST_DIR)/start.o: tests/guest/start.S | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -c $< -o $@
$(GUEST_DIR)/runtime-%.o: tests/guest/runtime.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -DGUEST_MODE_$(shell echo $* | tr a-z A-Z) -c $< -o $@
$(GUEST): $(GUEST_DIR)/start.o $(GUEST_DIR)/runtime.o $(GUEST_DIR)/workloads.o $(GUEST_DIR)/tailcall.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)
# Variants for the tests: `loop` never ends by itself, `fault` triple-faults on cpu0, `bare` defines
# no hvtrace_* symbol (stub probes without guest cooperation).
$(GUEST_DIR)/test-guest-%.elf: $(GUEST_DIR)/start.o $(GUEST_DIR)/runtime-%.o $(GUEST_DIR)/workloads.o \
			       $(GUEST_DIR)/tailcall.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)

# The test guest built without -pg (issue 25): no __mcount_loc, no fentry site at all, so every function
# is probed at its first instruction (entry probes): guest-nopg.elf (and its endless variant
# guest-nopg-loop.elf); guest-nopg-ibt.elf also starts each function with ENDBR64.
# The same workloads and runtime as test-guest.elf, so the same counts are expected of them.
NOPG_GUESTS := $(GUEST_DIR)/guest-nopg.elf $(GUEST_DIR)/guest-nopg-ibt.elf \
	       $(GUEST_DIR)/guest-nopg-loop.elf
all kvm-test test test-nested: $(NOPG_GUESTS)
NOPG_FLAGS_nopg :=
NOPG_FLAGS_nopg-ibt := -fcf-protection=branch
NOPG_DEFS_nopg-loop := -DGUEST_MODE_LOOP
NOPG_DEFS_nopg-bench := -DGUEST_MODE_BENCH
$(GUEST_DIR)/workloads-%.o: tests/guest/workloads.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(NOPG_FLAGS_$*) -c $< -o $@
$(GUEST_DIR)/tailcall-%.o: tests/guest/tailcall.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(NOPG_FLAGS_$*) -O2 -foptimize-sibling-calls -c $< -o $@
$(GUEST_DIR)/runtime-for-%.o: tests/guest/runtime.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(NOPG_FLAGS_$*) $(NOPG_DEFS_$*) -c $< -o $@
$(GUEST_DIR)/guest-%.elf: $(GUEST_DIR)/start.o $(GUEST_DIR)/runtime-for-%.o \
			  $(GUEST_DIR)/workloads-%.o $(GUEST_DIR)/tailcall-%.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)
	@if readelf -SW $@ | grep -q __mcount_loc; then echo "$@: has __mcount_loc" >&2; rm -f $@; exit 1; fi

# Hostile guest (issue #10): vCPU 0 runs a copy of the text under its own page tables. One file,
# traced functions and runtime alike; its text pages must hold no writable data (no .data).
$(GUEST_DIR)/hostile_cr3.o: tests/guest/hostile_cr3.c tests/guest/guest.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(GUEST_PG) -c $< -o $@
$(GUEST_DIR)/test-guest-hostile-cr3.elf: $(GUEST_DIR)/hostile_cr3.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)
	@if readelf -SW $@ | grep -q ' \.data '; then echo "$@: .data shares a page with the text" >&2; rm -f $@; exit 1; fi

# The hostile guest of issue #10 (tests/guest/hostile_data.c, tests/kvm/test_kvm_hostile_data.c): it lies
# to hvtrace through every value hvtrace reads from its memory. The test guest's start.S, nothing else.
HOSTILE_DATA_GUEST := $(GUEST_DIR)/test-guest-hostile-data.elf
all kvm-test test test-nested: $(HOSTILE_DATA_GUEST)
$(GUEST_DIR)/hostile_data.o: tests/guest/hostile_data.c guest-stub/stub_abi.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(GUEST_PG) -c $< -o $@
$(HOSTILE_DATA_GUEST): $(GUEST_DIR)/start.o $(GUEST_DIR)/hostile_data.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)

# A guest with a .irqentry.text (issue 12, tests/guest/irqentry.c): function_graph's irq markers.
IRQENTRY_GUEST := $(GUEST_DIR)/test-guest-irqentry.elf
all kvm-test test test-nested: $(IRQENTRY_GUEST)
$(GUEST_DIR)/irqentry.o: tests/guest/irqentry.c | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(GUEST_PG) -c $< -o $@
$(IRQENTRY_GUEST): $(GUEST_DIR)/start.o $(GUEST_DIR)/irqentry.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)

$(TEST_LIB): $(TEST_COMMON)
	rm -f $@
	ar rcs $@ $^

$(KVM_BINS): $(KVM_COMMON)

$(BUILD)/tests/%: tests/%.c $(TEST_LIB) $(LIB) | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -o $@ $< $(filter %.o,$^) $(TEST_LIB) $(LIB) $(LIB_LIBS) \
		$(CMOCKA_LIBS)

TEST_ENV := HVTRACE=./hvtrace GUEST=$(GUEST)

unit-test: hvtrace $(UNIT_BINS) $(GUEST)
	@$(TEST_ENV) scripts/run-tests.sh $(UNIT_BINS)

kvm-test: hvtrace $(GUEST) $(GUEST_VARIANTS) $(KVM_BINS)
	@$(TEST_ENV) scripts/run-tests.sh $(KVM_BINS) $(STUB_RUNS)

# The embedded-VMM tests on a real kvm_amd, nested under QEMU TCG (scripts/nested-kvm.sh); each binary ends
# after 10 minutes. With the lane's own L0 (make lane-qemu: INT3 intercepted as AMD's manual says, so INT3
# exits to L1's KVM) they run with trap probes, and the stub runs of make kvm-test beside them (the lane's
# timeout then 2 hours: 25 minutes for the trap runs alone on a loaded machine); with the machine's QEMU as
# L0 (INT3 does not exit there) with stub probes. test_kvm_linux (run --kernel, boot tracing)
# runs once per kernel of the matrix $(HVT_KERNELS), each its own binary run with its own 10 minutes.
# Not in `make test` until it has passed 10 runs in a row. Skipped with one line where the lane cannot run
# (no TCG, no kernel package).
NESTED_LINUX_RUNS = $(foreach k,$(HVT_KERNELS),HVT_KERNELS=$(k),$(BUILD)/tests/kvm/test_kvm_linux)
test-nested: hvtrace $(GUEST) $(GUEST_VARIANTS) $(KVM_BINS) guest guest-kernels qemu-versions
	@if ! why=$$(scripts/nested-kvm.sh --check 2>&1); then echo "SKIPPED: test-nested: $$why"; \
	elif scripts/nested-kvm.sh --l0 | grep -q ^lane; then \
		HVT_LANE_TIMEOUT=$${HVT_LANE_TIMEOUT:-7200} scripts/nested-kvm.sh env $(TEST_ENV) HVT_TEST_TIMEOUT=600 \
			scripts/run-tests.sh $(filter-out %/test_kvm_linux,$(KVM_BINS)) $(STUB_RUNS) \
			$(NESTED_LINUX_RUNS); \
	else scripts/nested-kvm.sh env $(TEST_ENV) HVTRACE_TEST_PROBE=stub HVT_TEST_TIMEOUT=600 \
			scripts/run-tests.sh $(filter-out %/test_kvm_linux,$(KVM_BINS)) \
			$(NESTED_LINUX_RUNS); fi

# The nested lane's L0 with INT3 intercepted as AMD's manual says (issue 40): Debian's source of the
# machine's QEMU with scripts/lane-qemu-int3.patch, x86_64-softmmu alone, built once (15 min on 2 cores)
# and cached in $HVTRACE_CACHE/lane-qemu; scripts/nested-kvm.sh uses it as L0 when it is there.
lane-qemu:
	@bash scripts/build-lane-qemu.sh >/dev/null

qemu-test: hvtrace $(QEMU_BINS) guest guest-kernels guest-arm64 trixie-tools qemu-versions
	@$(TEST_ENV) HVT_TEST_JOBS=$(TEST_JOBS) scripts/run-tests.sh $(QEMU_RUNS)

# The include graph: layers include only downward, no include loop (scripts/check-layers.py); every
# product file named in docs/architecture.md (scripts/check-architecture.py).
check-layers: | $(DEPS)
	python3 scripts/check-layers.py
	python3 scripts/check-architecture.py

# The layers, the unit tests, then the integration tests: the freestanding guest in the embedded VMM (KVM),
# then the Linux guest under QEMU (launched, and attached to through libvirt).
# $(TEST_JOBS) binaries at a time (most of a guest test's time is spent waiting on a TCG guest or a
# gdbstub round trip, not on the host's cores), the longest first: test_linux in two shards (every
# other test, each shard with its own libvirt domain), the kernel matrix, arm64, then the rest.
TEST_JOBS ?= 2
LINUX_TEST := $(BUILD)/tests/qemu/test_linux
LINUX_SHARDS = HVT_TEST_SHARD=0/2,$(LINUX_TEST) HVT_TEST_SHARD=1/2,HVT_TEST_DOMAIN=hvtrace-test-b,$(LINUX_TEST)
QEMU_RUNS = $(LINUX_SHARDS) $(BUILD)/tests/qemu/test_kernels $(ARM64_TEST) $(ARM64_RUNS) \
	$(filter-out $(LINUX_TEST) $(BUILD)/tests/qemu/test_kernels $(ARM64_TEST),$(QEMU_BINS))
test: check-layers hvtrace $(GUEST) $(GUEST_VARIANTS) $(UNIT_BINS) $(KVM_BINS) $(QEMU_BINS) guest \
      guest-kernels guest-arm64 trixie-tools qemu-versions
	@$(TEST_ENV) HVT_TEST_JOBS=$(TEST_JOBS) scripts/run-tests.sh $(QEMU_RUNS) $(KVM_BINS) $(STUB_RUNS) \
		$(UNIT_BINS)
	@$(TEST_ENV) tests/viewer/check-viewers.sh

# Chrome JSON and folded stacks loaded by speedscope in headless Chromium (npm, cached in build/viewer)
viewer-test: hvtrace $(GUEST) guest
	@$(TEST_ENV) tests/viewer/check-viewers.sh

# On real KVM, in the nested lane: with the lane's own L0 (make lane-qemu), first the freestanding part of
# make bench, short (BENCH_SHORT: 1 vCPU, no probe, raw INT3 round trip, trap event, stub event,
# $(BENCH_NESTED_ROUNDS) rounds, default 3): a trap event through KVM_EXIT_DEBUG against a raw INT3 exit
# round trip and a stub event, in one run; set BENCH_NESTED_PARTS=freestanding for it alone; then the
# Linux part: hvtrace's own VMM (run --kernel), stub probes.
bench-nested: hvtrace guest $(BUILD)/tests/bench $(BENCH_GUEST) $(BENCH_NOPG_GUEST)
	@if ! why=$$(scripts/nested-kvm.sh --check 2>&1); then echo "SKIPPED: bench-nested: $$why"; \
	else if scripts/nested-kvm.sh --l0 | grep -q ^lane; then \
		scripts/nested-kvm.sh env BENCH_SHORT=1 BENCH_ROUNDS=$${BENCH_NESTED_ROUNDS:-3} \
			$(BUILD)/tests/bench $(BENCH_GUEST) || exit 1; \
	else echo "SKIPPED: bench-nested: the trap part: INT3 does not exit with the machine's QEMU as L0" \
		"(make lane-qemu)"; fi; \
	[ "$$BENCH_NESTED_PARTS" = freestanding ] || \
		scripts/nested-kvm.sh env BENCH_VMM=kvm BENCH_ROUNDS=$${BENCH_ROUNDS:-20} \
			tests/bench/bench-linux.sh $(BENCH_LINUX_DIR); fi

bench: hvtrace $(BUILD)/tests/bench $(BENCH_GUEST) $(BENCH_NOPG_GUEST) guest guest-arm64
	$(BUILD)/tests/bench $(BENCH_GUEST) $(BENCH_NOPG_GUEST)
	tests/bench/bench-qemu.sh $(GUEST_DIR)
	tests/bench/bench-linux.sh $(BENCH_LINUX_DIR)
	BENCH_PARTS=entry tests/bench/bench-linux.sh $(BENCH_LINUX_DIR)
	BENCH_PARTS=profile tests/bench/bench-linux.sh $(BENCH_LINUX_DIR)
	BENCH_PARTS=few tests/bench/bench-linux.sh $(BENCH_ARM64_DIR)
	BENCH_PARTS=stub tests/bench/bench-linux.sh $(BENCH_ARM64_DIR)

# make bench's arm64 part alone, on the first kernel of $(HVT_ARM64_KERNELS) under
# qemu-system-aarch64 (TCG), each in one run: stub probes on a few functions against the guest's
# own ftrace function tracer on the same ones, per event; then on every function (BENCH_PARTS=stub,
# windows timed on the guest's clock: docs/arm64.md)
BENCH_ARM64_DIR = $(GUEST_DIR)/arm64-$(firstword $(HVT_ARM64_KERNELS))
bench-arm64: hvtrace guest-arm64
	BENCH_PARTS=few tests/bench/bench-linux.sh $(BENCH_ARM64_DIR)
	BENCH_PARTS=stub tests/bench/bench-linux.sh $(BENCH_ARM64_DIR)

# make bench-linux [KERNEL=6.12]: the Linux part alone, on the kernel `make guest KERNEL=...` fetches
# (6.1, the default, in $(GUEST_DIR); any other in $(GUEST_DIR)/<KERNEL>/).
BENCH_LINUX_DIR = $(if $(filter 6.1,$(KERNEL)),$(GUEST_DIR),$(GUEST_DIR)/$(KERNEL))
bench-linux: hvtrace guest
	tests/bench/bench-linux.sh $(BENCH_LINUX_DIR)
	BENCH_PARTS=entry tests/bench/bench-linux.sh $(BENCH_LINUX_DIR)
	BENCH_PARTS=profile tests/bench/bench-linux.sh $(BENCH_LINUX_DIR)

$(BUILD)/tests/bench: tests/bench/bench.c $(LIB) $(BENCH_GUEST) $(BENCH_NOPG_GUEST) | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -o $@ $< $(LIB) $(LIB_LIBS)

# The Linux test guest: Debian's cloud kernel, its System.map, busybox initramfs (scripts/fetch-guest.sh).
LINUX_GUEST := $(GUEST_DIR)/vmlinuz $(GUEST_DIR)/System.map $(GUEST_DIR)/config \
               $(GUEST_DIR)/initramfs.cpio.gz
# make guest KERNEL=6.12 (6.12-rt, 6.18-rt, 7.3, 7.3-generic, ...): another Debian kernel in
# $(GUEST_DIR)/<KERNEL>/ (no System.map: Debian ships none outside -dbg); the default stays in $(GUEST_DIR).
# make guest ARCH=arm64 KERNEL=6.12-rt is make guest KERNEL=arm64-6.12-rt (issue 38; ARCH=aarch64 too).
KERNEL ?= 6.1
GUEST_KERNEL = $(if $(filter arm64 aarch64,$(ARCH)),arm64-$(KERNEL:arm64-%=%),$(KERNEL))
guest: | $(DEPS)
	bash scripts/fetch-guest.sh $(GUEST_DIR) $(GUEST_KERNEL)

# The kernel matrix of tests/qemu/test_kernels.c (issue 23): each kernel's guest in $(GUEST_DIR)/<K>/, fetched
# as `make guest KERNEL=K` does (cached: quick when it is there). HVT_KERNELS= (empty) runs no kernel.
HVT_KERNELS ?= 6.1 6.12 6.12-rt 7.3
export HVT_KERNELS
guest-kernels: | $(DEPS)
	@for k in $(HVT_KERNELS); do bash scripts/fetch-guest.sh $(GUEST_DIR) $$k || exit 1; done

# arm64 guests (issue 38): Debian's arm64 kernel of each series in $(HVT_ARM64_KERNELS) (6.12: its newest
# cloud-arm64; 6.1, 6.12-generic, 6.12-rt, 6.18, 7.3, 7.3-16k, ... as `make guest KERNEL=arm64-K` takes
# them) with busybox-static for arm64, in $(GUEST_DIR)/arm64-<K>/ (vmlinuz, Image, config,
# initramfs.cpio.gz), booted by tests/qemu/test_arm64.c under qemu-system-aarch64: the first kernel by the
# machine's QEMU 7.2 and by each QEMU of $(HVT_ARM64_QEMUS) (scripts/fetch-qemu.sh V aarch64), every
# further one by 7.2 (ARM64_RUNS). HVT_ARM64_KERNELS= (empty) fetches none; HVT_ARM64_QEMUS= none.
# `make arm64-matrix`: the whole matrix of issue 38 (ARM64_MATRIX), each kernel under 7.2, 10.0 and 11,
# the libvirt tests under 11 too (HVT_ARM64_LIBVIRT_TRIXIE=1: the trixie root's libvirtd and QEMU 11).
HVT_ARM64_KERNELS ?= 6.12
HVT_ARM64_QEMUS ?= 11
export HVT_ARM64_KERNELS
ARM64_MATRIX := 6.1 6.12 6.12-generic 6.12-rt 6.18 7.3 7.3-16k
QEMU_CACHE = $(or $(HVTRACE_CACHE),/var/cache/hvtrace)/qemu
ARM64_TEST := $(BUILD)/tests/qemu/test_arm64
# (each run with a libvirt domain of its own, HVT_TEST_DOMAIN: make test runs them side by side)
ARM64_RUNS = $(foreach v,$(HVT_ARM64_QEMUS),HVT_TEST_DOMAIN=q$(v),QEMU_AARCH64=$(QEMU_CACHE)/$(v)/qemu-system-aarch64,$(ARM64_TEST)) \
	$(foreach k,$(wordlist 2,$(words $(HVT_ARM64_KERNELS)),$(HVT_ARM64_KERNELS)),HVT_TEST_DOMAIN=k$(k),HVT_ARM64_GUEST=$(GUEST_DIR)/arm64-$(k),$(ARM64_TEST))
# make test's quick pass over more of the matrix (issue 38): each kernel of $(HVT_ARM64_QUICK_KERNELS)
# under the last QEMU of $(HVT_ARM64_QEMUS) (else 7.2), test_arm64 with HVT_ARM64_QUICK=1: stub probes
# with -r, and on every function with -g, two boots of run --qemu, about 30 s (no VM for the attach
# tests; those, and the rest, run on the whole matrix in `make arm64-matrix`)
HVT_ARM64_QUICK_KERNELS ?= 6.1 6.12-generic 6.12-rt 7.3 7.3-16k
ARM64_QUICK_QEMU = $(lastword $(HVT_ARM64_QEMUS))
ARM64_RUNS += $(foreach k,$(HVT_ARM64_QUICK_KERNELS),HVT_ARM64_QUICK=1,HVT_ARM64_GUEST=$(GUEST_DIR)/arm64-$(k),$(if $(ARM64_QUICK_QEMU),QEMU_AARCH64=$(QEMU_CACHE)/$(ARM64_QUICK_QEMU)/qemu-system-aarch64$(comma))$(ARM64_TEST))
comma := ,
guest-arm64: | $(DEPS)
	@for k in $(HVT_ARM64_KERNELS) $(HVT_ARM64_QUICK_KERNELS); do bash scripts/fetch-guest.sh $(GUEST_DIR) arm64-$$k || exit 1; done
	@for v in $(HVT_ARM64_QEMUS); do bash scripts/fetch-qemu.sh $$v aarch64 >/dev/null || \
		echo "SKIPPED: qemu-system-aarch64 $$v: see the line above"; done

# test_arm64 alone on each kernel of $(HVT_ARM64_KERNELS) under 7.2 and each QEMU of $(HVT_ARM64_QEMUS)
ARM64_ALL_RUNS = $(foreach v,system $(HVT_ARM64_QEMUS),$(foreach k,$(HVT_ARM64_KERNELS),HVT_ARM64_GUEST=$(GUEST_DIR)/arm64-$(k),QEMU_AARCH64=$(if $(filter system,$(v)),,$(QEMU_CACHE)/$(v)/qemu-system-aarch64),$(ARM64_TEST)))
arm64-test: hvtrace $(ARM64_TEST) guest-arm64
	@$(TEST_ENV) scripts/run-tests.sh $(ARM64_ALL_RUNS)
arm64-matrix:
	@HVT_ARM64_LIBVIRT_TRIXIE=1 $(MAKE) --no-print-directory arm64-test HVT_ARM64_KERNELS="$(ARM64_MATRIX)" \
		HVT_ARM64_QEMUS="10.0 11"

# Debian 13's trace-cmd (3.3), which the trace.dat tests run beside the machine's 3.1.6, and KernelShark 2.4
# (its library libkshark, headers and a C compiler: tests/viewer/kshark-load.c loads a trace.dat headless
# there): a trixie root made once with debootstrap (scripts/trixie-chroot.sh, cached in
# /var/cache/hvtrace/trixie). Where it cannot be made, one line says why and the tests skip that
# comparison (each says so).
TRIXIE_TOOLS := trace-cmd kernelshark libkshark-dev libjson-c-dev gcc libc6-dev
trixie-tools:
	@bash scripts/trixie-chroot.sh $(TRIXIE_TOOLS) >/dev/null || echo "SKIPPED: trixie-tools: see the line above"

# The QEMUs beside the machine's 7.2 that tests/qemu/test_linux.c attaches to (issue 24): each put by
# scripts/fetch-qemu.sh into $HVTRACE_CACHE/qemu/<V>/ (10.0: unpacked there; 11: a wrapper of the one of
# the trixie root, scripts/trixie-chroot.sh) (cached: quick when it is there; minutes the first time).
# HVT_QEMUS= (empty) fetches none: their tests then print SKIPPED.
HVT_QEMUS ?= 10.0 11
qemu-versions: | $(DEPS)
	@for v in $(HVT_QEMUS); do bash scripts/fetch-qemu.sh $$v >/dev/null || exit 1; done

# ---- make fuzz (issue #10): libFuzzer (clang) on every parser fed by a peer or a file: event specs
# (fevent), gdbstub packets and the client (gdbstub), QMP JSON and the client (qmp), System.map
# (sysmap), ELF images (elf), a guest kernel's BTF (btf), QEMU's accelerator (accel), QEMU's
# guest-physical map from its monitor and smaps (memmap), QEMU command lines (qemu_cmdline), kallsyms
# tables in guest memory (kallsyms), trace.dat files for `report` (tracedat), record streams through
# the viewer sinks and the live JSON Lines (viz_sinks), session files and --expect-* specs (session),
# QEMU's query-cpus-fast answer for record --host (vcpu_threads), a function's first instructions
# relocated out of line from guest bytes (x86_reloc), a kernel image's head, gzip'd or not (kimage), a
# VMM process's /proc maps, fd links and syscall lines (kvm_proc). Each
# runs FUZZ_SECONDS (default 30) from its seeds in
# tests/fuzz/corpus/<name>/, new inputs kept in build/fuzz/corpus/<name>/; ASan, and UBSan aborting
# (-fno-sanitize-recover), so any report is a crash that stops `make fuzz`. `make fuzz-smoke`: 5 s
# each; `make fuzz-replay`: each seed once, no mutation (CI).
FUZZ_SECONDS ?= 30
FUZZERS      := fevent gdbstub qmp sysmap elf btf accel memmap qemu_cmdline kallsyms tracedat e820 \
                viz_sinks session event_filter trigger_stack vcpu_threads x86_reloc kimage stub_agg kvm_proc
FUZZ_CFLAGS  := -std=gnu11 -I. -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SRCS_fevent  := host/trace/fevent.c host/trace/escape.c vmi/vmi_symtab.c
FUZZ_SRCS_gdbstub := host/vmm/gdbstub.c host/vmm/gdb_wire.c host/vmm/gdb_packet.c host/vmm/tcp.c host/trace/clock.c
FUZZ_SRCS_qmp     := host/qemu/qmp.c host/qemu/qmp_json.c host/vmm/tcp.c host/trace/clock.c
FUZZ_SRCS_sysmap  := vmi/vmi_linux.c vmi/vmi_linux_arm64.c vmi/vmi_linux_percpu.c vmi/vmi_btf.c vmi/vmi_kallsyms.c vmi/vmi_modules.c vmi/vmi_elf.c \
                     vmi/vmi_elf_phdr.c vmi/vmi_file.c vmi/vmi_symtab.c vmi/vmi_sites.c
FUZZ_SRCS_elf     := vmi/vmi_elf.c vmi/vmi_elf_phdr.c vmi/vmi_file.c vmi/vmi_symtab.c vmi/vmi_sites.c
FUZZ_SRCS_btf     := vmi/vmi_btf.c host/trace/fevent_btf.c host/trace/fevent.c host/trace/escape.c \
                     vmi/vmi_symtab.c
FUZZ_SRCS_accel   := host/qemu/qemu_accel.c
FUZZ_SRCS_e820    := vmi/vmi_linux_e820.c
FUZZ_SRCS_memmap  := host/qemu/qemu_memmap.c host/qemu/qemu_mem.c host/vmm/proc_mem.c host/qemu/qmp_json.c host/vmm/tcp.c \
                     host/trace/clock.c
FUZZ_SRCS_qemu_cmdline := host/qemu/qemu_cmdline.c
FUZZ_SRCS_vcpu_threads := host/qemu/qemu_vcpu_threads.c host/qemu/qmp_json.c
FUZZ_SRCS_kallsyms := vmi/vmi_kallsyms.c
FUZZ_SRCS_kvm_proc := host/vmm/kvm_proc.c host/vmm/proc_maps.c
FUZZ_SRCS_kimage  := vmi/vmi_kimage.c
FUZZ_SRCS_stub_agg := host/trace/stub_agg.c host/trace/probe.c vmi/vmi_sites.c vmi/vmi_symtab.c
FUZZ_LIBS_kimage  := -lz
FUZZ_SRCS_x86_reloc :=
FUZZ_SRCS_tracedat := host/sink/tracedat_read.c vmi/vmi_file.c host/sink/tracedat_replay.c host/sink/writer.c host/trace/ring.c \
                      host/sink/sink_function.c host/sink/sink_graph.c host/sink/sink_io.c host/sink/out_fail.c \
                      host/sink/sink_record.c host/trace/fevent.c host/trace/escape.c vmi/vmi_symtab.c
FUZZ_LIBS_tracedat := $(shell pkg-config --cflags --libs libtracecmd libtraceevent)
FUZZ_SRCS_viz_sinks := host/sink/sink_chrome.c host/sink/sink_folded.c host/sink/sink_json.c host/sink/task_table.c \
                       host/sink/sink_function.c \
                       host/sink/sink_io.c host/sink/out_fail.c host/sink/sink_record.c host/trace/fevent.c \
                       host/trace/escape.c vmi/vmi_symtab.c
FUZZ_SRCS_session := host/session/session_file.c host/trace/text_check.c host/trace/escape.c vmi/vmi_file.c host/tap/expect.c host/tap/profile.c host/trace/probe.c \
                     host/sink/sink_record.c \
                     vmi/vmi_sites.c vmi/vmi_symtab.c
FUZZ_SRCS_event_filter := host/trace/event_filter.c host/trace/filter.c host/trace/fevent.c \
                          host/trace/escape.c vmi/vmi_symtab.c vmi/vmi_sites.c
FUZZ_SRCS_trigger_stack := host/trace/trigger.c host/sink/sink_trigger.c host/sink/sink_function.c \
                           host/sink/sink_io.c host/sink/out_fail.c host/trace/fevent.c host/trace/escape.c \
                           vmi/vmi_symtab.c
FUZZ_LIBS_sysmap  := -lelf -lbpf
FUZZ_LIBS_btf     := -lbpf
FUZZ_LIBS_elf     := -lelf
# arch/ (the ISA tables every fuzzer may reach through arch.h) and its decoder, and host/util (the
# message formatting and peer escaping every layer's error lines go through), in each
FUZZ_ARCH    := $(wildcard arch/*.c) $(wildcard arch/x86/*.c) $(wildcard arch/arm64/*.c) $(wildcard host/util/*.c)
FUZZ_BINS    := $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
define FUZZ_RULE
$(BUILD)/fuzz/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(FUZZ_SRCS_$(1)) $(FUZZ_ARCH) $$(wildcard */*.h */*/*.h) | $(DEPS)
	@mkdir -p $$(@D)
	clang $(FUZZ_CFLAGS) -o $$@ $$< $(FUZZ_SRCS_$(1)) $(FUZZ_ARCH) $(FUZZ_LIBS_$(1)) -lZydis
endef
$(foreach f,$(FUZZERS),$(eval $(call FUZZ_RULE,$(f))))
fuzz: $(FUZZ_BINS)
	@for f in $(FUZZERS); do \
		mkdir -p $(BUILD)/fuzz/corpus/$$f; \
		echo "== fuzz_$$f, $(FUZZ_SECONDS) s"; \
		$(BUILD)/fuzz/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -max_len=65536 \
			-print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/ \
			$(BUILD)/fuzz/corpus/$$f tests/fuzz/corpus/$$f || exit 1; \
	done
fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=5
# Every seed once, no mutation: deterministic, for CI (the regress-* seeds are past findings).
fuzz-replay: $(FUZZ_BINS)
	@for f in $(FUZZERS); do \
		out=$$($(BUILD)/fuzz/fuzz_$$f -runs=0 -artifact_prefix=$(BUILD)/fuzz/ \
			tests/fuzz/corpus/$$f 2>&1); st=$$?; \
		[ $$st -eq 0 ] || { printf '%s\n' "$$out"; exit 1; }; \
		echo "fuzz_$$f: $$(ls tests/fuzz/corpus/$$f | wc -l) seeds replayed"; \
	done
.PHONY: fuzz-smoke fuzz-replay
# ---- end of make fuzz

# ---- make check-asan (issue #10): hvtrace, the library and the tests built again in build-asan/ by
# clang with ASan + UBSan (SAN=1 above), then every unit test and every embedded-VMM test, whose real
# traces (function, function_graph, events, stub probes, signals, --duration, bad input, hostile
# guests) run the ASan hvtrace on the guests of the normal build (`all`; GCC: they need -mnop-mcount). Leak detection is on. Each
# report is fatal and is also written under build-asan/reports/: any file there fails the check,
# whichever process (test or hvtrace) it came from. clang because its UBSan honours log_path (GCC's
# writes to stderr only, where a child's report could go unseen).
ASAN_BUILD   := build-asan
ASAN_REPORTS := $(abspath $(ASAN_BUILD))/reports
ASAN_ENV     := ASAN_OPTIONS=log_path=$(ASAN_REPORTS)/asan:detect_leaks=1 \
		UBSAN_OPTIONS=log_path=$(ASAN_REPORTS)/ubsan:print_stacktrace=1
ASAN_GUEST   ?= $(GUEST)
$(BUILD)/hvtrace: $(BUILD)/host/cli/main.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS)
check-asan: all
	$(MAKE) BUILD=$(ASAN_BUILD) SAN=1 CC=clang ASAN_GUEST=$(GUEST) asan-run
asan-run: $(BUILD)/hvtrace $(UNIT_BINS) $(KVM_BINS)
	@rm -rf $(ASAN_REPORTS) && mkdir -p $(ASAN_REPORTS)
	@HVTRACE=$(BUILD)/hvtrace GUEST=$(ASAN_GUEST) $(ASAN_ENV) scripts/run-tests.sh $(UNIT_BINS) \
		$(KVM_BINS) $(STUB_RUNS); st=$$?; \
	if [ -n "$$(ls -A $(ASAN_REPORTS))" ]; then \
		cat $(ASAN_REPORTS)/*; echo "check-asan: sanitizer reports (above, in $(ASAN_REPORTS))"; \
		exit 1; \
	fi; exit $$st
.PHONY: check-asan asan-run
# ---- end of check-asan

format:
	clang-format -i $$(git ls-files '*.c' '*.h' | grep -v '^tests/guest/')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) hvtrace

.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- make bench-host (issue 39): the host pipeline alone (rings -> writer -> sink, one core) on a
# recorded ring stream: a real all-functions run's trace.dat, recorded once into $(BUILD)/bench-host
# by tests/bench/bench-host.sh (BENCH_HOST_DAT=FILE: another recording), read back, then replayed
# through the trace.dat, text and jsonl sinks; prints one line of M records/s.
$(BUILD)/tests/bench_host: tests/bench/bench_host.c $(LIB) | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -o $@ $< $(LIB) $(LIB_LIBS)

bench-host: hvtrace guest $(BUILD)/tests/bench_host
	tests/bench/bench-host.sh $(GUEST_DIR) $(BUILD)/bench-host $(BUILD)/tests/bench_host
.PHONY: bench-host
