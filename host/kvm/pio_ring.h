/* KVM's coalesced MMIO/PIO ring as the VMM consumes it: KVM appends the writes to a registered zone
 * at `last` without an exit; the VMM replays them from `first` and moves `first` on. */
#ifndef HVT_PIO_RING_H
#define HVT_PIO_RING_H

#include <linux/kvm.h>
#include <stdint.h>

#define PIO_RING_PAGE 4096 /* the ring takes one page (x86) */
#define PIO_RING_MAX                                                                               \
	((PIO_RING_PAGE - sizeof(struct kvm_coalesced_mmio_ring)) /                                \
	 sizeof(struct kvm_coalesced_mmio))

/* Calls @out(@ctx, port - @base, byte) for each entry queued since the last drain, in order, that
 * is a port write to [@base, @base + @nr) (other entries are consumed and skipped), then marks them
 * consumed. A ring whose indices are out of range is left alone. Returns the entries consumed (at
 * most PIO_RING_MAX - 1). The caller serialises drains of one ring. */
unsigned pio_ring_drain(struct kvm_coalesced_mmio_ring *ring, uint16_t base, unsigned nr,
			void (*out)(void *ctx, unsigned off, uint8_t v), void *ctx);

#endif
