#!/usr/bin/env python3
"""Import circles between the files of a crate: files that import each other, through
any chain. Prints each circle and exits 1 if there is one.

    scripts/import-circles.py core/src actors

Each argument is a crate's root folder (the folder of its lib.rs). A file imports
another when it names an item of that file by a `crate::`, `super::` or `self::` path,
in a `use` or inline; a path to a module that only re-exports an item (`pub use
child::Item`) leads to the file that defines it. Test code is left out: files named
`*_tests.rs` or `tests.rs`, and `#[cfg(test)]` modules.
"""

import re
import sys
from pathlib import Path


def module_path(root: Path, file: Path) -> tuple:
    """The module a file is: `lib.rs` is (), `a/mod.rs` and `a.rs` are ("a",)."""
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts in (["lib"], ["main"]):
        return ()
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


def strip_tests(text: str) -> str:
    """The text without `#[cfg(test)]` items (a module's braces, or one line)."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        j = m.end()
        brace = text.find("{", j)
        semi = text.find(";", j)
        if semi != -1 and (brace == -1 or semi < brace):
            i = semi + 1
            continue
        depth, k = 0, brace
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1
    out.append(text[i:])
    return "".join(out)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree: str) -> list:
    """`a::{b, c::{d, e}}` as its paths: a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace == -1:
        return [tree.split(" as ")[0]]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    items, depth, start = [], 0, 0
    for k, c in enumerate(inner):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(inner[start:k])
            start = k + 1
    items.append(inner[start:])
    out = []
    for item in filter(None, items):
        for path in expand_use(item):
            out.append(prefix + path if path != "self" else prefix.rstrip(":"))
    return out


class Crate:
    def __init__(self, root: Path):
        self.root = root
        self.files = {}
        for f in sorted(root.rglob("*.rs")):
            if f.name.endswith("_tests.rs") or f.name == "tests.rs":
                continue
            if "target" in f.parts:
                continue
            self.files[module_path(root, f)] = f
        self.text = {
            m: strip_comments(strip_tests(f.read_text())) for m, f in self.files.items()
        }
        self.reexports = {m: self.find_reexports(m) for m in self.files}

    def absolute(self, module: tuple, path: str) -> tuple:
        """`path` (as written in `module`) from the crate root, or None if outside."""
        parts = path.split("::")
        if parts[0] == "crate":
            base, parts = [], parts[1:]
        elif parts[0] in ("super", "self"):
            base = list(module)
            while parts and parts[0] in ("super", "self"):
                if parts[0] == "super":
                    base = base[:-1]
                parts = parts[1:]
        else:
            return None
        return tuple(base + [p for p in parts if p and p != "*"])

    def find_reexports(self, module: tuple) -> dict:
        """Items `pub use`d by a module from elsewhere in the crate: name -> path."""
        out = {}
        for m in re.finditer(r"pub(?:\([^)]*\))?\s+use\s+([^;]+);", self.text[module]):
            tree = m.group(1).strip()
            if not re.match(r"(crate|super|self)::|[a-z_]+::", tree):
                continue
            for path in expand_use(tree):
                name = path.split("::")[-1]
                if not path.startswith(("crate", "super", "self")):
                    path = "self::" + path
                target = self.absolute(module, path)
                if target:
                    out[name] = target
        return out

    def file_of(self, path: tuple, seen=None) -> tuple:
        """The module that defines the item at `path`: the longest module prefix,
        through re-exports."""
        seen = seen or set()
        for n in range(len(path), -1, -1):
            prefix = path[:n]
            if prefix in self.files:
                rest = path[n:]
                if rest and rest[0] in self.reexports[prefix] and prefix not in seen:
                    target = self.reexports[prefix][rest[0]] + rest[1:]
                    return self.file_of(target, seen | {prefix})
                return prefix
        return None

    def edges(self) -> dict:
        graph = {m: set() for m in self.files}
        for module, text in self.text.items():
            paths = []
            for m in re.finditer(r"\buse\s+([^;]+);", text):
                paths.extend(expand_use(m.group(1)))
            paths.extend(re.findall(r"\b(?:crate|super)(?:::\w+)+", text))
            for path in paths:
                target = self.absolute(module, path)
                if target is None:
                    continue
                to = self.file_of(target)
                # A module's own `mod child; pub use child::X` re-exports are not an
                # import of its child by anything in it.
                if to is None or to == module:
                    continue
                if m_is_reexport_only(module, to, text):
                    continue
                graph[module].add(to)
        return graph


def m_is_reexport_only(module: tuple, to: tuple, text: str) -> bool:
    """A parent's `pub use child::Item;` of its own child: a re-export, not a use."""
    if to[: len(module)] != module or len(to) != len(module) + 1:
        return False
    child = to[-1]
    uses = re.findall(r"\b(pub(?:\([^)]*\))?\s+)?use\s+(?:self::)?" + child + r"\b", text)
    inline = re.findall(r"(?<!use )\b" + child + r"::", text)
    return all(pub for pub in uses) and len(inline) <= len(uses)


def circles(graph: dict) -> list:
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main() -> int:
    found = False
    for arg in sys.argv[1:] or ["core/src", "actors"]:
        crate = Crate(Path(arg))
        for component in circles(crate.edges()):
            found = True
            names = [str(crate.files[m].relative_to(crate.root)) for m in component]
            print(f"{arg}: " + " <-> ".join(names))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
