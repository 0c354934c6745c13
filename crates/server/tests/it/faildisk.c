/* LD_PRELOAD shim: a failing disk, for the append-only log's error tests.
 *
 * While the file named by $FAILDISK_CONTROL exists, calls on files whose
 * path contains $FAILDISK_MATCH (default ".aof") fail. The control file's
 * first byte chooses which: 'w' makes write/writev fail with ENOSPC (disk
 * full), 'f' makes fsync/fdatasync fail with EIO, 's' makes each
 * fsync/fdatasync take $FAILDISK_SLOW_MS longer (default 200: a slow
 * disk). Other files, sockets and the terminal are never touched.
 *
 * Built by the tests: gcc -shared -fPIC -O2 -o faildisk.so faildisk.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* The mode asked for right now: 0 (none), 'w' or 'f'. Uses raw syscalls
 * only through the real functions, never the wrapped ones. */
static char mode_now(void) {
    const char *control = getenv("FAILDISK_CONTROL");
    if (!control) return 0;
    int fd = open(control, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char c = 0;
    if (read(fd, &c, 1) != 1) c = 0;
    close(fd);
    return c;
}

static int is_target(int fd) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    const char *match = getenv("FAILDISK_MATCH");
    return strstr(path, match ? match : ".aof") != NULL;
}

static int fails(int fd, char which) {
    return mode_now() == which && is_target(fd);
}

ssize_t write(int fd, const void *buf, size_t count) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (fd > 2 && fails(fd, 'w')) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd, buf, count);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    static ssize_t (*real)(int, const struct iovec *, int);
    if (!real) real = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    if (fd > 2 && fails(fd, 'w')) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd, iov, iovcnt);
}

static void slow_down(int fd) {
    if (!fails(fd, 's')) return;
    const char *ms = getenv("FAILDISK_SLOW_MS");
    long delay = ms ? atol(ms) : 200;
    struct timespec ts = { delay / 1000, (delay % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (fails(fd, 'f')) {
        errno = EIO;
        return -1;
    }
    slow_down(fd);
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (fails(fd, 'f')) {
        errno = EIO;
        return -1;
    }
    slow_down(fd);
    return real(fd);
}
