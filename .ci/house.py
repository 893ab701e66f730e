#!/usr/bin/env python3
"""The house's size bars, measured on the Rust sources (crates/*/src, src): no file over 700
lines (its tests included); no function over 100 lines without a one-line reason (a `// long:`
comment on the line above its `fn`); at most 1.2 functions of 60+ lines per thousand lines; the
lib.rs of scan, serve, catalog, walk and digest under 150 lines of code. The integration tests
(tests/integration/*.rs) and the Python package and its tests (python/src/trawl/*.py,
python/tests/*.py) are held to the 700-line bar alone (file length only). Test modules
(`#[cfg(test)] mod ...`), `#[test]` functions and examples are left out of every count but a
file's length.

Prints what breaks a bar and exits 1 if anything does; `--list` prints every function of 60+ lines.
"""
import os
import re
import sys

ROOTS = ["crates", "src"]
#: Folders whose files (by suffix) are held to the 700-line bar alone, not to the function bars.
LENGTH_ONLY = [("tests/integration", ".rs"), ("python/src/trawl", ".py"), ("python/tests", ".py")]
TOC = ["trawl-scan", "trawl-serve", "trawl-catalog", "trawl-walk", "trawl-digest"]
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+(\w+)")


def strip(line):
    """A line without string literals, char literals and `//` comments (near enough to count braces)."""
    line = re.sub(r'r#*"[^"]*"#*', '""', line)
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split("//", 1)[0]


def block_end(lines, start):
    """The index of the line that closes the block opened at or after `start`, or None for `fn ...;`."""
    depth, opened = 0, False
    for i in range(start, len(lines)):
        s = strip(lines[i])
        if not opened and ";" in s and "{" not in s:
            return None
        for ch in s:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    return i
    return len(lines) - 1


def measure(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    test, i = set(), 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            j = i + 1
            while j < len(lines) and lines[j].strip().startswith("#["):
                j += 1
            if j < len(lines) and re.match(r"\s*(pub\s+)?mod\s+\w+\s*\{", lines[j]):
                end = block_end(lines, j) or j
                test.update(range(i, end + 1))
                i = end
        i += 1
    fns = []
    for i, line in enumerate(lines):
        if i in test:
            continue
        m = FN.match(line)
        if not m:
            continue
        end = block_end(lines, i)
        if end is None:
            continue
        above = [l.strip() for l in lines[max(0, i - 3):i]]
        if "#[test]" in above or any(a.startswith("#[tokio::test") for a in above):
            continue
        reason = i > 0 and "// long:" in lines[i - 1]
        fns.append((m.group(7), i + 1, end - i + 1, reason))
    code = len(lines) - len(test)
    nonblank = sum(1 for k, l in enumerate(lines) if k not in test and l.strip() and not l.strip().startswith("//"))
    return len(lines) - 1, code, nonblank, fns


def main():
    listing = "--list" in sys.argv
    broken, total, long60, files = [], 0, [], {}
    for root in ROOTS:
        for d, _, names in os.walk(root):
            if "/examples" in d or "/benches" in d:
                continue
            for n in names:
                if n.endswith(".rs"):
                    p = os.path.join(d, n)
                    whole, code, nonblank, fns = measure(p)
                    files[p] = nonblank
                    total += code
                    if whole > 700:
                        broken.append(f"{p}: {whole} lines (bar 700)")
                    for name, at, size, reason in fns:
                        if size >= 60:
                            long60.append((size, p, at, name, reason))
                        if size > 100 and not reason:
                            broken.append(f"{p}:{at}: fn {name} is {size} lines with no `// long:` reason")
    for d, suffix in LENGTH_ONLY:
        for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            p = os.path.join(d, n)
            if n.endswith(suffix) and os.path.isfile(p):
                whole = len(open(p, encoding="utf-8").read().split("\n")) - 1
                if whole > 700:
                    broken.append(f"{p}: {whole} lines (bar 700)")
    per_k = len(long60) * 1000 / max(total, 1)
    if per_k > 1.2:
        broken.append(f"{len(long60)} functions of 60+ lines in {total} lines: {per_k:.2f} per thousand (bar 1.2)")
    for c in TOC:
        p = f"crates/{c}/src/lib.rs"
        if files.get(p, 0) >= 150:
            broken.append(f"{p}: {files[p]} lines of code (bar 150)")
    if listing:
        for size, p, at, name, reason in sorted(long60, reverse=True):
            print(f"{size:4} {p}:{at} {name}{' (reason given)' if reason else ''}")
    print(f"{total} lines, {len(long60)} functions of 60+ lines ({per_k:.2f} per thousand)")
    for b in broken:
        print(b)
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
