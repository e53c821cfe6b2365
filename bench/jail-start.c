/* bench/jail-start.c: the time from the exec of a launcher (tend-jail, runc) to the exec of
   the program it starts. `jail-start --stamp` is the program: it prints CLOCK_MONOTONIC in
   ns (one clock for the whole machine; no time namespace is made). `jail-start N CMD...`
   runs CMD N times (CMD ends by running `jail-start --stamp`), takes the time just before
   each exec of CMD, and prints the median and the minimum of the differences in ms.
   tend's own bench program, built with gcc -static by bench/jail.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--stamp")) {
        printf("%lld\n", now());
        return 0;
    }
    if (argc < 3) return 100;
    int n = atoi(argv[1]);
    long long *d = calloc(n, sizeof *d);
    for (int i = 0; i < n; i++) {
        int p[2];
        if (pipe(p)) return 111;
        long long t0 = now();
        pid_t c = fork();
        if (c == 0) {
            dup2(p[1], 1);
            close(p[0]);
            execvp(argv[2], argv + 2);
            _exit(127);
        }
        close(p[1]);
        char buf[64] = {0};
        ssize_t r = read(p[0], buf, sizeof buf - 1);
        close(p[0]);
        waitpid(c, 0, 0);
        if (r <= 0) return 111;
        d[i] = atoll(buf) - t0;
    }
    qsort(d, n, sizeof *d, cmp);
    printf("median %.3f ms, min %.3f ms (%d runs)\n", d[n / 2] / 1e6, d[0] / 1e6, n);
    return 0;
}
