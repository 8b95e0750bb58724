/* The x86_64 register layout of QEMU's gdbstub: the `g` reply's order and the `P`/`p` numbers. */
#ifndef HVT_X86_GDB_H
#define HVT_X86_GDB_H

/* Register numbers of QEMU's x86_64 gdbstub, QEMU 7.2. In the `g` reply, registers 33..65 (st0-7,
 * x87 control, xmm0-15, mxcsr; 372 bytes) follow efer. */
enum x86_gdb_reg {
	X86_GDB_RAX,
	X86_GDB_RBX,
	X86_GDB_RCX,
	X86_GDB_RDX,
	X86_GDB_RSI,
	X86_GDB_RDI,
	X86_GDB_RBP,
	X86_GDB_RSP,
	X86_GDB_R8,
	X86_GDB_R9,
	X86_GDB_R10,
	X86_GDB_R11,
	X86_GDB_R12,
	X86_GDB_R13,
	X86_GDB_R14,
	X86_GDB_R15,
	X86_GDB_RIP,	/* 16 */
	X86_GDB_EFLAGS, /* 17, 4 bytes */
	X86_GDB_CS,	/* 18..23, 4 bytes each */
	X86_GDB_SS,
	X86_GDB_DS,
	X86_GDB_ES,
	X86_GDB_FS,
	X86_GDB_GS,
	X86_GDB_FS_BASE, /* 24 */
	X86_GDB_GS_BASE,
	X86_GDB_K_GS_BASE,
	X86_GDB_CR0, /* 27 */
	X86_GDB_CR2,
	X86_GDB_CR3,
	X86_GDB_CR4,
	X86_GDB_CR8,
	X86_GDB_EFER, /* 32 */
	X86_GDB_NR_REGS,
};

/* Where the `g` reply's system registers land in struct gdb_regs' sys[]: their register number
 * minus X86_GDB_CS (sys[X86_GDB_SYS(X86_GDB_CR3)] is CR3). */
#define X86_GDB_SYS(regno) ((regno)-X86_GDB_CS)

/* Bytes of the `g` reply's prefix that the layout covers (rax .. efer). */
#define X86_GDB_DECODED_BYTES 236

struct arch_gdb_layout;

/* The table above as arch.h describes it (x86_gdb_layout.c). */
extern const struct arch_gdb_layout x86_gdb_layout;

#endif
