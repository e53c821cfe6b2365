# packaging/hot-code.awk — the one definition of a function's key in packaging/hot-code.txt:
# its symbol name without what changes from build to build (the hash of a legacy Rust
# name, the crate disambiguators of a v0 name, LLVM's numeric suffixes). C names have none.
#
#   awk -v keys=1 -f hot-code.awk            names on stdin -> their keys, first seen order
#   nm --defined-only OBJ... | awk -f hot-code.awk hot-code.txt -
#       -> "RANK NAME" for every function of the objects whose key the file lists, and
#          "RANK NAME" for the file's C names (lld finds those in the archives);
#          with -v stats=1, also "hot-code: N of M keys found" on stderr
function key(s) {
    sub(/\.llvm\.[0-9]+$/, "", s)
    sub(/\.[0-9]+$/, "", s)
    if (s ~ /^_ZN/) sub(/17h[0-9a-f]+E$/, "E", s)
    else if (s ~ /^_R/) gsub(/Cs[0-9A-Za-z]+_/, "Cs_", s)
    # tend-tree builds the same program sources (bins/) as tend under another crate name:
    # tend_tree::supervise::main is tend::supervise::main, one key for both.
    if (s ~ /^_ZN9tend_tree/) s = "_ZN4tend" substr(s, 14)
    gsub(/Cs_9tend_tree/, "Cs_4tend", s)
    return s
}
keys { k = key($0); if (!(k in done)) { done[k] = 1; print k }; next }
NR == FNR { if (!($0 in rank)) { rank[$0] = FNR; wanted++ }; next }
NF == 3 && $2 ~ /^[tTwW]$/ {
    k = key($3)
    if (k in rank) { print rank[k], $3; if (!(k in seen)) { seen[k] = 1; found++ } }
}
END {
    if (keys) exit
    for (k in rank) if (!(k in seen) && k !~ /^_[RZ]/) { print rank[k], k; found++ }
    if (stats) printf "hot-code: %d of %d keys found\n", found, wanted > "/dev/stderr"
}
