"""Figures of the code's floor plan, measured from the source (every import, function-local ones too).

    python scripts/layout_figures.py [--json] [--typecheck]
    python scripts/layout_figures.py --compare REV [REV]   # side by side; the last column is the work tree
    python scripts/layout_figures.py --check               # exit 1 naming each broken rule (run by .ci/run)

* upward imports: a module importing a package of a higher layer
  (schemas < models < prompts < construction < eval < annotation < demo < cli)
* cross-package ``_private`` imports: ``benchsmith.X._private`` imported from outside ``benchsmith.X``
* built-ins using the evaluator's internals: a module of a subpackage of ``benchsmith.eval`` (a
  benchmark folder, the report) importing ``benchsmith.eval._private``; they use the public API a
  plug-in uses (``benchsmith.eval`` and its namespaces); likewise a construction graph, check or
  sub-package importing ``benchsmith.construction._private`` (they use ``benchsmith.construction``)
* import cycles between the top-level packages
* registries: module-level dicts filled by a registering decorator or function
* files outside ``eval/<benchmark>/`` naming each benchmark in code (identifiers, imports, string
  literals; not comments or docstrings): what adding a benchmark like it touches
* the evaluator's shape: lines in ``eval/_private`` and in each benchmark folder, names in
  ``benchsmith.eval.__all__``, scoring modes tested by name (``mode == "official"``) rather than
  read from a benchmark's ``Rules``, underscore names imported from another module (``from m import _x``
  where ``_x`` is not a submodule), ``dict[str, Any]`` written in ``schemas`` and ``eval``, and with
  ``--typecheck`` mypy's error count on ``schemas``, ``models`` and ``eval``
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["schemas", "models", "prompts", "construction", "eval", "annotation", "demo", "cli"]
BENCHMARKS = ["bfcl", "acebench", "teval", "gta", "toolassess", "nl2api"]


def modules(root: Path = ROOT) -> dict[str, Path]:
    """``benchsmith.<dotted>`` -> file, for every module of the installed folders."""
    found = {}
    for top in LAYERS:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(["benchsmith", *parts])] = path
    return found


def from_module(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` in module ``name`` (file ``path``) reads."""
    if not node.level:
        return node.module or ""
    base = (name if path.name == "__init__.py" else name.rsplit(".", 1)[0]).split(".")
    return ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))


def imports(name: str, path: Path) -> list[tuple[str, int]]:
    """Every ``benchsmith.*`` module this one imports (absolute names), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("benchsmith.")]
        elif isinstance(node, ast.ImportFrom):
            mod = from_module(name, path, node)
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
    return ".".join(parts[: parts.index("_private")]) if "_private" in parts else None


def in_subpackage(name: str, path: Path, owner: str) -> bool:
    """Whether module ``name`` (file ``path``) lives in a subpackage of ``owner`` other than its ``_private``."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    return package.startswith(owner + ".") and not package.startswith(owner + "._private")


def registries(path: Path) -> list[str]:
    """Public module-level name tables: a :class:`benchsmith.schemas.Registry`, or ``NAME: dict = {}``
    filled through ``registrar(NAME, ...)``, by ``NAME[key] = ...`` in a function (hand-rolled), or
    written out as a dict literal of functions or classes (a literal table). A benchmark's rules
    (``{"strict": ..., "official": ...}``: one object per scoring mode) are not counted."""
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
            modes = {k.value for k in value.keys if isinstance(k, ast.Constant)}
            # a benchmark's rules, one object per scoring mode, is the table the design asks for
            found[name] = "rules per mode" if modes == {"strict", "official"} else "literal table"
    return [f"{name} ({how})" for name, how in sorted(found.items()) if how != "rules per mode"]


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


def figures(root: Path = ROOT, typecheck: bool = False) -> dict:
    mods = modules(root)
    upward, private, internal, construction_internal, edges = [], [], [], [], defaultdict(set)
    regs = []
    for name, path in mods.items():
        here = top(name)
        for target, line in imports(name, path):
            there = top(target)
            where = f"{path.relative_to(root)}:{line} -> {target}"
            if there in LAYERS and there != here:
                edges[here].add(there)
                if LAYERS.index(there) > LAYERS.index(here):
                    upward.append(where)
            owner = private_owner(target)
            if owner and not (name == owner or name.startswith(owner + ".")):
                private.append(where)
            elif owner == "benchsmith.eval" and in_subpackage(name, path, owner):
                internal.append(where)
            elif owner == "benchsmith.construction" and in_subpackage(name, path, owner):
                construction_internal.append(where)
        regs += [f"{path.relative_to(root)}: {r}" for r in registries(path)]
    cycles = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, ())})
    naming = {}
    for b in BENCHMARKS:
        own = root / "eval" / b
        naming[b] = sorted(
            str(p.relative_to(root)) for p in mods.values() if own not in p.parents and _names_in_code(p, b)
        )
    out = {
        "upward_imports": sorted(set(upward)),
        "private_imports": sorted(set(private)),
        "eval_internal_imports": sorted(set(internal)),
        "construction_internal_imports": sorted(set(construction_internal)),
        "package_cycles": [list(c) for c in cycles],
        "registries": regs,
        "files_naming": naming,
    }
    out.update(eval_shape(root, mods))
    if typecheck:
        out["type_errors"] = type_errors(root)
    return out


def _lines(folder: Path) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py"))


def _statements(folder: Path) -> int:
    """Statements (the AST's), which a formatter's line wrapping does not change."""
    return sum(
        sum(isinstance(n, ast.stmt) for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))
        for p in folder.glob("*.py")
    )


def underscore_imports(mods: dict[str, Path], root: Path = ROOT) -> list[str]:
    """``from m import _x`` in one module naming another module's private ``_x`` (a submodule
    ``m/_x.py`` or package ``m/_x/`` is a module, not a name, and does not count)."""
    found = []
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            mod = from_module(name, path, node)
            for a in node.names:
                if not a.name.startswith("_") or a.name.startswith("__"):
                    continue
                if f"{mod}.{a.name}" in mods:
                    continue
                found.append(f"{path.relative_to(root)}:{node.lineno} {mod} {a.name}")
    return found


#: a scoring mode tested by its name (``mode == "official"``, ``!= "strict"``, ``_strict(mode)``) instead of a named rule
_MODE_TEST = re.compile(r"""[!=]=\s*["'](official|strict)["']|\b_strict\(mode\)""")


def eval_shape(root: Path, mods: dict[str, Path]) -> dict:
    folders = {"eval/_private": _lines(root / "eval" / "_private")}
    folders.update({f"eval/{b}": _lines(root / "eval" / b) for b in sorted(BENCHMARKS + ["agent"])})
    init = ast.parse((root / "eval" / "__init__.py").read_text(encoding="utf-8"))
    names = next(
        (
            len(n.value.elts)
            for n in init.body
            if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
        ),
        0,
    )
    any_dicts = sum(
        len(re.findall(r"\b[Dd]ict\[str, *Any\]", p.read_text(encoding="utf-8")))
        for top in ("schemas", "eval")
        for p in (root / top).rglob("*.py")
    )
    mode_tests = [
        f"{p.relative_to(root)}:{n}"
        for p in sorted((root / "eval").rglob("*.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if _MODE_TEST.search(line)
    ]
    return {
        "scoring_paths": scoring_paths(root),
        "mode_tests": mode_tests,
        "eval_lines": folders,
        "eval_statements": {k: _statements(root / k) for k in folders},
        "eval_all_names": names,
        "underscore_imports": underscore_imports(mods, root),
        "dict_str_any": any_dicts,
        "eval_registries": [
            r
            for r in (
                f"{p.relative_to(root)}: {r}"
                for p in mods.values()
                if (root / "eval") in p.parents
                for r in registries(p)
            )
        ],
    }


def scoring_paths(root: Path) -> list[str]:
    """The ways the ``Benchmark`` base class offers to turn scored records into scores.json: its
    methods returning the figures (``dict[str, Any]``) or something that builds them (an
    aggregator)."""
    tree = ast.parse((root / "eval" / "_private" / "core.py").read_text(encoding="utf-8"))
    base = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Benchmark")
    return [
        f"Benchmark.{fn.name} -> {ast.unparse(fn.returns)}"
        for fn in base.body
        if isinstance(fn, ast.FunctionDef)
        and fn.returns is not None
        and ("dict[str, Any]" in ast.unparse(fn.returns) or "Aggregat" in ast.unparse(fn.returns))
    ]


def type_errors(root: Path) -> list[str]:
    """mypy's error count on schemas, models and eval (its settings in pyproject.toml when present),
    on a tree of links naming the folders as the ``benchsmith.*`` packages they install as."""
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "src" / "benchsmith"
        pkg.mkdir(parents=True)
        for top in LAYERS:
            (pkg / top).symlink_to(root / top)
        config = (
            ["--config-file", str(root / "pyproject.toml")]
            if "[tool.mypy]" in (root / "pyproject.toml").read_text()
            else []
        )
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                *config,
                "--namespace-packages",
                "--explicit-package-bases",
                "--cache-dir",
                str(Path(tmp) / "cache"),
                "--no-error-summary",
                "-p",
                "benchsmith.schemas",
                "-p",
                "benchsmith.models",
                "-p",
                "benchsmith.eval",
            ],
            cwd=tmp,
            env={**os.environ, "MYPYPATH": str(Path(tmp) / "src")},
            capture_output=True,
            text=True,
        )
        if proc.returncode not in (0, 1):
            raise SystemExit(f"mypy failed to run: {proc.stderr.strip()[-500:]}")
        prefix = str(Path(tmp) / "src" / "benchsmith") + "/"
        return [
            line.replace(prefix, "").replace("src/benchsmith/", "")
            for line in proc.stdout.splitlines()
            if ": error:" in line
        ]


#: what must be empty: the floor plan's rules and the private-name rule
RULES = (
    "upward_imports",
    "private_imports",
    "eval_internal_imports",
    "construction_internal_imports",
    "package_cycles",
    "underscore_imports",
)


def rows(f: dict) -> list[tuple[str, int | str, list[str]]]:
    """(label, figure, what is counted) for the printed table."""
    out = [
        (key.replace("_", " "), len(f[key]), f[key])
        for key in ("upward_imports", "private_imports", "package_cycles", "registries")
    ]
    if "eval_internal_imports" in f:  # measured since the built-ins use the public API only
        out.insert(
            2, ("eval built-ins importing eval._private", len(f["eval_internal_imports"]), f["eval_internal_imports"])
        )
    if "construction_internal_imports" in f:  # the graphs, checks and sub-packages use the public API too
        found = f["construction_internal_imports"]
        out.insert(3, ("construction built-ins importing construction._private", len(found), found))
    out += [
        (f"files outside eval/{b + '/':12s} naming it", len(files), files) for b, files in f["files_naming"].items()
    ]
    out += [(f"lines in {folder}", n, []) for folder, n in f["eval_lines"].items()]
    out += [(f"statements in {folder}", n, []) for folder, n in f["eval_statements"].items()]
    out += [
        ("scoring paths (Benchmark methods giving scores.json)", len(f["scoring_paths"]), f["scoring_paths"]),
        ("names in benchsmith.eval.__all__", f["eval_all_names"], []),
        ("scoring modes tested by name in eval", len(f["mode_tests"]), f["mode_tests"]),
        ("underscore names imported across modules", len(f["underscore_imports"]), f["underscore_imports"]),
        ("dict[str, Any] in schemas and eval", f["dict_str_any"], []),
        ("name->object maps in eval", len(f["eval_registries"]), f["eval_registries"]),
    ]
    if "type_errors" in f:
        out.append(("mypy errors (schemas, models, eval)", len(f["type_errors"]), f["type_errors"]))
    return out


def extracted(rev: str, into: Path) -> Path:
    """The tree of ``rev`` (a commit of this repository), written under ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print everything as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="list what is counted")
    ap.add_argument("--typecheck", action="store_true", help="also count mypy's errors (about a minute per tree)")
    ap.add_argument("--check", action="store_true", help="exit 1 if a rule is broken: " + ", ".join(RULES))
    ap.add_argument(
        "--compare", nargs="+", metavar="REV", help="measure these commits too, in columns before the work tree"
    )
    args = ap.parse_args()
    if args.compare:
        with tempfile.TemporaryDirectory() as tmp:
            trees = [extracted(rev, Path(tmp) / str(i)) for i, rev in enumerate(args.compare)]
            columns = [rows(figures(t, args.typecheck)) for t in trees]
        columns.append(rows(figures(ROOT, args.typecheck)))
        heads = [*args.compare, "work tree"]
        print(f"{'':44s}" + "".join(f"{h[:12]:>13s}" for h in heads))
        for i, (label, _, _) in enumerate(columns[-1]):
            print(f"{label:44s}" + "".join(f"{str(c[i][1]) if i < len(c) else '-':>13s}" for c in columns))
        return
    f = figures(ROOT, args.typecheck)
    if args.check:
        rules = (*RULES, "type_errors") if args.typecheck else RULES  # with --typecheck: mypy must report none
        broken = [f"{rule.replace('_', ' ')}: {item}" for rule in rules for item in f[rule]]
        for line in broken:
            print(line, file=sys.stderr)
        raise SystemExit(1 if broken else 0)
    if args.json:
        json.dump(f, sys.stdout, indent=1)
        return
    for label, n, items in rows(f):
        print(f"{label:44s} {n}")
        if args.verbose:
            for item in items:
                print("    ", item)


if __name__ == "__main__":
    main()
