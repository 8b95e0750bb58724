/* The least ACPI a Linux guest of the embedded VMM needs to power off: RSDP -> XSDT -> FADT
 * (hardware-reduced, with a sleep control register at ACPI_SLEEP_CTL_PORT) and a MADT (one local
 * APIC per vCPU, the IOAPIC at 0xfec00000); the FADT's DSDT holds \_S5 and COM1 (a PNP0501 at
 * 0x3f8, IRQ ACPI_COM1_IRQ). Linux's power-off then writes ACPI_SLEEP_S5_VALUE to that port. Pure. */
#ifndef HVT_ACPI_H
#define HVT_ACPI_H

#include <stddef.h>
#include <stdint.h>

#define ACPI_SLEEP_CTL_PORT 0x600
#define ACPI_SLEEP_STS_PORT 0x601
#define ACPI_RESET_PORT 0xcf9 /* the FADT's reset register: Linux writes ACPI_RESET_VALUE */
#define ACPI_RESET_VALUE 0x06
#define ACPI_SLP_EN 0x20
#define ACPI_S5_TYP 5
#define ACPI_SLEEP_S5_VALUE (ACPI_S5_TYP << 2 | ACPI_SLP_EN)
#define ACPI_AREA_SIZE 0x1000 /* what acpi_build needs at most (ACPI_MAX_CPUS vCPUs) */
#define ACPI_MAX_CPUS 64
#define ACPI_COM1_IRQ 4 /* UART_COM1_IRQ */

/* Writes the tables into @buf (ACPI_AREA_SIZE bytes) for a guest that sees @buf at guest-physical
 * @gpa, with @nr_cpus (1..ACPI_MAX_CPUS) vCPUs. The RSDP is at @gpa. Returns the bytes used. */
size_t acpi_build(uint8_t *buf, uint64_t gpa, unsigned nr_cpus);

/* True if @v written to the sleep control register asks for S5 (power-off). */
static inline int acpi_is_s5(uint8_t v)
{
	return (v & ACPI_SLP_EN) && ((v >> 2) & 7) == ACPI_S5_TYP;
}

#endif
