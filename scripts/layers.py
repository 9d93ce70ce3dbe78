#!/usr/bin/env python3
"""The layering rules of railpath's Rust code (part of `make lint`):

1. No import circle between the files of a crate: file A names an item of file B (`use
   crate::x::y`, a path `crate::x::Y` or `super::...` in code) and B, directly or through other
   files, names an item of A. A module's own `mod.rs`/`lib.rs` declaring its children (`mod x;`)
   is not a use; a file's own `#[cfg(test)]` tests are left out (they may use anything).
2. No function in crates/repro longer than 150 lines.

Usage: scripts/layers.py [--verbose]; exit 1 with the circles and long functions listed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_REPRO_FN_LINES = 150

PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)


def strip(text: str) -> str:
    """The code of a file without comments, strings and its `#[cfg(test)]` module."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    m = re.search(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
    if m:
        text = text[: m.start()]
    return text


def module_of(src: Path, f: Path) -> list[str]:
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return parts


def expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree]
    i = tree.index("{")
    prefix, body = tree[:i], tree[i + 1 : tree.rindex("}")]
    out, depth, cur = [], 0, ""
    for ch in body + ",":
        if ch == "," and depth == 0:
            if cur:
                out.extend(prefix + p for p in expand_use(cur))
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    return out


def reexports(f: Path, here: list[str], by_mod: dict[tuple[str, ...], Path]) -> dict[str, Path]:
    """Items a module file re-exports from its descendants: name -> the file defining it."""
    out: dict[str, Path] = {}
    for m in USE_RE.finditer(strip(f.read_text())):
        if not m.group(0).lstrip().startswith("pub"):
            continue
        for p in expand_use(m.group(1)):
            segs = [x for x in p.split("::") if x != "self"]
            if segs and segs[0] == "crate":
                segs = segs[1:]
            else:
                segs = here + segs
            name = segs[-1].split(" as ")[-1] if segs else ""
            for k in range(len(segs) - 1, 0, -1):
                if tuple(segs[:k]) in by_mod:
                    out[name] = by_mod[tuple(segs[:k])]
                    break
    return out


def crate_graph(src: Path) -> dict[Path, set[Path]]:
    files = sorted(src.rglob("*.rs"))
    if (src / "lib.rs").exists():
        # A binary beside a library is a crate of its own; it uses the library from outside.
        files = [f for f in files if f != src / "main.rs" and "bin" not in f.relative_to(src).parts]
    by_mod = {tuple(module_of(src, f)): f for f in files}
    exported = {
        tuple(module_of(src, f)): reexports(f, module_of(src, f), by_mod)
        for f in files
        if f.name in ("mod.rs", "lib.rs", "main.rs")
    }
    edges: dict[Path, set[Path]] = {f: set() for f in files}
    for f in files:
        here = module_of(src, f)
        is_mod_file = f.name in ("mod.rs", "lib.rs", "main.rs")
        code = strip(f.read_text())
        children = {m[-1] for m in by_mod if len(m) == len(here) + 1 and list(m[:-1]) == here}
        paths: list[tuple[str, bool]] = []
        for m in USE_RE.finditer(code):
            reexport = m.group(0).lstrip().startswith("pub")
            paths.extend((p, reexport) for p in expand_use(m.group(1)))
        rest_code = USE_RE.sub("", code)
        paths.extend((m.group(1) + m.group(2), False) for m in PATH_RE.finditer(rest_code))
        if children:
            child_re = re.compile(r"(?<![:\w])(" + "|".join(map(re.escape, children)) + r")((?:::\w+)+)")
            paths.extend((m.group(1) + m.group(2), False) for m in child_re.finditer(rest_code))
        for p, reexport in paths:
            segs = p.split("::")
            if segs[0] == "crate":
                mod, rest = [], segs[1:]
            elif segs[0] in ("super", "self"):
                mod, rest = list(here), segs
                while rest and rest[0] in ("super", "self"):
                    if rest[0] == "super":
                        mod = mod[:-1]
                    rest = rest[1:]
            elif segs[0] in children:
                mod, rest = list(here), segs
            else:
                continue
            # The longest module prefix that is a file.
            cur = list(mod)
            for seg in rest:
                if tuple(cur + [seg]) in by_mod:
                    cur.append(seg)
                else:
                    break
            target = by_mod.get(tuple(cur))
            # An item a module file re-exports is the file's that defines it.
            left = rest[len(cur) - len(mod) :] if len(cur) >= len(mod) else []
            if left and left[0] in exported.get(tuple(cur), {}):
                target = exported[tuple(cur)][left[0]]
            if target is None or target == f:
                continue
            # A module file re-exporting its own descendants (`pub use child::X`) gives them a
            # public name; it does not depend on them.
            if is_mod_file and reexport and module_of(src, target)[: len(here)] == here:
                continue
            edges[f].add(target)
    return edges


def cycles(edges: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def long_functions(src: Path, limit: int) -> list[tuple[Path, int, str, int]]:
    out = []
    for f in sorted(src.rglob("*.rs")):
        lines = f.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?fn\s+(\w+)", lines[i])
            if not m:
                i += 1
                continue
            depth, started, j = 0, False, i
            while j < len(lines):
                code = re.sub(r'"(?:\\.|[^"\\])*"', '""', re.sub(r"//.*", "", lines[j]))
                depth += code.count("{") - code.count("}")
                started = started or "{" in code
                if started and depth <= 0:
                    break
                if not started and code.rstrip().endswith(";"):
                    break
                j += 1
            n = j - i + 1
            if started and n > limit:
                out.append((f, i + 1, m.group(1), n))
            i = j + 1 if started else i + 1
    return out


def main() -> int:
    verbose = "--verbose" in sys.argv
    bad = 0
    for src in sorted(ROOT.glob("crates/*/src")):
        edges = crate_graph(src)
        if verbose:
            for f, ts in sorted(edges.items()):
                for t in sorted(ts):
                    print(f"{f.relative_to(ROOT)} -> {t.relative_to(ROOT)}")
        for c in cycles(edges):
            bad += 1
            names = [str(p.relative_to(ROOT)) for p in c]
            print(f"import circle in {src.parent.name}: " + " <-> ".join(names))
    for f, line, name, n in long_functions(ROOT / "crates/repro/src", MAX_REPRO_FN_LINES):
        bad += 1
        print(f"{f.relative_to(ROOT)}:{line}: fn {name} is {n} lines (at most {MAX_REPRO_FN_LINES})")
    if bad:
        return 1
    print("layers: no import circles; no function in crates/repro over 150 lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
