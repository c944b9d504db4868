"""The shape of the code (docs/architecture.md): which stage may import which, no import cycle,
short modules, few loose modules at the top."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "bench"

# bench.text (scripts, words, languages) is foundation too: every stage reads text; so is bench.core,
# the vocabulary every stage shares (measures, a run's records, a candidate's typed figures)
FOUNDATION = {
    "bench",
    "bench.errors",
    "bench.registry",
    "bench.files",
    "bench.formatting",
    "bench.measure",
    "bench.version",
}
# stage -> the stages its modules may import (each may always import itself and the foundation)
ALLOWED = {
    "inputs": set(),
    # asking chat models, and the HTTP plumbing every OpenAI-compatible client shares (llm.http_api)
    "llm": set(),
    # a chunk's context may be written by a chat model (chunking.situate: its prompt, its token estimate)
    "chunking": {"inputs", "llm"},
    "embedders": {"inputs", "chunking", "llm"},
    "engines": {"embedders"},
    "retrieval": {"inputs", "chunking", "embedders", "llm"},  # an HTTP reranker is an OpenAI-compatible client
    "evaluation": {"inputs", "chunking", "embedders"},
    "results": {"inputs", "evaluation"},
    "report": {"inputs", "chunking", "embedders", "evaluation", "results"},
    # a step that asks a chat model gets its settings from the config (Config.chat)
    "config": {"inputs", "chunking", "embedders", "retrieval", "evaluation", "llm"},
    # a run writes its reports once its results are in place, and its recommendation in words
    "run": {
        "inputs",
        "chunking",
        "embedders",
        "engines",
        "retrieval",
        "evaluation",
        "results",
        "report.writer",
        "report.decision_text",
        "config",
        "llm",
        "judging",
    },
    # a relevance judge reads a run's units, asks a chat model, and writes its grades beside the run's
    "judging": {"inputs", "embedders", "evaluation", "results", "llm"},
    # building a goldset pools passages the way a run retrieves them, and reads runs for distractors;
    # the review page is drawn as the inspector's is
    "drafting": {
        "inputs",
        "chunking",
        "embedders",
        "engines",
        "retrieval",
        "evaluation",
        "results",
        "report.inspector",
        "config",
        "run",
        "llm",
    },
    # the answer layer reads runs, asks chat models, and adds to the reports
    "answers": {"inputs", "evaluation", "results", "report", "llm"},
}
TOP = {"api", "cli", "__main__"}  # the entry points may import anything; so may `bench` itself, lazily


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, name: str, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:  # `if TYPE_CHECKING:` imports are not run
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "bench"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if base.split(".")[0] != "bench":
                continue
            for alias in node.names:  # `from bench.x import y` may name a module y
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in _MODULES else base)
    return found


_MODULES = _modules()


def _stage(module: str) -> str:
    if module in FOUNDATION or module.startswith(("bench.text", "bench.core")):
        return "foundation"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "bench"


def test_each_stage_imports_only_the_stages_below_it():
    wrong = []
    for name, path in _MODULES.items():
        stage = "api" if name == "bench" else _stage(name)
        if stage in ("foundation", *TOP):
            allowed = None if stage in TOP else set()
        else:
            allowed = ALLOWED[stage]
        for target in _imports(path, name, top_level_only=False):
            there = _stage(target)
            if allowed is None or there in ("foundation", stage):
                if stage == "foundation" and there != "foundation":
                    wrong.append(f"{name} -> {target}")
                continue
            dotted = ".".join(target.split(".")[1:3])
            if there not in allowed and dotted not in allowed:
                wrong.append(f"{name} ({stage}) -> {target} ({there})")
    assert not wrong, "imports across stages:\n" + "\n".join(sorted(wrong))


def test_no_import_cycle_between_modules():
    graph = defaultdict(set)
    for name, path in _MODULES.items():
        for target in _imports(path, name, top_level_only=True):
            if target in _MODULES and target != name:
                graph[name].add(target)
    # importing a package runs its __init__; a module's own package is an edge only when the
    # module imports it by name, which _imports already records
    cycles, state = [], {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                cycles.append(" -> ".join([*trail[trail.index(nxt) :], nxt]) if nxt in trail else f"{node}->{nxt}")
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = "done"

    for name in sorted(_MODULES):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_modules_stay_short_and_the_top_level_small():
    long = {name: n for name, path in _MODULES.items() if (n := len(path.read_text().splitlines())) > 500}
    assert not long, f"modules over 500 lines: {long}"
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 10, loose
