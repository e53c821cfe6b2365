# packaging/hot-rodata.awk — the read-only data the hot code reads, in the hot code's order
# (packaging/tend-cc). A function's section is .text.NAME; each relocation
# in it that names a .rodata section (an anonymous constant, a jump or switch table, a
# merged-constant or string section) gives that section the function's rank, and a
# .rodata section that points at others (a table of strings, a vtable's names) passes its
# rank on. Input: the ordered function names tend-cc passes to the linker, then
# `readelf -SrW` of the objects (the section headers give each section's size).
# Output: "RANK SEQ SIZE SECTION" for every such section, lowest rank seen.
function hex(s,    n, i) {
    n = 0
    for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return n
}
NR == FNR { rank[".text." $0] = FNR; next }
/^ *\[ *[0-9]+\] / {
    h = $0
    sub(/^ *\[ *[0-9]+\] +/, "", h)
    split(h, f, " ")
    if (f[1] ~ /^\.rodata/) size[f[1]] += hex(f[5])
    next
}
/^Relocation section '/ {
    cur = $3
    gsub(/'/, "", cur)
    sub(/^\.rela/, "", cur)
    next
}
NF >= 5 && $1 ~ /^[0-9a-f]+$/ && length($1) == 16 && $5 ~ /^\.rodata/ {
    t = $5
    if (cur in rank) {
        if (!(t in best) || rank[cur] < best[t]) best[t] = rank[cur]
        if (!(t in seq)) seq[t] = ++n
    } else if (cur ~ /^\.rodata/) {
        edge[++e] = cur SUBSEP t
    }
}
END {
    # Tables of pointers to tables: a few passes reach every level.
    for (pass = 0; pass < 4; pass++)
        for (i = 1; i <= e; i++) {
            split(edge[i], pc, SUBSEP)
            if (pc[1] in best && (!(pc[2] in best) || best[pc[1]] < best[pc[2]])) {
                best[pc[2]] = best[pc[1]]
                if (!(pc[2] in seq)) seq[pc[2]] = ++n
            }
        }
    for (s in best) print best[s], seq[s], size[s] + 0, s
}
