#include "host/kvm/pio_ring.h"

unsigned pio_ring_drain(struct kvm_coalesced_mmio_ring *ring, uint16_t base, unsigned nr,
			void (*out)(void *ctx, unsigned off, uint8_t v), void *ctx)
{
	uint32_t first = ring->first, last = __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE);
	unsigned n = 0;

	if (first >= PIO_RING_MAX || last >= PIO_RING_MAX)
		return 0; /* not a ring KVM keeps: leave it */
	while (first != last) {
		const struct kvm_coalesced_mmio *e = &ring->coalesced_mmio[first];

		if (e->pio && e->len >= 1 && e->phys_addr >= base && e->phys_addr - base < nr)
			out(ctx, (unsigned)(e->phys_addr - base), e->data[0]);
		first = (first + 1) % PIO_RING_MAX;
		n++;
	}
	__atomic_store_n(&ring->first, first, __ATOMIC_RELEASE);
	return n;
}
