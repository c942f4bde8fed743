"""Figures of the code's floor plan, measured from the source (every import, function-local ones too).

    python scripts/layout_figures.py [--json]

* upward imports: a module importing a package of a higher layer
  (schemas < models < prompts < construction < eval < annotation < demo < cli)
* cross-package ``_private`` imports: ``benchsmith.X._private`` imported from outside ``benchsmith.X``
* import cycles between the top-level packages
* registries: module-level dicts filled by a registering decorator or function
* files outside ``eval/<benchmark>/`` naming each benchmark in code (identifiers, imports, string
  literals; not comments or docstrings): what adding a benchmark like it touches
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["schemas", "models", "prompts", "construction", "eval", "annotation", "demo", "cli"]
BENCHMARKS = ["bfcl", "acebench", "teval", "gta", "toolassess", "nl2api"]


def modules() -> dict[str, Path]:
    """``benchsmith.<dotted>`` -> file, for every module of the installed folders."""
    found = {}
    for top in LAYERS:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(["benchsmith", *parts])] = path
    return found


def imports(name: str, path: Path) -> list[tuple[str, int]]:
    """Every ``benchsmith.*`` module this one imports (absolute names), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("benchsmith.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == "benchsmith":
                out += [(f"benchsmith.{a.name}", node.lineno) for a in node.names]
            elif mod.startswith("benchsmith."):
                out.append((mod, node.lineno))
                out += [(f"{mod}.{a.name}", node.lineno) for a in node.names if a.name == "_private"]
    return out


def top(name: str) -> str:
    return name.split(".")[1]


def private_owner(name: str) -> str | None:
    parts = name.split(".")
    return ".".join(parts[:parts.index("_private")]) if "_private" in parts else None


def registries(path: Path) -> list[str]:
    """Public module-level name tables: a :class:`benchsmith.schemas.Registry`, or ``NAME: dict = {}``
    filled through ``registrar(NAME, ...)``, by ``NAME[key] = ...`` in a function (hand-rolled), or
    written out as a dict literal of functions or classes (a literal table)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tables = {}
    for n in tree.body:
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        for t in targets:
            if not (isinstance(t, ast.Name) and t.id.isupper() and not t.id.startswith("_")):
                continue
            if isinstance(n.value, ast.Dict):
                tables[t.id] = n.value
            elif isinstance(n.value, ast.Call) and getattr(n.value.func, "id", None) == "Registry":
                tables[t.id] = None
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "registrar" and node.args:
            if isinstance(node.args[0], ast.Name) and node.args[0].id in tables:
                found[node.args[0].id] = "registrar"
        if isinstance(node, ast.FunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign):
                    for t in sub.targets:
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in tables:
                            found.setdefault(t.value.id, "hand-rolled")
    for name, value in tables.items():
        if value is None:
            found[name] = "Registry"
        elif name not in found and value.values and all(isinstance(v, (ast.Name, ast.Attribute)) for v in value.values):
            found[name] = "literal table"
    return [f"{name} ({how})" for name, how in sorted(found.items())]


def _names_in_code(path: Path, word: str) -> bool:
    """Whether ``word`` appears in the module's code: an identifier, an attribute, an import or a
    string literal that is not a docstring (comments and docstrings do not count)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if word in node.value.lower():
                return True
        elif isinstance(node, ast.Name) and word in node.id.lower():
            return True
        elif isinstance(node, ast.Attribute) and word in node.attr.lower():
            return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(word in n.lower() for n in names):
                return True
    return False


def figures() -> dict:
    mods = modules()
    upward, private, edges = [], [], defaultdict(set)
    regs = []
    for name, path in mods.items():
        here = top(name)
        for target, line in imports(name, path):
            there = top(target)
            where = f"{path.relative_to(ROOT)}:{line} -> {target}"
            if there in LAYERS and there != here:
                edges[here].add(there)
                if LAYERS.index(there) > LAYERS.index(here):
                    upward.append(where)
            owner = private_owner(target)
            if owner and not (name == owner or name.startswith(owner + ".")):
                private.append(where)
        regs += [f"{path.relative_to(ROOT)}: {r}" for r in registries(path)]
    cycles = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, ())})
    naming = {}
    for b in BENCHMARKS:
        own = ROOT / "eval" / b
        naming[b] = sorted(str(p.relative_to(ROOT)) for p in mods.values()
                           if own not in p.parents and _names_in_code(p, b))
    return {"upward_imports": sorted(set(upward)), "private_imports": sorted(set(private)),
            "package_cycles": [list(c) for c in cycles], "registries": regs, "files_naming": naming}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print everything as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="list what is counted")
    args = ap.parse_args()
    f = figures()
    if args.json:
        json.dump(f, sys.stdout, indent=1)
        return
    for key in ("upward_imports", "private_imports", "package_cycles", "registries"):
        print(f"{key.replace('_', ' '):28s} {len(f[key])}")
        if args.verbose:
            for item in f[key]:
                print("    ", item)
    for b, files in f["files_naming"].items():
        print(f"files outside eval/{b + '/':12s} naming it {len(files)}")
        if args.verbose:
            for item in files:
                print("    ", item)


if __name__ == "__main__":
    main()
