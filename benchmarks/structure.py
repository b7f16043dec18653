"""The house's structure in counts (issue 41): modules over 500 lines, functions over 80, import
cycles, and the step-form flags tested outside the forms' own modules.

- **modules over 500 lines**: files under src/fabricsim, physical lines.
- **functions over 80 lines**: every `def` (methods and nested ones too), from its `def` line (or
  first decorator) to its last line.
- **import cycles**: strongly connected components of more than one module in the graph of
  `fabricsim` imports, counted twice: module-level imports only (what Python resolves at import
  time), and with the imports inside functions too (the layering a reader sees).
- **form flags outside form modules**: functions that read a step's form flags (`.ranges`,
  `.full_mesh`, `.line_mesh`, `.composed`: the flags the forms replaced) outside the IR package
  (`fabricsim.ir`), where the forms are defined;
- **form classes named outside the IR**: modules that name a stated form's class (to build one, as
  the algorithms that state their steps do, or to test for one).

Run: `.venv/bin/python benchmarks/structure.py` -> benchmarks/results/structure.json (and a summary).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "fabricsim"
FLAGS = ("ranges", "full_mesh", "line_mesh", "composed")
FORM_PACKAGE = "fabricsim.ir"  # the IR: the forms' own modules
# the stated forms' classes, and the mesh form's two constructors (ir/mesh.py)
FORM_CLASSES = ("MeshStep", "FullMeshStep", "LineMeshStep", "ComposedStep", "StatedForm", "StatedOnce")
MODULE_LIMIT, FUNCTION_LIMIT = 500, 80


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, node: ast.ImportFrom | ast.Import, known: dict[str, Path]) -> list[str]:
    """The package modules an import statement in module `name` names."""
    is_pkg = known[name].name == "__init__.py"
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        if node.level:
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        # `from pkg import mod` imports the submodule (the package is already importing); `from
        # mod import name` imports mod
        targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
    got = []
    for t in targets:
        while t and t not in known:  # `a.b.c` names module `a.b` when c is an attribute
            t = t.rpartition(".")[0]
        if t and t.startswith("fabricsim") and t != name:
            got.append(t)
    return got


def import_graph(known: dict[str, Path], module_level_only: bool) -> dict[str, set[str]]:
    """Module -> the package modules it imports (at module level only, or anywhere)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        nodes = tree.body if module_level_only else list(ast.walk(tree))
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name].update(_resolve(name, node, known))
        graph.setdefault(name, set())
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return sorted(out)


def long_functions(known: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(module, function, lines) of every function over FUNCTION_LIMIT lines."""
    out = []
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                n = node.end_lineno - first + 1
                if n > FUNCTION_LIMIT:
                    out.append((name, node.name, n))
    return sorted(out, key=lambda r: -r[2])


def flag_readers(known: dict[str, Path]) -> list[tuple[str, str]]:
    """(module, function) of every function outside the form modules that reads a form flag."""
    out = set()
    for name, path in known.items():
        if name == FORM_PACKAGE or name.startswith(FORM_PACKAGE + "."):
            continue
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            inner = {id(n) for f in ast.walk(fn) if f is not fn and isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                     for n in ast.walk(f)}
            if any(isinstance(n, ast.Attribute) and n.attr in FLAGS and id(n) not in inner for n in ast.walk(fn)):
                out.add((name, fn.name))
    return sorted(out)


def form_class_users(known: dict[str, Path]) -> list[tuple[str, str]]:
    """(module, class) of every module outside the IR that names a stated form's class (to build one,
    or to test for one)."""
    out = set()
    for name, path in known.items():
        if name == FORM_PACKAGE or name.startswith(FORM_PACKAGE + "."):
            continue
        for n in ast.walk(ast.parse(path.read_text())):
            got = n.id if isinstance(n, ast.Name) else n.name if isinstance(n, ast.alias) else None
            if got in FORM_CLASSES:
                out.add((name, got))
    return sorted(out)


def main() -> dict:
    """Count, print a summary, write results/structure.json."""
    known = modules()
    big = sorted(((n, len(p.read_text().splitlines())) for n, p in known.items()), key=lambda r: -r[1])
    big = [r for r in big if r[1] > MODULE_LIMIT]
    longf = long_functions(known)
    cyc_top = cycles(import_graph(known, True))
    cyc_all = cycles(import_graph(known, False))
    flags = flag_readers(known)
    users = form_class_users(known)
    row = {"modules": len(known), "modules_over_500_lines": [{"module": n, "lines": k} for n, k in big],
           "functions_over_80_lines": [{"module": m, "function": f, "lines": k} for m, f, k in longf],
           "import_cycles_module_level": cyc_top, "import_cycles_with_lazy_imports": cyc_all,
           "form_flag_readers_outside_form_modules": [{"module": m, "function": f} for m, f in flags],
           "form_classes_named_outside_ir": [{"module": m, "class": c} for m, c in users]}
    print(f"modules: {len(known)}; over {MODULE_LIMIT} lines: {len(big)}; functions over {FUNCTION_LIMIT} lines: "
          f"{len(longf)}; import cycles: {len(cyc_top)} at module level, {len(cyc_all)} with lazy imports; "
          f"functions reading form flags outside form modules: {len(flags)} in {len({m for m, _ in flags})} files; "
          f"modules naming a stated form's class outside the IR: {len({m for m, _ in users})}")
    for c in cyc_all:
        print("  cycle:", " <-> ".join(c))
    return write_results("structure", "the package's structure in counts (benchmarks/structure.py)", [row])


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
