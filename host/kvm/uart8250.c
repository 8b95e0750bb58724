#include "host/kvm/uart8250.h"

#include <string.h>

#define LCR_DLAB 0x80
#define IER_THRI 0x02
#define IIR_NO_INT 0x01
#define IIR_THRI 0x02
#define IIR_FIFO 0xc0
#define FCR_FIFO 0x01
#define MCR_LOOP 0x10
#define LSR_THRE 0x20
#define LSR_TEMT 0x40

void uart_init(struct uart8250 *u)
{
	memset(u, 0, sizeof(*u));
	u->dll = 12; /* 9600 baud */
}

static uint8_t iir(const struct uart8250 *u)
{
	uint8_t fifo = u->fcr & FCR_FIFO ? IIR_FIFO : 0;

	return fifo | ((u->ier & IER_THRI) && u->thr_ipending ? IIR_THRI : IIR_NO_INT);
}

static uint8_t msr(const struct uart8250 *u)
{
	uint8_t m = u->mcr;

	if (!(m & MCR_LOOP))
		return 0xb0; /* DCD, DSR, CTS: a terminal is there */
	/* loopback: RTS->CTS, DTR->DSR, OUT1->RI, OUT2->DCD */
	return (uint8_t)((m & 0x02) << 3 | (m & 0x01) << 5 | (m & 0x04) << 4 | (m & 0x08) << 4);
}

uint8_t uart_read(struct uart8250 *u, unsigned off)
{
	uint8_t v;

	switch (off & 7) {
	case 0: return u->lcr & LCR_DLAB ? u->dll : 0; /* nothing is ever received */
	case 1: return u->lcr & LCR_DLAB ? u->dlm : u->ier;
	case 2:
		v = iir(u);
		if ((v & 0x0f) == IIR_THRI)
			u->thr_ipending = false; /* reading IIR acknowledges THR empty */
		return v;
	case 3: return u->lcr;
	case 4: return u->mcr;
	case 5: return LSR_THRE | LSR_TEMT; /* transmission is instant */
	case 6: return msr(u);
	default: return u->scr;
	}
}

int uart_write(struct uart8250 *u, unsigned off, uint8_t v)
{
	switch (off & 7) {
	case 0:
		if (u->lcr & LCR_DLAB) {
			u->dll = v;
			return -1;
		}
		u->thr_ipending = true; /* sent at once: the holding register is empty again */
		return u->mcr & MCR_LOOP ? -1 : v;
	case 1:
		if (u->lcr & LCR_DLAB) {
			u->dlm = v;
			return -1;
		}
		/* enabling the THR-empty interrupt while THR is empty raises it */
		if ((v & IER_THRI) && !(u->ier & IER_THRI))
			u->thr_ipending = true;
		u->ier = v & 0x0f;
		return -1;
	case 2: u->fcr = v & 0xc9; return -1;
	case 3: u->lcr = v; return -1;
	case 4: u->mcr = v & 0x1f; return -1;
	case 7: u->scr = v; return -1;
	default: return -1; /* LSR, MSR: read-only */
	}
}

bool uart_irq(const struct uart8250 *u)
{
	return !(iir(u) & IIR_NO_INT);
}
