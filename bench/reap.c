/* bench/reap.c — the command of bench/reap.sh, run under the init being measured.
 *
 *   reap N ROUNDS [MAP]
 *
 * Each round: make N orphans (each forked by a child that exits at once, so the init
 * inherits it), all blocked reading one pipe; then close the pipe's write end (every
 * orphan exits) and time, from that close, until every orphan's pid is gone (kill(pid, 0)
 * fails with ESRCH: a zombie still answers, so gone means reaped). Prints one line per
 * round: the time until the first and the last orphan was reaped and the median, in ms,
 * and the CPU time PID 1 spent meanwhile (/proc/1/schedstat, in ms): the figure that
 * the load of a shared machine moves least. The orphans' own exits are in every time
 * alike (the same for every init).
 *
 * With MAP (bench/reap-lag.sh, run without --mount-proc so that /proc is the host's),
 * each orphan also names its pid outside the namespace (the /proc/self link), and the
 * lines "pid-inside pid-outside" of every round are written to MAP: a trace of the host
 * sees the outside pid exit and PID 1's wait4 return the inside one. PID 1's CPU time
 * is then read from its own pid in the host's /proc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What each orphan tells the command: its pid inside the namespace and outside it. */
struct pids {
    pid_t in, out;
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* PID 1's time on a CPU so far, in ns (the first field of its schedstat). */
static double pid1_cpu(const char *schedstat) {
    double ns = 0;
    FILE *f = fopen(schedstat, "r");
    if (f) {
        if (fscanf(f, "%lf", &ns) != 1) ns = 0;
        fclose(f);
    }
    return ns;
}

/* PID 1's schedstat in the host's /proc: our parent's pid there (the fourth field of
 * /proc/OUR-PID/stat, after the name in parentheses). */
static void host_pid1(char *path, size_t size) {
    char link[32] = "", stat[512] = "";
    if (readlink("/proc/self", link, sizeof link - 1) <= 0) return;
    snprintf(path, size, "/proc/%s/stat", link);
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
    if (f) fclose(f);
    stat[got] = 0;
    char *end = strrchr(stat, ')');
    int ppid = 0;
    if (end && sscanf(end + 1, " %*c %d", &ppid) == 1) snprintf(path, size, "/proc/%d/schedstat", ppid);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 5;
    FILE *map = argc > 3 ? fopen(argv[3], "w") : NULL;
    struct pids *pids = calloc(n, sizeof *pids);
    char schedstat[64] = "/proc/1/schedstat";
    if (map) host_pid1(schedstat, sizeof schedstat);
    double *gone = calloc(n, sizeof *gone);
    for (int r = 0; r < rounds; r++) {
        int go[2], got[2];
        if (pipe(go) || pipe(got)) return 111;
        for (int i = 0; i < n; i++) {
            pid_t c = fork();
            if (c < 0) return 111;
            if (c == 0) {
                pid_t g = fork();
                if (g == 0) {
                    char b, link[32] = "";
                    struct pids me = {getpid(), 0};
                    if (map && readlink("/proc/self", link, sizeof link - 1) > 0) me.out = atoi(link);
                    if (write(got[1], &me, sizeof me) != sizeof me) _exit(111);
                    close(go[1]);
                    close(got[0]);
                    close(got[1]);
                    while (read(go[0], &b, 1) < 0 && errno == EINTR) {}
                    _exit(0);
                }
                _exit(g < 0 ? 111 : 0);
            }
            if (read(got[0], &pids[i], sizeof pids[i]) != sizeof pids[i]) return 111;
            while (waitpid(c, NULL, 0) < 0 && errno == EINTR) {}
        }
        close(got[0]);
        close(got[1]);
        close(go[0]);
        int left = n;
        for (int i = 0; i < n; i++) gone[i] = -1;
        double c0 = pid1_cpu(schedstat), t0 = now();
        close(go[1]);
        while (left > 0) {
            for (int i = 0; i < n; i++) {
                if (gone[i] < 0 && kill(pids[i].in, 0) < 0 && errno == ESRCH) {
                    gone[i] = now() - t0;
                    left--;
                }
            }
        }
        double cpu = (pid1_cpu(schedstat) - c0) / 1e6;
        for (int i = 0; map && i < n; i++) fprintf(map, "%d %d\n", pids[i].in, pids[i].out);
        qsort(gone, n, sizeof *gone, cmp);
        printf("%d %.3f %.3f %.3f %.3f\n", r, gone[0], gone[n / 2], gone[n - 1], cpu);
        fflush(stdout);
    }
    if (map) fclose(map);
    return 0;
}
