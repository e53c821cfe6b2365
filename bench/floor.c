/* bench/floor.c — the floor of the process-per-service design, for bench/scan.sh and
 * bench/restart.py: what a scanner and a supervisor cost when they do nothing but fork,
 * exec ./run and wait. No status file, no control fifo, no spawn report, no log pipe.
 *
 *   floor -s DIR   supervise DIR: fork + exec ./run; when it dies, again (1 s after the
 *                  previous start at the soonest, as runsv, s6-supervise and
 *                  tend-supervise space their restarts)
 *   floor DIR      scan DIR: fork one child per subdirectory, without exec: the child is
 *                  the supervisor (as -s) of that service. The scanner then waits.
 *   floor -x DIR   the same, but each child execs this program again as `floor -s .`:
 *                  the floor plus one exec per supervisor (what a supervisor that is its
 *                  own program, as in daemontools, runit, s6 and tend, costs)
 *   floor -X DIR   as -x, and each supervisor (`floor -S .`) first lays out s6's
 *                  on-disk state as s6-supervise and tend-supervise do: supervise/ and
 *                  event/ made, supervise/lock created and locked, supervise/control
 *                  made and opened, supervise/status written through a rename, then
 *                  the fork and exec of ./run (no spawn report, no control handling)
 *
 * The scanner makes itself a process-group leader: kill -KILL -- -PID ends the tree.
 * Built by the bench scripts: gcc -O2 -o floor bench/floor.c
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void supervise(void) {
    char *argv[] = {"./run", NULL};
    extern char **environ;
    long long last = 0;
    for (;;) {
        long long wait = last + 1000 - now_ms();
        if (last && wait > 0) usleep(wait * 1000);
        last = now_ms();
        pid_t p = fork();
        if (p == 0) {
            execve("./run", argv, environ);
            _exit(127);
        }
        if (p < 0) {
            sleep(1);
            continue;
        }
        while (waitpid(p, NULL, 0) < 0) {}
    }
}

/* s6's layout, as cheaply as C makes it: the inodes and calls every s6-style supervisor
 * pays before it starts ./run. */
static void lay_out(void) {
    static const char status[35] = {0};
    mkdir("supervise", 0700);
    mkdir("event", 03730);
    int lock = open("supervise/lock", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (lock < 0 || fcntl(lock, F_SETLK, &fl) < 0) _exit(111);
    mkfifo("supervise/control", 0600);
    if (open("supervise/control", O_RDWR | O_NONBLOCK | O_CLOEXEC) < 0) _exit(111);
    int st = open("supervise/status.new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (st < 0 || write(st, status, sizeof status) != sizeof status) _exit(111);
    close(st);
    if (rename("supervise/status.new", "supervise/status") < 0) _exit(111);
}

int main(int argc, char **argv) {
    if (argc == 3 && argv[1][0] == '-' && (argv[1][1] == 's' || argv[1][1] == 'S')) {
        if (chdir(argv[2]) < 0) { perror("floor: chdir"); return 111; }
        if (argv[1][1] == 'S') lay_out();
        supervise();
    }
    char mode = 0;
    if (argc == 3 && argv[1][0] == '-' && (argv[1][1] == 'x' || argv[1][1] == 'X')) {
        mode = argv[1][1];
        argv++;
        argc--;
    }
    if (argc != 2) { fprintf(stderr, "usage: floor [-s|-S|-x|-X] DIR\n"); return 100; }
    static char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) { perror("floor: readlink /proc/self/exe"); return 111; }
    self[n] = 0;
    char *sargv[] = {"floor", mode == 'X' ? "-S" : "-s", ".", NULL};
    extern char **environ;
    setpgid(0, 0);
    if (chdir(argv[1]) < 0) { perror("floor: chdir"); return 111; }
    DIR *d = opendir(".");
    if (!d) { perror("floor: opendir"); return 111; }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        pid_t p = fork();
        if (p == 0) {
            if (chdir(e->d_name) < 0) _exit(111);
            if (mode) {
                execve(self, sargv, environ);
                _exit(127);
            }
            supervise();
        }
    }
    closedir(d);
    for (;;) pause();
}
