"""The import graph of server/turnback and its circles (strongly connected components).

Module-level imports (run when a module loads) and function-level imports (run when a function
does) are kept apart: only a module-level circle forces a load order, so only those must not exist.
Imports under `if TYPE_CHECKING:` never run: they are no edge (a service names the server that
holds it only for the type checker).
`python tools/import_cycles.py` prints both; tests/test_import_cycles.py fails on a module-level one.
"""
import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "turnback"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str], root: Path = PACKAGE) -> tuple[set[str], set[str]]:
    """(module-level, function-level) modules of the package at `root` that `path` imports."""
    name, tree = module_name(path, root), ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top, inner = set(), set()

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                for branch in child.orelse:  # an `else:` runs
                    visit(ast.Module(body=[branch], type_ignores=[]), in_function)
                continue
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            targets = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                # `from pkg import mod` imports the module pkg.mod when there is one
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in child.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    (inner if nested else top).add(target)
            visit(child, nested)

    visit(tree, False)
    return top, inner


def _type_checking_only(node) -> bool:
    test = getattr(node, "test", None) if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def graph(root: Path = PACKAGE) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module-level, function-level) edges: module -> the package's modules it imports."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    top, inner = {}, {}
    for name, path in files.items():
        top[name], inner[name] = imports(path, set(files), root)
    return top, inner


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            connect(v)
    return sorted(found)


def main() -> int:
    top, inner = graph()
    both = {m: top[m] | inner[m] for m in top}
    for title, edges in (("module-level", top), ("module- and function-level", both)):
        found = circles(edges)
        print(f"{title} circles: {len(found)}")
        for component in found:
            print("  " + " ".join(component))
    return 1 if circles(top) else 0


if __name__ == "__main__":
    sys.exit(main())
