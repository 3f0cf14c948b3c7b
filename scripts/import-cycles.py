#!/usr/bin/env python3
"""File-level import circles in the workspace's crates (issue "One protocol core").

For each crate under crates/*/src, every source file is a node; an edge A -> B says that
A names an item of B's module: a `use` or a path through `crate::`, `super::` or `self::`
that resolves to the module B defines (a `mod b;` declaration alone is no edge). Test code
is left out: files named `tests.rs` or under a `tests/` folder, and what follows
`#[cfg(test)]` in a file. A circle is a strongly connected component of more than one
file; each is printed with the edges that close it.

    scripts/import-cycles.py            # exit 1 when there is a circle
    scripts/import-cycles.py --list     # also print every file's edges
    scripts/import-cycles.py --known scripts/import-cycles.known
                                        # exit 1 only for a circle not within a known one

The known file (CI's guard) lists the circles not yet broken, one per line as the files
of the circle separated by spaces (`#` starts a comment): a circle whose files are all on
one known line passes; a new circle, or a known one that grew, fails.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")


def module_files(src):
    """Map module path (tuple) -> file, from the files present under src."""
    mods = {}
    for dirpath, _dirs, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, src)
            parts = rel[:-3].split(os.sep)
            if parts in (["lib"], ["main"]):
                path = ()
            elif parts[-1] == "mod":
                path = tuple(parts[:-1])
            else:
                path = tuple(parts)
            # a binary's other roots (src/bin/x.rs) are left out
            if parts[0] == "bin":
                continue
            mods[path] = full
    return mods


def is_test_file(path):
    base = os.path.basename(path)
    return base == "tests.rs" or base.endswith("_tests.rs") or f"{os.sep}tests{os.sep}" in path


def strip(text):
    """The text without comments, string literals and test code."""
    cut = re.search(r"#\[cfg\(test\)\]", text)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return text


def expand_use(tree):
    """`a::{b, c::{d}}` -> ["a::b", "a::c::d"]."""
    tree = re.sub(r"\s+as\s+[A-Za-z_0-9]+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                head, inner, tail = tree[:start], tree[start + 1 : i], tree[i + 1 :]
                out = []
                for part in split_top(inner):
                    if part == "self":
                        out.append(head.rstrip(":"))
                    else:
                        out.extend(expand_use(head + part))
                return out
    return [tree]


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return [p for p in parts if p]


def resolve(path_str, here, mods):
    """The module file a path names, or None."""
    segs = [s for s in path_str.split("::") if s]
    if not segs:
        return None
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] in ("super", "self"):
        base = list(here)
        rest = list(segs)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
        base = tuple(base)
    elif here + (segs[0],) in mods:
        # a path relative to this module (`use child::Item`)
        base, rest = here, segs
    else:
        return None
    best = base if base in mods else None
    cur = base
    for s in rest:
        s = re.sub(r"\s+as\s+.*$", "", s)
        cur = cur + (s,)
        if cur in mods:
            best = cur
        else:
            break
    return best


def crate_graph(src):
    mods = module_files(src)
    by_file = {f: p for p, f in mods.items()}
    edges = {}
    for path, f in mods.items():
        if is_test_file(f):
            continue
        text = strip(open(f, encoding="utf-8").read())
        targets = set()
        for m in re.finditer(r"(\bpub(?:\([a-z]+\))?\s+)?\buse\s+([^;]+);", text):
            if m.group(1):
                # a re-export is the module's face, not a use of what it names
                continue
            for p in expand_use(m.group(2)):
                t = resolve(p, path_of(path, f), mods)
                if t is not None:
                    targets.add(t)
        for m in re.finditer(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z_0-9]*)+)", text):
            t = resolve(m.group(1), path_of(path, f), mods)
            if t is not None:
                targets.add(t)
        edges[f] = {mods[t] for t in targets if mods[t] != f and not is_test_file(mods[t])}
    return edges, by_file


def path_of(path, f):
    """The module a file's `self` is (mod.rs, lib.rs: the folder's module)."""
    return path


def sccs(edges):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def read_known(argv):
    if "--known" not in argv:
        return None
    path = argv[argv.index("--known") + 1]
    known = []
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].split()
        if line:
            known.append(set(line))
    return known


def main():
    listing = "--list" in sys.argv
    known = read_known(sys.argv)
    found = 0
    allowed = 0
    for crate in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, crate, "src")
        if not os.path.isdir(src):
            continue
        edges, _ = crate_graph(src)
        rel = lambda f: os.path.relpath(f, os.path.join(ROOT, ".."))
        if listing:
            for f in sorted(edges):
                print(f"{rel(f)} -> {', '.join(sorted(rel(t) for t in edges[f])) or '-'}")
        for comp in sccs(edges):
            if len(comp) < 2:
                continue
            members = set(comp)
            names = {rel(f) for f in comp}
            if known is not None and any(names <= k for k in known):
                allowed += 1
                print(f"known circle in {crate} ({len(comp)} files, scripts/import-cycles.known)")
                continue
            found += 1
            print(f"circle in {crate} ({len(comp)} files):")
            for f in sorted(comp):
                inside = sorted(rel(t) for t in edges[f] if t in members)
                print(f"  {rel(f)} -> {', '.join(inside)}")
    if found:
        print(f"{found} file-level import circle(s)" + (" not in the known list" if known is not None else ""))
        return 1
    print("no file-level import circle" + (f" besides {allowed} known" if allowed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
