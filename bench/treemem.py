#!/usr/bin/env python3
"""treemem.py --tree PID  (or PID...)

Memory of a set of processes counted as if nothing else on the machine shared their pages,
as the project's shared tools/treemem.py counts it: every private page once, and every page
of a mapped file (executables, shared libraries) once for the whole set, whoever else maps
it. One difference: files are told apart by device and inode, not by path, so one
executable reached through several hard links (tend-svscan, tend-supervise and tend-log are
one file) counts once, as the kernel holds it once. Prints key=value lines in kB:

  private_kb       Private_Clean + Private_Dirty over the set
  shared_file_kb   per file, the largest Shared_Clean + Shared_Dirty of any one process
  total_kb         private_kb + shared_file_kb
  total_by_path_kb the same total with files told apart by path (shared tools/treemem.py)
  pss_kb           plain PSS sum
--files first also lists the shared kB of each file.
"""
import os
import sys
from collections import defaultdict


def tree(root):
    seen, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return seen


def count(pids):
    """Every private page once and every mapped file's pages once, over `pids`:
    (private_kb, largest shared kB per file by inode, the same by path, pss_kb)."""
    private = pss = 0
    by_inode = defaultdict(int)
    by_path = defaultdict(int)
    for pid in pids:
        per_inode = defaultdict(int)
        per_path = defaultdict(int)
        key = None
        try:
            with open(f"/proc/{pid}/smaps") as f:
                for line in f:
                    head = line.split()
                    if not head:
                        continue
                    if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                        named = len(head) >= 6 and head[5].startswith("/")
                        key = ((head[3], head[4]), head[5]) if named else None
                    elif head[0] in ("Private_Clean:", "Private_Dirty:"):
                        private += int(head[1])
                    elif head[0] in ("Shared_Clean:", "Shared_Dirty:") and key:
                        per_inode[key[0]] += int(head[1])
                        per_path[key[1]] += int(head[1])
                    elif head[0] == "Pss:":
                        pss += int(head[1])
        except OSError:
            continue
        for k, v in per_inode.items():
            by_inode[k] = max(by_inode[k], v)
        for k, v in per_path.items():
            by_path[k] = max(by_path[k], v)
    return private, by_inode, by_path, pss


def total_kb(pids):
    """private_kb + shared_file_kb: what the processes cost where nothing else shares."""
    private, by_inode, _, _ = count(pids)
    return private + sum(by_inode.values())


def main(argv):
    files = bool(argv) and argv[0] == "--files"
    if files:
        argv = argv[1:]
    pids = tree(int(argv[1])) if len(argv) >= 2 and argv[0] == "--tree" else [int(a) for a in argv]
    if not pids:
        print(__doc__, file=sys.stderr)
        return 100
    private, by_inode, by_path, pss = count(pids)
    sf = sum(by_inode.values())
    if files:
        names = {}
        for pid in pids:
            try:
                with open(f"/proc/{pid}/maps") as f:
                    for line in f:
                        h = line.split()
                        if len(h) >= 6 and h[5].startswith("/"):
                            names.setdefault((h[3], h[4]), h[5])
            except OSError:
                pass
        for k, v in sorted(by_inode.items(), key=lambda kv: -kv[1]):
            print(f"file_kb {v:6d} {names.get(k, k)}")
    print(f"processes={len(pids)}")
    print(f"private_kb={private}")
    print(f"shared_file_kb={sf}")
    print(f"total_kb={private + sf}")
    print(f"total_by_path_kb={private + sum(by_path.values())}")
    print(f"pss_kb={pss}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
