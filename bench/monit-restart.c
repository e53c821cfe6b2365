/* monit-restart.c — death → restart, in two parts, for bench/monit.sh.
 *
 *   monit-restart stamp FILE PROG ARG...
 *       the start program's first step: write CLOCK_MONOTONIC (ns) into FILE, exec PROG.
 *   monit-restart kill PIDFILE STAMPFILE ROUNDS GAP_MS NAME
 *       ROUNDS times: wait GAP_MS, read the live pid PIDFILE names, take the time, SIGKILL
 *       it, then wait (inotify on PIDFILE's directory, no polling) until PIDFILE names
 *       another live process. Per round: death → the stamp (the start program exec'd:
 *       the supervisor's part) and death → the new pid in PIDFILE (the start program's
 *       own time added). Prints one Markdown row: NAME, median and p90 of both, in ms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long read_num(const char *path) {
    char buf[64];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    return atoll(buf);
}

/* A live (not zombie) process. */
static int alive(long long pid) {
    char path[64], buf[512];
    if (pid <= 1) return 0;
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] && p[2] != 'Z' && p[2] != 'X';
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static void stats(long long *v, int n, double *med, double *p90) {
    qsort(v, n, sizeof *v, cmp);
    *med = n % 2 ? v[n / 2] / 1e6 : (v[n / 2 - 1] + v[n / 2]) / 2e6;
    int i = (int)(0.9 * n + 0.999999) - 1;
    if (i < 0) i = 0;
    if (i >= n) i = n - 1;
    *p90 = v[i] / 1e6;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "stamp")) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%lld\n", now());
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            if (write(fd, buf, n) != n) return 111;
            close(fd);
        }
        execv(argv[3], argv + 3);
        perror("monit-restart: exec");
        return 111;
    }
    if (argc != 7 || strcmp(argv[1], "kill")) {
        fprintf(stderr, "usage: monit-restart stamp FILE PROG ARG... | kill PIDFILE STAMPFILE ROUNDS GAP_MS NAME\n");
        return 100;
    }
    const char *pidfile = argv[2], *stampfile = argv[3], *name = argv[6];
    int rounds = atoi(argv[4]), gap = atoi(argv[5]);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", pidfile);
    int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (ino < 0 || inotify_add_watch(ino, dirname(dir), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
        perror("monit-restart: inotify");
        return 111;
    }
    long long *ex = calloc(rounds, sizeof *ex), *up = calloc(rounds, sizeof *up);
    int nex = 0;
    for (int r = 0; r < rounds; r++) {
        struct timespec g = {gap / 1000, (gap % 1000) * 1000000L};
        nanosleep(&g, NULL);
        long long old = -1;
        for (int i = 0; i < 6000 && !alive(old = read_num(pidfile)); i++) {
            struct timespec w = {0, 10000000L};
            nanosleep(&w, NULL);
        }
        if (!alive(old)) {
            fprintf(stderr, "monit-restart: %s: no live pid\n", pidfile);
            return 1;
        }
        char buf[4096];
        while (read(ino, buf, sizeof buf) > 0) {}
        long long t0 = now();
        kill((pid_t)old, SIGKILL);
        long long t2;
        for (;;) {
            long long p = read_num(pidfile);
            if (p > 0 && p != old && alive(p)) { t2 = now(); break; }
            struct pollfd pf = {ino, POLLIN, 0};
            if (poll(&pf, 1, 60000) == 0) {
                fprintf(stderr, "monit-restart: %s: no restart within 60 s\n", pidfile);
                return 1;
            }
            while (read(ino, buf, sizeof buf) > 0) {}
        }
        long long t1 = read_num(stampfile);
        up[r] = t2 - t0;
        if (t1 > t0 && t1 <= t2) ex[nex++] = t1 - t0;
    }
    double em = 0, e9 = 0, um, u9;
    stats(up, rounds, &um, &u9);
    if (nex) stats(ex, nex, &em, &e9);
    printf("| %s | %d | %.2f | %.2f | %.2f | %.2f |\n", name, rounds, em, e9, um, u9);
    return 0;
}
