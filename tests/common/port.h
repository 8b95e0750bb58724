/* Loopback TCP ports for the servers a test starts (QMP, gdbstub). */
#ifndef HVT_TESTS_PORT_H
#define HVT_TESTS_PORT_H

/* A TCP port on 127.0.0.1 nothing listens on right now (the kernel's pick for a bind to port 0);
 * fails the running cmocka test, or exits outside one, if the socket calls fail. */
int hv_free_port(void);

#endif
