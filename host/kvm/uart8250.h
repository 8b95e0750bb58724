/* A 16550A UART as Linux's 8250 driver sees it: transmit only (nothing is ever received), the
 * divisor latch, IER/IIR/FCR/LCR/MCR/LSR/MSR/scratch, loopback's modem-status mirror, and the THR-empty
 * interrupt. Pure state machine: the caller serialises the calls and drives the IRQ line. */
#ifndef HVT_UART8250_H
#define HVT_UART8250_H

#include <stdbool.h>
#include <stdint.h>

#define UART_COM1 0x3f8
#define UART_COM1_IRQ 4
#define UART_NR_PORTS 8

struct uart8250 {
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	bool thr_ipending; /* a THR-empty interrupt waits to be read from IIR */
};

/* Reset state (as after power-on: divisor 12, nothing pending). */
void uart_init(struct uart8250 *u);

/* A read of register @off (0..7). */
uint8_t uart_read(struct uart8250 *u, unsigned off);

/* A write of @v to register @off (0..7). Returns the byte transmitted (0..255), or -1. */
int uart_write(struct uart8250 *u, unsigned off, uint8_t v);

/* The level of the UART's interrupt line now. */
bool uart_irq(const struct uart8250 *u);

#endif
