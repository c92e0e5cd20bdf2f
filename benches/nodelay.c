/*
 * TCP_NODELAY on every connection a server accepts, preloaded into the
 * benchmarks' local S3 server (s3s-fs, benches/remote.py).
 *
 * Why: s3s-fs leaves Nagle's algorithm on and writes a response as its
 * headers, then 4 KiB chunks of the file. Nagle holds each chunk until the
 * previous write is acknowledged, and the client delays that ACK by up to
 * 40 ms, so most responses on a reused connection wait about 40 ms (100
 * sequential GETs of 5 KiB manifests: 4.6 s without this, 0.32 s with it).
 * Production object stores and HTTP servers set TCP_NODELAY; with it the
 * stand-in times what the tools do, not that interaction.
 *
 *     gcc -O2 -shared -fPIC -o nodelay.so benches/nodelay.c -ldl
 *     LD_PRELOAD=$PWD/nodelay.so s3s-fs ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static int nodelay(int fd) {
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

int accept(int s, struct sockaddr *a, socklen_t *l) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real) real = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    return nodelay(real(s, a, l));
}

int accept4(int s, struct sockaddr *a, socklen_t *l, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real) real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    return nodelay(real(s, a, l, flags));
}
