"""The import circles of a package: strongly connected components of its module graph.

    python -m bench.import_cycles                       # taskcrawler.storage
    python -m bench.import_cycles taskcrawler           # the whole package
    python -m bench.import_cycles taskcrawler.storage --runtime

An edge is any import statement naming a module inside the package (function-level imports
included: they still tie the modules together); --runtime leaves out those under
`if TYPE_CHECKING:`. `from pkg import name` counts as an edge to pkg.name when that is a module,
to pkg otherwise. Prints each component of more than one module, largest first, then a summary.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_files(package: str) -> dict[str, Path]:
    base = ROOT.joinpath(*package.split("."))
    files: dict[str, Path] = {}
    for path in sorted(base.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST, runtime_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if runtime_only and isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, path: Path, known: set[str], runtime_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    targets: set[str] = set()
    for node in _import_nodes(tree, runtime_only):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            origin = _absolute(module, path.name == "__init__.py", node)
            names = [
                f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin
                for alias in node.names
            ]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
    return targets


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default="taskcrawler.storage")
    parser.add_argument(
        "--runtime", action="store_true", help="leave out imports under TYPE_CHECKING"
    )
    args = parser.parse_args(argv)
    files = module_files(args.package)
    known = set(files)
    graph = {m: imports_of(m, p, known, args.runtime) for m, p in files.items()}
    circles = sorted((c for c in strongly_connected(graph) if len(c) > 1), key=len, reverse=True)
    for circle in circles:
        print(f"{len(circle)} modules: {' '.join(circle)}")
    edges = sum(len(t) for t in graph.values())
    in_circles = sum(len(c) for c in circles)
    print(
        f"{args.package}{' (runtime)' if args.runtime else ''}: {len(files)} modules, "
        f"{edges} edges, {len(circles)} circles, {in_circles} modules in circles, "
        f"largest {len(circles[0]) if circles else 0}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
