# hvtrace: `make` builds ./hvtrace and the test guest; `make test` runs every test; `make bench` measures.
# Missing Debian build dependencies are installed first (scripts/deps.sh, as root).

CC      ?= gcc
BUILD   := build
CFLAGS  := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-missing-field-initializers -pthread \
           -D_GNU_SOURCE -MMD -MP -I.
LDFLAGS := -pthread
# Evaluated lazily, after $(DEPS) has installed pkg-config and the -dev packages.
LIB_CFLAGS   = $(shell pkg-config --cflags libelf libbpf libvirt libvirt-qemu)
LIB_LIBS     = $(shell pkg-config --libs libelf libbpf libvirt libvirt-qemu)
CMOCKA_LIBS  = $(shell pkg-config --libs cmocka)

DEPS := $(BUILD)/.deps-installed

LIB_SRCS := $(wildcard arch/x86/*.c) $(wildcard vmi/*.c) $(wildcard guest-stub/*.c) \
            $(filter-out host/cli/main.c,$(wildcard host/*/*.c))
LIB_ASMS := $(wildcard guest-stub/*.S)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(LIB_ASMS:%.S=$(BUILD)/%.o)
LIB      := $(BUILD)/libhvtrace.a

# Freestanding test guest: workloads are instrumented, the runtime is not.
GUEST_DIR    := $(BUILD)/guest
GUEST        := $(GUEST_DIR)/test-guest.elf
GUEST_VARIANTS := $(GUEST_DIR)/test-guest-loop.elf $(GUEST_DIR)/test-guest-fault.elf \
                  $(GUEST_DIR)/test-guest-hostile-cr3.elf
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
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:%.c=$(BUILD)/%)
KVM_SRCS  := $(wildcard tests/kvm/test_*.c)
KVM_BINS  := $(KVM_SRCS:%.c=$(BUILD)/%)
QEMU_SRCS := $(wildcard tests/qemu/test_*.c)
QEMU_BINS := $(QEMU_SRCS:%.c=$(BUILD)/%)
# The embedded-VMM integration tests once more with --probe auto (stub probes wherever they apply).
STUB_RUNS := $(foreach t,function graph lifecycle events,HVTRACE_TEST_PROBE=auto,$(BUILD)/tests/kvm/test_kvm_$(t))
TEST_COMMON := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/common/*.c))
TEST_LIB    := $(BUILD)/tests/libtestcommon.a
KVM_COMMON  := $(BUILD)/tests/kvm/kvm_common.o

.PHONY: all check-layers test unit-test kvm-test qemu-test bench clean format guest fuzz
all: hvtrace $(GUEST) $(GUEST_VARIANTS)

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
	$(CC) -I. -c $< -o $@
	@if readelf -r $@ | grep -q R_X86; then echo "$<: the stub must need no relocations" >&2; rm -f $@; exit 1; fi

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
# Variants for the tests: `loop` never ends by itself, `fault` triple-faults on cpu0.
$(GUEST_DIR)/test-guest-%.elf: $(GUEST_DIR)/start.o $(GUEST_DIR)/runtime-%.o $(GUEST_DIR)/workloads.o \
			       $(GUEST_DIR)/tailcall.o tests/guest/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)

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
all kvm-test test: $(HOSTILE_DATA_GUEST)
$(GUEST_DIR)/hostile_data.o: tests/guest/hostile_data.c guest-stub/stub_abi.h | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(GUEST_PG) -c $< -o $@
$(HOSTILE_DATA_GUEST): $(GUEST_DIR)/start.o $(GUEST_DIR)/hostile_data.o tests/guest/guest.ld
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

unit-test: $(UNIT_BINS) $(GUEST)
	@$(TEST_ENV) scripts/run-tests.sh $(UNIT_BINS)

kvm-test: hvtrace $(GUEST) $(GUEST_VARIANTS) $(KVM_BINS)
	@$(TEST_ENV) scripts/run-tests.sh $(KVM_BINS) $(STUB_RUNS)

qemu-test: hvtrace $(QEMU_BINS) guest
	@$(TEST_ENV) scripts/run-tests.sh $(QEMU_BINS)

# The include graph: layers include only downward, no include loop (scripts/check-layers.py).
check-layers: | $(DEPS)
	python3 scripts/check-layers.py

# The layers, the unit tests, then the integration tests: the freestanding guest in the embedded VMM (KVM),
# then the Linux guest under QEMU (launched, and attached to through libvirt).
test: check-layers hvtrace $(GUEST) $(GUEST_VARIANTS) $(UNIT_BINS) $(KVM_BINS) $(QEMU_BINS) guest
	@$(TEST_ENV) scripts/run-tests.sh $(UNIT_BINS) $(KVM_BINS) $(STUB_RUNS) $(QEMU_BINS)

bench: hvtrace $(BUILD)/tests/bench $(BENCH_GUEST) guest
	$(BUILD)/tests/bench $(BENCH_GUEST)
	tests/bench/bench-qemu.sh $(GUEST_DIR)
	tests/bench/bench-linux.sh $(GUEST_DIR)

$(BUILD)/tests/bench: tests/bench/bench.c $(LIB) $(BENCH_GUEST) | $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -o $@ $< $(LIB) $(LIB_LIBS)

# The Linux test guest: Debian's cloud kernel, its System.map, busybox initramfs (scripts/fetch-guest.sh).
LINUX_GUEST := $(GUEST_DIR)/vmlinuz $(GUEST_DIR)/System.map $(GUEST_DIR)/config \
               $(GUEST_DIR)/initramfs.cpio.gz
guest: | $(DEPS)
	bash scripts/fetch-guest.sh $(GUEST_DIR)

# libFuzzer on the event spec parser (clang), for FUZZ_SECONDS (default 60).
FUZZ_SECONDS ?= 60
FUZZ_BIN := $(BUILD)/fuzz/fuzz_fevent
$(FUZZ_BIN): tests/fuzz/fuzz_fevent.c host/trace/fevent.c host/trace/fevent.h host/trace/escape.c \
	     vmi/vmi_symtab.c | $(DEPS)
	@mkdir -p $(@D) $(BUILD)/fuzz/corpus
	clang -std=gnu11 -I. -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -o $@ \
		tests/fuzz/fuzz_fevent.c host/trace/fevent.c host/trace/escape.c vmi/vmi_symtab.c
fuzz: $(FUZZ_BIN)
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $(BUILD)/fuzz/corpus \
		tests/fuzz/corpus

format:
	clang-format -i $$(git ls-files '*.c' '*.h' | grep -v '^tests/guest/')

clean:
	rm -rf $(BUILD) hvtrace

.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
