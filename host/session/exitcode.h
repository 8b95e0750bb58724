/* hvtrace's exit statuses (docs/usage.md, "Exit status"). A guest that writes V to port 0xf4 makes
 * hvtrace exit with V (1 if V is non-zero but its low byte is 0). */
#ifndef HVT_EXITCODE_H
#define HVT_EXITCODE_H

#define EXIT_BAD_INPUT 2   /* bad arguments or guest image; the guest was not started */
#define EXIT_GUEST_FAULT 3 /* triple fault, unexpected exit, all vCPUs halted */
#define EXIT_HOST_ERROR 4  /* KVM or the host failed */
#define EXIT_GUEST_PANIC 5 /* Linux guests: "Kernel panic" on the console */
#define EXIT_QEMU_FAILED 6 /* QEMU could not start, or died, or its gdbstub failed */
#define EXIT_EXPECT 7	   /* an --expect-call / --expect-no-call was not met */
#define EXIT_TIMEOUT 124   /* --timeout expired */
#define EXIT_SIGNAL_BASE 128 /* + signal number: SIGINT 130, SIGTERM 143 */

#endif
