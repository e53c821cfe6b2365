/* The jail probe: prints what a process sees of its walls, one "key: value" a line.
   tend's own test program (tests/it/jail.rs), built with gcc -static at test time.
   argv[1]: a host pid to try to signal and trace; argv[2]: a path to try to read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <signal.h>

static void result(const char *what, long r) {
    printf("call %s: %s\n", what, r < 0 ? strerror(errno) : "ok");
}

static void *thread(void *arg) { return arg; }

static void lines(const char *path, const char *const *keys) {
    char buf[4096];
    FILE *f = fopen(path, "r");
    if (!f) { printf("%s: %s\n", path, strerror(errno)); return; }
    while (fgets(buf, sizeof buf, f))
        for (const char *const *k = keys; *k; k++)
            if (!strncmp(buf, *k, strlen(*k))) fputs(buf, stdout);
    fclose(f);
}

int main(int argc, char **argv) {
    static const char *const status[] = {"Cap", "NoNewPrivs", "Seccomp", "Uid", "Gid", "Groups", 0};
    static const char *const limits[] = {"Max open files", "Max core file size", 0};
    lines("/proc/self/status", status);
    lines("/proc/self/limits", limits);
    /* mountinfo: mount point and per-mount flags */
    char buf[8192];
    FILE *m = fopen("/proc/self/mountinfo", "r");
    while (m && fgets(buf, sizeof buf, m)) {
        char *f[6]; char *s = buf;
        for (int i = 0; i < 6; i++) f[i] = strsep(&s, " ");
        if (!f[5]) continue;
        printf("mount %s: %s\n", f[4], f[5]);
        /* the optional fields up to "-": shared:N, master:N... or none (private) */
        char prop[256] = ""; char *o;
        while ((o = strsep(&s, " ")) && strcmp(o, "-"))
            snprintf(prop + strlen(prop), sizeof prop - strlen(prop), "%s%s", *prop ? " " : "", o);
        printf("prop %s: %s\n", f[4], *prop ? prop : "private");
    }
    const char *ns[] = {"ipc", "mnt", "uts", "pid", "net", "user", "cgroup", 0};
    for (int i = 0; ns[i]; i++) {
        char p[64], l[64] = {0};
        snprintf(p, sizeof p, "/proc/self/ns/%s", ns[i]);
        if (readlink(p, l, sizeof l - 1) < 0) strcpy(l, strerror(errno));
        printf("ns %s: %s\n", ns[i], l);
    }
    char cg[256] = {0};
    FILE *c = fopen("/proc/self/cgroup", "r");
    while (c && fgets(cg, sizeof cg, c)) if (!strncmp(cg, "0::", 3)) printf("cgroup: %s", cg + 3);
    result("mount", mount("none", "/tmp", "tmpfs", 0, 0));
    result("unshare-user", unshare(CLONE_NEWUSER));
    result("kexec_load", syscall(SYS_kexec_load, 0, 0, 0, 0));
    result("clone3", syscall(SYS_clone3, 0, 0));
    char one;
    int z = open("/dev/zero", O_RDONLY);
    result("read", read(z, &one, 1));
    pthread_t t;
    int e = pthread_create(&t, 0, thread, 0);
    if (!e) pthread_join(t, 0);
    errno = e; result("thread", e ? -1 : 0);
    result("write-usr", open("/usr/.tend-jail-probe", O_CREAT | O_WRONLY, 0600));
    result("setuid-0", setuid(0));
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2] = {{0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff, 0xffffffff}};
    result("raise-caps", syscall(SYS_capset, &h, d));
    if (argc > 1) {
        pid_t host = atoi(argv[1]);
        result("kill-host", kill(host, 0));
        result("ptrace-host", ptrace(PTRACE_ATTACH, host, 0, 0));
    }
    if (argc > 2) {
        struct stat st;
        result("see-other", stat(argv[2], &st));
    }
    fflush(stdout);
    if (argc > 3) pause();  /* for the signal tests: wait to be told */
    return 0;
}
