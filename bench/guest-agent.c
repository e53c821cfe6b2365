/* bench/guest-agent.c: the stub agent of bench/guest.sh's PAYLOAD=agent (issue 38). As
 * PID 1 (the floor: what osbuilder's AGENT_INIT=yes gives) it mounts what it needs, as
 * kata-agent does; under an init it mounts nothing. Either way it loads the vsock
 * loopback transport from /lib/vsock (finit_module; what a Kata guest kernel has built
 * in), binds vsock port 1024, marks the kernel log, says READY, runs /bench/report (which
 * measures and powers off) and serves the port: a connection's first line `exit` ends it.
 * `-m`, or run as an init.d script (a symlink there: no shell before it): load the modules
 * and exit (an init's stage 1, so that its console can bind). Built static by
 * bench/guest.sh. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void load(const char *name)
{
    char path[96];
    size_t n = strlen(name);
    /* Loaded already (by an init.d step): skip it. finit_module checks the module's
     * image before it says EEXIST, ~12 ms a module under the instruction clock. */
    memcpy(path, "/sys/module/", 12);
    memcpy(path + 12, name, n + 1);
    if (access(path, F_OK) == 0)
        return;
    memcpy(path, "/lib/vsock/", 11);
    memcpy(path + 11, name, n);
    memcpy(path + 11 + n, ".ko", 4);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        syscall(SYS_finit_module, fd, "", 0); /* EEXIST when loaded: fine */
        close(fd);
    }
}

static void modules(void)
{
    load("vsock");
    load("vmw_vsock_virtio_transport_common");
    load("vsock_loopback");
}

int main(int argc, char **argv)
{
    if ((argc > 1 && strcmp(argv[1], "-m") == 0) || strstr(argv[0], "init.d/")) {
        modules();
        return 0;
    }
    if (getpid() == 1) {
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0);
        mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0);
        mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
    }
    modules();
    int s = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_vm a = {.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = 1024};
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 8) < 0)
        write(2, "stub-agent: no vsock\n", 21);
    int k = open("/dev/kmsg", O_WRONLY);
    if (k >= 0) {
        write(k, "tend-bench-ready\n", 17);
        close(k);
    }
    write(1, "BENCH-READY\n", 12);
    if (fork() == 0) {
        execl("/bench/report", "/bench/report", (char *)0);
        _exit(127);
    }
    for (;;) {
        while (waitpid(-1, 0, WNOHANG) > 0)
            ;
        int c = s < 0 ? -1 : accept(s, 0, 0);
        if (c < 0) {
            pause();
            continue;
        }
        char line[16] = {0};
        read(c, line, sizeof line - 1);
        close(c);
        if (strncmp(line, "exit", 4) == 0)
            return 0;
    }
}
