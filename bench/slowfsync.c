/* LD_PRELOAD shim: a slow disk. Every fsync/fdatasync first sleeps
 * SLOWFSYNC_US microseconds (default 2000), then does the real call.
 * Used by bench/slow_disk.sh to give keel-server and redis-server the
 * same slow fsync.  Build: gcc -shared -fPIC -O2 -o slowfsync.so slowfsync.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static long delay_us(void) {
    static long us = -1;
    if (us < 0) {
        const char *s = getenv("SLOWFSYNC_US");
        us = s ? atol(s) : 2000;
    }
    return us;
}

static void pause_for_disk(void) {
    long us = delay_us();
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    pause_for_disk();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    pause_for_disk();
    return real(fd);
}
