#!/usr/bin/env python3
"""Reports import circles between the modules of each crate of the workspace.

A module is a source file; it depends on another when it names it in a `use` (or a path such
as `crate::a::b::f(..)`) through `crate::`, `super::` or `self::`. Test modules (`#[cfg(test)]`
and everything after it in a file) are left out: a test may look anywhere. Exits 1 and prints
each circle when there is one.
"""
import os
import re
import sys

CRATES = {"src": "src", "testing": "testing/src", "zkr": "zkr/src"}


def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def resolve(modules, base, parts):
    """The longest prefix of `parts` (from module `base`) that names a module file."""
    best = None
    for i in range(1, len(parts) + 1):
        cand = base + tuple(parts[:i])
        if cand in modules:
            best = cand
    return best


def deps(modules, me, text):
    cut = re.search(r"#\[cfg\(test\)\]", text)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"//[^\n]*", "", text)
    out = set()
    # expand `use a::{b, c::d}` one level, enough for this codebase's style
    for m in re.finditer(r"\b(crate|super|self)((?:::\w+)+)(?:::\{([^}]*)\})?", text):
        head, path, group = m.group(1), m.group(2), m.group(3)
        parts = [p for p in path.split("::") if p]
        if head == "crate":
            base = ()
        elif head == "self":
            base = me
        else:
            base = me[:-1]
            while parts and parts[0] == "super":
                base, parts = base[:-1], parts[1:]
        tails = [[]]
        if group:
            tails = [[p for p in g.strip().split("::") if p and p != "self"] for g in group.split(",")]
        for tail in tails:
            target = resolve(modules, base, parts + tail)
            if target is not None and target != me and not (me[: len(target)] == target):
                out.add(target)
    return out


def cycles(graph):
    found, index, low, stack, on, counter = [], {}, {}, [], set(), [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
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
            if len(comp) > 1:
                found.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            strong(v)
    return found


def main():
    root_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = 0
    for crate, src in CRATES.items():
        src = os.path.join(root_dir, src)
        files = {}
        for dirpath, _, names in os.walk(src):
            for n in names:
                if n.endswith(".rs"):
                    p = os.path.join(dirpath, n)
                    files[module_of(src, p)] = p
        graph = {m: deps(files, m, open(p).read()) for m, p in files.items()}
        for comp in cycles(graph):
            bad += 1
            names = sorted("::".join(m) or "(root)" for m in comp)
            print(f"import circle in {crate}: {' <-> '.join(names)}")
    if bad:
        sys.exit(1)
    print("no import circles")


if __name__ == "__main__":
    main()
