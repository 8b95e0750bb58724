/* A TCP client connection, shared by the gdbstub and QMP clients. */
#ifndef HVT_TCP_H
#define HVT_TCP_H

/* Connects to @host:@service (any address family getaddrinfo gives). Returns the socket (close-on-exec)
 * or a negative errno: -EHOSTUNREACH when the name does not resolve (*@gai_err set), else the connect
 * error. */
int tcp_connect(const char *host, const char *service, int *gai_err);

#endif
