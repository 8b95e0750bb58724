#include "host/kvm/acpi.h"
#include "host/tracedat/le_bytes.h"

#include <string.h>

#define RSDP_OFF 0x000
#define XSDT_OFF 0x040
#define FADT_OFF 0x080
#define DSDT_OFF 0x200
#define MADT_OFF 0x280 /* after the DSDT's 100 bytes */
#define HDR_LEN 36
#define FADT_LEN 276
#define FADT_HW_REDUCED (1u << 20)
#define FADT_RESET_REG_SUP (1u << 10)
#define FADT_PWR_BUTTON (1u << 4) /* set: no fixed power button */
#define FADT_SLP_BUTTON (1u << 5)
#define BOOT_ARCH_VGA_NOT_PRESENT (1u << 2)
#define BOOT_ARCH_NO_CMOS_RTC (1u << 5) /* Linux then probes no RTC at ports 0x70/0x71 */
#define IOAPIC_ADDR 0xfec00000u
#define LAPIC_ADDR 0xfee00000u

static uint8_t checksum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len--)
		s = (uint8_t)(s + *p++);
	return (uint8_t)-s;
}

/* The common table header; the checksum is set by finish(). */
static void header(uint8_t *t, const char sig[4], uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	le_put32(t + 4, len);
	t[8] = rev;
	memcpy(t + 10, "HVTRAC", 6);
	memcpy(t + 16, "HVTRACE ", 8);
	le_put32(t + 24, 1);
	memcpy(t + 28, "HVTR", 4);
	le_put32(t + 32, 1);
}

static void finish(uint8_t *t, uint32_t len)
{
	t[9] = 0;
	t[9] = checksum(t, len);
}

/* A Generic Address Structure: an 8-bit I/O port. */
static void gas_io8(uint8_t *g, uint16_t port)
{
	g[0] = 1; /* SystemIO */
	g[1] = 8;
	g[2] = 0;
	g[3] = 1; /* byte access */
	le_put64(g + 4, port);
}

size_t acpi_build(uint8_t *buf, uint64_t gpa, unsigned nr_cpus)
{
	/* Name (_S5, Package (4) { 5, 0, 0, 0 }) */
	static const uint8_t s5[] = {0x08, '_', 'S', '5', '_', 0x12, 0x07, 0x04,
				     0x0a, ACPI_S5_TYP, 0x00, 0x00, 0x00};
	/* Device (\_SB.COM1) { Name (_HID, EisaId ("PNP0501")) Name (_UID, One)
	 *   Name (_CRS, ResourceTemplate () { IO (Decode16, 0x3F8, 0x3F8, 1, 8) IRQNoFlags () {4} }) }
	 * In hardware-reduced mode Linux sets up no legacy ISA interrupts: it learns COM1's IRQ from
	 * here (8250_pnp), without which the UART's interrupt has no handler and tty output stalls. */
	static const uint8_t com1[] = {
		0x5b, 0x82, 0x31, '\\', 0x2e, '_', 'S', 'B', '_', 'C', 'O', 'M', '1',
		0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x05, 0x01,
		0x08, '_', 'U', 'I', 'D', 0x01,
		0x08, '_', 'C', 'R', 'S', 0x11, 0x10, 0x0a, 0x0d,
		0x47, 0x01, 0xf8, 0x03, 0xf8, 0x03, 0x01, 0x08, /* IO */
		0x22, 1 << ACPI_COM1_IRQ, 0x00,			/* IRQNoFlags */
		0x79, 0x00,					/* end tag */
	};
	uint8_t *rsdp = buf + RSDP_OFF, *xsdt = buf + XSDT_OFF, *fadt = buf + FADT_OFF;
	uint8_t *dsdt = buf + DSDT_OFF, *madt = buf + MADT_OFF;
	uint32_t dsdt_len = HDR_LEN + sizeof(s5) + sizeof(com1), madt_len;

	if (nr_cpus < 1)
		nr_cpus = 1;
	if (nr_cpus > ACPI_MAX_CPUS)
		nr_cpus = ACPI_MAX_CPUS;
	memset(buf, 0, ACPI_AREA_SIZE);

	header(dsdt, "DSDT", dsdt_len, 2);
	memcpy(dsdt + HDR_LEN, s5, sizeof(s5));
	memcpy(dsdt + HDR_LEN + sizeof(s5), com1, sizeof(com1));
	finish(dsdt, dsdt_len);

	header(fadt, "FACP", FADT_LEN, 6);
	le_put32(fadt + 40, (uint32_t)(gpa + DSDT_OFF));
	le_put16(fadt + 109, BOOT_ARCH_VGA_NOT_PRESENT | BOOT_ARCH_NO_CMOS_RTC); /* no 8042 bit either */
	le_put32(fadt + 112, FADT_HW_REDUCED | FADT_RESET_REG_SUP | FADT_PWR_BUTTON | FADT_SLP_BUTTON);
	gas_io8(fadt + 116, ACPI_RESET_PORT);
	fadt[128] = ACPI_RESET_VALUE;
	fadt[131] = 0; /* minor version */
	le_put64(fadt + 140, gpa + DSDT_OFF);
	gas_io8(fadt + 244, ACPI_SLEEP_CTL_PORT);
	gas_io8(fadt + 256, ACPI_SLEEP_STS_PORT);
	memcpy(fadt + 268, "HVTRACE\0", 8); /* hypervisor vendor identity */
	finish(fadt, FADT_LEN);

	madt_len = HDR_LEN + 8 + 8 * nr_cpus + 12;
	header(madt, "APIC", madt_len, 3);
	le_put32(madt + 36, LAPIC_ADDR);
	le_put32(madt + 40, 1); /* PCAT_COMPAT: 8259s present */
	for (unsigned i = 0; i < nr_cpus; i++) {
		uint8_t *e = madt + 44 + 8 * i;

		e[0] = 0; /* processor local APIC */
		e[1] = 8;
		e[2] = (uint8_t)i;
		e[3] = (uint8_t)i;
		le_put32(e + 4, 1); /* enabled */
	}
	uint8_t *io = madt + 44 + 8 * nr_cpus;

	io[0] = 1; /* I/O APIC */
	io[1] = 12;
	io[2] = (uint8_t)nr_cpus;
	le_put32(io + 4, IOAPIC_ADDR);
	le_put32(io + 8, 0);
	finish(madt, madt_len);

	header(xsdt, "XSDT", HDR_LEN + 16, 1);
	le_put64(xsdt + HDR_LEN, gpa + FADT_OFF);
	le_put64(xsdt + HDR_LEN + 8, gpa + MADT_OFF);
	finish(xsdt, HDR_LEN + 16);

	memcpy(rsdp, "RSD PTR ", 8);
	memcpy(rsdp + 9, "HVTRAC", 6);
	rsdp[15] = 2;
	le_put32(rsdp + 20, 36);
	le_put64(rsdp + 24, gpa + XSDT_OFF);
	rsdp[8] = checksum(rsdp, 20);
	rsdp[32] = checksum(rsdp, 36);
	return MADT_OFF + madt_len;
}
