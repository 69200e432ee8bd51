/* What the worker tests and the worker fuzzer share: the wire format's little-endian fields and
   frame header (as docs/clusters.md documents them), a loopback connection, and a
   worker log kept in memory. Each includer gets its own copies (static inline). Needs
   _POSIX_C_SOURCE 200809L defined before any include. */
#ifndef DATAFLOW_TESTS_WIRE_H
#define DATAFLOW_TESTS_WIRE_H
#include "../dataflow.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static inline void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static inline void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }

/* A frame header: magic, version, type, payload length, flags, and its checksum. */
static inline void header(unsigned char *h, unsigned version, unsigned type, uint64_t len, uint32_t flags) {
    put32(h, 0x31574644u);
    h[4] = (unsigned char)version; h[5] = (unsigned char)(version >> 8);
    h[6] = (unsigned char)type; h[7] = (unsigned char)(type >> 8);
    put64(h + 8, len);
    put32(h + 16, flags);
    uint32_t c = df_crc32c(0, h, 20);
    put32(h + 20, ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

/* A connection to 127.0.0.1:port (TCP_NODELAY), or -1. A connect a signal interrupts goes on
   in the background: it is waited for (up to 5 s). */
static inline int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        struct pollfd p = {fd, POLLOUT, 0};
        int r = -1, e = errno;
        socklen_t el = sizeof e;
        if (e == EINTR) {
            do r = poll(&p, 1, 5000); while (r < 0 && errno == EINTR);
            if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0) r = 0;
        }
        if (r != 0) { close(fd); fd = -1; errno = e; }
    }
    int one = 1;
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* The lines a worker logged (df_worker_options.log = log_to_book, .log_user = the book). */
typedef struct logbook { pthread_mutex_t mu; char lines[64][256]; int n; } logbook;
static inline void log_to_book(void *user, const char *line) {
    logbook *b = (logbook *)user;
    pthread_mutex_lock(&b->mu);
    if (b->n < 64) snprintf(b->lines[b->n], sizeof b->lines[b->n], "%s", line);
    b->n++;
    pthread_mutex_unlock(&b->mu);
}
static inline int book_has(logbook *b, const char *needle) {
    pthread_mutex_lock(&b->mu);
    int found = 0;
    for (int i = 0; i < b->n && i < 64; i++) if (strstr(b->lines[i], needle)) found = 1;
    pthread_mutex_unlock(&b->mu);
    return found;
}
#endif
