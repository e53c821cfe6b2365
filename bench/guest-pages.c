/* bench/guest-pages.c: where the tend processes' shared Pss goes (bench/guest.sh,
 * TRACE=1). For the processes named, the pages of the read-only mappings of the file
 * named (the multi-call executable) that are resident, from /proc/PID/pagemap's present
 * bit: each process's count, each 64 kB window of the file touched (the kernel maps a
 * page cache window around a fault) with the processes that hold it, and the union,
 * which is what their Pss of that file adds up to; then each run of resident pages held by
 * the same processes (with FAULT_AROUND=4096, the pages each one read). The file is matched by its inode (its
 * hard links map it under other names). Built static by bench/guest.sh.
 * Usage: guest-pages FILE PID... */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGES (1 << 14) /* 64 MB of file */
static unsigned short who[PAGES]; /* a bit per process given */

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 2 + 16) {
        fputs("usage: guest-pages FILE PID...\n", stderr);
        return 100;
    }
    struct stat st;
    if (stat(argv[1], &st) < 0) {
        perror(argv[1]);
        return 111;
    }
    int last = -1;
    for (int a = 2; a < argc; a++) {
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%s/maps", argv[a]);
        FILE *maps = fopen(path, "r");
        snprintf(path, sizeof path, "/proc/%s/pagemap", argv[a]);
        int pm = open(path, O_RDONLY | O_CLOEXEC);
        if (!maps || pm < 0)
            continue;
        int n = 0;
        while (fgets(line, sizeof line, maps)) {
            unsigned long start, end, off, ino;
            char perm[8];
            if (sscanf(line, "%lx-%lx %7s %lx %*s %lu", &start, &end, perm, &off, &ino) != 5 ||
                ino != st.st_ino || perm[1] == 'w')
                continue;
            for (unsigned long v = start; v < end; v += 4096) {
                uint64_t e;
                long pg = (long)((v - start + off) / 4096);
                if (pread(pm, &e, 8, (off_t)(v / 4096 * 8)) != 8 || pg >= PAGES)
                    break;
                if (e >> 63) {
                    who[pg] |= 1u << (a - 2);
                    n++;
                    if (pg > last)
                        last = (int)pg;
                }
            }
        }
        fclose(maps);
        close(pm);
        printf("BENCH-PAGES %s: %d kB of %s resident\n", argv[a], n * 4, argv[1]);
    }
    int all = 0;
    for (int w = 0; w * 16 <= last; w++) {
        int c = 0;
        unsigned hold = 0;
        for (int i = w * 16; i < w * 16 + 16; i++)
            if (who[i]) {
                c++;
                hold |= who[i];
            }
        all += c;
        if (c)
            printf("BENCH-PAGES window at %#8x: %2d pages, processes %#x\n", w * 65536, c, hold);
    }
    printf("BENCH-PAGES union: %d kB\n", all * 4);
    for (int p = 0; p <= last;) {
        int q = p;
        while (q + 1 <= last && who[q + 1] == who[p])
            q++;
        if (who[p])
            printf("BENCH-PAGES run %#8x-%#8x: %3d pages, processes %#x\n", p * 4096,
                   q * 4096 + 4095, q - p + 1, who[p]);
        p = q + 1;
    }
    return 0;
}
