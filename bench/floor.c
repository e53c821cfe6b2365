/* bench/floor.c — the floor of the process-per-service design, for bench/scan.sh and
 * bench/restart.py: what a scanner and a supervisor cost when they do nothing but fork,
 * exec ./run and wait. No status file, no control fifo, no spawn report, no log pipe.
 *
 *   floor -s DIR   supervise DIR: fork + exec ./run; when it dies, again (1 s after the
 *                  previous start at the soonest, as runsv, s6-supervise and
 *                  tend-supervise space their restarts)
 *   floor DIR      scan DIR: fork one child per subdirectory, without exec: the child is
 *                  the supervisor (as -s) of that service. The scanner then waits.
 *
 * The scanner makes itself a process-group leader: kill -KILL -- -PID ends the tree.
 * Built by the bench scripts: gcc -O2 -o floor bench/floor.c
 */
#include <dirent.h>
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

int main(int argc, char **argv) {
    if (argc == 3 && argv[1][0] == '-' && argv[1][1] == 's') {
        if (chdir(argv[2]) < 0) { perror("floor: chdir"); return 111; }
        supervise();
    }
    if (argc != 2) { fprintf(stderr, "usage: floor [-s] DIR\n"); return 100; }
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
            supervise();
        }
    }
    closedir(d);
    for (;;) pause();
}
