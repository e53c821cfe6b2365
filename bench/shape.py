#!/usr/bin/env python3
"""Code-shape figures for issue 8 (run from the repository root: `python3 bench/shape.py [N]`):
unsafe blocks and fns per crate, the N (5) longest functions in crates/*/src, lines per test.
Assumes rustfmt'd sources (a body closes with `}` at its `fn` line's indent)."""
import os, re, sys, statistics

FN = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+(\w+)')

def functions(path):
    lines = open(path, encoding='utf-8', errors='replace').read().split('\n')
    out = []
    for i, l in enumerate(lines):
        m = FN.match(l)
        if not m:
            continue
        ind = m.group(1)
        # declaration only (trait method without body)?
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith('{') and not lines[j].rstrip().endswith(';'):
            j += 1
        if j >= len(lines) or lines[j].rstrip().endswith(';'):
            continue
        if lines[j].rstrip().endswith('{}'):
            continue
        k = j + 1
        while k < len(lines) and lines[k] != ind + '}':
            k += 1
        is_test = any(lines[p].strip() == '#[test]' for p in range(max(0, i - 3), i))
        out.append((k - i + 1, path, i + 1, m.group(8), is_test))
    return out

def rs(root):
    for d, _, fs in os.walk(root):
        if '/target' in d:
            continue
        for f in fs:
            if f.endswith('.rs'):
                yield os.path.join(d, f)

def main():
    fns = [f for p in rs('crates') for f in functions(p) if '/src/' in f[1]]
    srcfns = [f for f in fns if not f[4]]
    print('unsafe per crate (blocks / fns):')
    for c in sorted(os.listdir('crates')):
        txt = ''.join(open(p, encoding='utf-8').read() for p in rs(f'crates/{c}/src'))
        b = len(re.findall(r'\bunsafe\s*\{', txt))
        f = len(re.findall(r'\bunsafe\s+(extern\s+"C"\s+)?fn\b', txt))
        print(f'  {c}: {b} / {f}')
    print('longest functions in crates/*/src (non-test):')
    for n, p, l, name, _ in sorted(srcfns, reverse=True)[:int(sys.argv[1]) if len(sys.argv) > 1 else 5]:
        print(f'  {n:4d} {p}:{l} {name}')
    print('  over 100 lines:', sum(1 for f in srcfns if f[0] > 100), ' over 80:', sum(1 for f in srcfns if f[0] > 80))
    tests = [f for p in rs('tests/it') for f in functions(p) if f[4]]
    ls = [t[0] for t in tests]
    big = max(tests)
    print(f'tests/it: {len(ls)} tests, lines mean {statistics.mean(ls):.1f}, median {statistics.median(ls)}, max {big[0]} ({big[3]}), over 100: {sum(1 for x in ls if x > 100)}')
    for t in sorted(tests, reverse=True)[:5]:
        print(f'  {t[0]:4d} {t[1]}:{t[2]} {t[3]}')

main()
