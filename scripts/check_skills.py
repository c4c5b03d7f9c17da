#!/usr/bin/env python3
"""Performs Falcon's agent skills as written and checks what they tell an agent to read (scripts/check-skills.sh
prepares the store and runs this).

For every scenario of a skill in the scenarios file:
  1. every fenced ```bash block of its SKILL.md runs, in order, with `bash -euo pipefail`, in a fresh scratch
     folder (a project folder where the example workloads run: `examples/` and `.cache/example-venv` link to
     the repository's), with `falcon` on PATH (on the prepared store), SKILL_DIR set to the skill's folder, and
     the scenario's variables (its `env`; `vars` of the skill's block are set from earlier answers as they
     appear);
  2. every JSON path the skill's ```yaml `fields:` block lists must exist in the file it names; a path ending
     in `?` is one the skill says may be absent for some inputs (`launch?`: PyTorch traces only): it must exist
     in at least one of the skill's scenarios, so a renamed field still fails;
  3. its `conclude:` rules, read in order, must reach the conclusion the scenario expects.

Paths: `a.b`, `a[0].b`, `a[].b` (every element of the list has `b`; an empty list passes), and an index that
is a path of the same file plus or minus a number, `points[changes[0].index - 1].experiment`. Conditions are
Python expressions over `{file:path}` values (`true`, `false`, `null` as in JSON; `len()`); a condition over a
missing value or a null in arithmetic is false. A `then` may interpolate `{file:path}`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[A-Za-z0-9_-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)
REF = re.compile(r"\{([^{}:]+):([^{}]+)\}")
BLOCK_TIMEOUT_S = 1200


class Missing(Exception):
    """A path that does not resolve."""


def blocks(text: str, lang: str) -> list[str]:
    out = []
    for m in FENCE.finditer(text):
        if m.group("lang") == lang:
            indent = len(m.group("indent"))
            out.append("\n".join(line[indent:] for line in m.group("body").splitlines()))
    return out


def skill_spec(text: str, name: str) -> dict:
    specs = [yaml.safe_load(b) for b in blocks(text, "yaml")]
    specs = [s for s in specs if isinstance(s, dict) and "fields" in s]
    if len(specs) != 1:
        raise SystemExit(f"skills/{name}/SKILL.md: expected one ```yaml block with `fields:`, found {len(specs)}")
    return specs[0]


def split_path(path: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in path:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


SEGMENT = re.compile(r"^(?P<name>[^\[\]]*)(?P<index>\[.*\])?$")


def index_value(doc, expr: str):
    """An index: `0`, or `path ± n` over the same document."""
    expr = expr.strip()
    if re.fullmatch(r"-?\d+", expr):
        return int(expr)
    m = re.fullmatch(r"(.+?)\s*([+-])\s*(\d+)", expr)
    base, offset = (m.group(1), int(m.group(3)) * (1 if m.group(2) == "+" else -1)) if m else (expr, 0)
    value = get(doc, base)
    if not isinstance(value, int):
        raise Missing(f"index `{expr}` is not a number ({value!r})")
    return value + offset


def walk(doc, parts: list[str], every: bool):
    """The values at `parts`; with `every`, `[]` means each element (all must resolve)."""
    if not parts:
        return [doc]
    m = SEGMENT.match(parts[0])
    if not m:
        raise Missing(f"bad path segment `{parts[0]}`")
    value = doc
    if m.group("name"):
        if not isinstance(value, dict) or m.group("name") not in value:
            raise Missing(f"no `{m.group('name')}`")
        value = value[m.group("name")]
    if m.group("index") is not None:
        inner = m.group("index")[1:-1]
        if not isinstance(value, list):
            raise Missing(f"`{parts[0]}` is not a list")
        if inner.strip() == "":
            if not every:
                raise Missing(f"`{parts[0]}`: `[]` names every element, not a value")
            out = []
            for item in value:
                out.extend(walk(item, parts[1:], every))
            return out
        i = index_value(ROOT_STACK[-1], inner)
        if not -len(value) <= i < len(value):
            raise Missing(f"`{parts[0]}`: index {i} outside a list of {len(value)}")
        value = value[i]
    return walk(value, parts[1:], every)


ROOT_STACK: list = []


def get(doc, path: str):
    ROOT_STACK.append(doc)
    try:
        return walk(doc, split_path(path), every=False)[0]
    finally:
        ROOT_STACK.pop()


def check_exists(doc, path: str) -> None:
    ROOT_STACK.append(doc)
    try:
        walk(doc, split_path(path), every=True)
    finally:
        ROOT_STACK.pop()


class Docs:
    def __init__(self, folder: Path):
        self.folder = folder
        self.cache: dict[str, object] = {}

    def load(self, name: str):
        if name not in self.cache:
            path = self.folder / name
            if not path.is_file():
                raise Missing(f"{name} was not written")
            text = path.read_text()
            try:
                self.cache[name] = json.loads(text)
            except json.JSONDecodeError as e:
                raise Missing(f"{name} is not JSON ({e}): {text[:200]!r}") from e
        return self.cache[name]

    def value(self, file: str, path: str):
        return get(self.load(file), path)


ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.BinOp, ast.Add, ast.Sub,
           ast.Mult, ast.Div, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
           ast.Name, ast.Load, ast.Constant, ast.Call, ast.List, ast.Tuple)


def condition(expr: str, docs: Docs) -> bool:
    values = {}

    def bind(m):
        key = f"_v{len(values)}"
        values[key] = docs.value(m.group(1), m.group(2))
        return key

    try:
        code = REF.sub(bind, expr)
    except Missing:
        return False
    code = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", code)))
    tree = ast.parse(code, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, ALLOWED):
            raise SystemExit(f"condition `{expr}`: `{type(node).__name__}` is not allowed")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id == "len"):
            raise SystemExit(f"condition `{expr}`: only len() may be called")
        if isinstance(node, ast.Name) and node.id not in values and node.id not in ("len", "True", "False", "None"):
            raise SystemExit(f"condition `{expr}`: unknown name `{node.id}`")
    try:
        return bool(eval(compile(tree, "<condition>", "eval"), {"__builtins__": {}, "len": len}, values))  # noqa: S307
    except (TypeError, ZeroDivisionError):
        return False


def render(template: str, docs: Docs) -> str:
    return REF.sub(lambda m: str(docs.value(m.group(1), m.group(2))), template)


def conclude(rules: list, docs: Docs) -> str:
    for rule in rules:
        if "if" not in rule or condition(str(rule["if"]), docs):
            return render(str(rule["then"]), docs)
    return "(no rule held)"


def substitute(text: str, ids: dict, repo: Path, repos: dict) -> str:
    """`{repo}`, `{ids.KEY}`, and `{bisect.NAME}` (the path of a repository examples/bisect/make-repo.sh made) or
    `{bisect.NAME.KEY}` (a field of what it printed: `culprit`, `good`, …)."""
    text = re.sub(r"\{bisect\.(\w+)(?:\.(\w+))?\}", lambda m: str(repos[m.group(1)][m.group(2) or "repo"]), text)
    return re.sub(r"\{ids\.(\w+)\}", lambda m: str(ids[m.group(1)]), text.replace("{repo}", str(repo)))


def run_scenario(name: str, skill_dir: Path, spec: dict, scenario: dict, args, ids: dict, repo: Path, repos: dict,
                 found: set) -> tuple:
    text = (skill_dir / "SKILL.md").read_text()
    work = Path(tempfile.mkdtemp(prefix=f"skill-{name}-"))
    work.chmod(0o755)  # as root, jobs run as users of their own, which must enter it (docs/guide/jobs.md, "Workload isolation")
    # The folder is a project the example workloads run in: their specs name `examples/…` and
    # `.cache/example-venv/…` relative to where falcon runs (the local backend starts jobs there).
    (work / ".cache").mkdir()
    (work / ".cache" / "example-venv").symlink_to(repo / ".cache" / "example-venv")
    (work / "examples").symlink_to(repo / "examples")
    env = dict(os.environ)
    env["PATH"] = f"{Path(args.falcon).resolve().parent}{os.pathsep}{env['PATH']}"
    env["FALCON_CONFIG_FILE"] = str(Path(args.config).resolve())
    env["SKILL_DIR"] = str(skill_dir.resolve())
    for key, value in (scenario.get("env") or {}).items():
        env[key] = substitute(str(value), ids, repo, repos)
    docs = Docs(work)
    log = []
    try:
        for i, block in enumerate(blocks(text, "bash"), 1):
            docs.cache.clear()  # earlier blocks may have written more
            for var, ref in (spec.get("vars") or {}).items():
                file, path = ref.split(":", 1)
                try:
                    env[var] = str(docs.value(file, path))
                except Missing:
                    pass
            started = time.monotonic()
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=BLOCK_TIMEOUT_S)
            log.append(f"block {i} ({time.monotonic() - started:.1f} s): exit {done.returncode}")
            if done.returncode != 0:
                return False, f"bash block {i} exited {done.returncode}:\n{block}\n--- stderr:\n{done.stderr[-3000:]}", log
        docs.cache.clear()
        missing = []
        for file, paths in spec["fields"].items():
            for path in paths:
                optional = path.endswith("?")
                try:
                    check_exists(docs.load(file), path.rstrip("?"))
                    if optional:
                        found.add((file, path))
                except Missing as e:
                    if not optional:
                        missing.append(f"{file}: {path}: {e}")
        if missing:
            return False, "fields the skill reads are missing:\n  " + "\n  ".join(missing), log
        got = conclude(spec.get("conclude") or [], docs)
        if "expect_match" in scenario:
            pattern = substitute(str(scenario["expect_match"]), ids, repo, repos)
            if not re.fullmatch(pattern, got):
                return False, f"concluded `{got}`, expected a match of `{pattern}`", log
        else:
            want = substitute(str(scenario["expect"]), ids, repo, repos)
            if got != want:
                return False, f"concluded `{got}`, expected `{want}`", log
        return True, got, log
    finally:
        if not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--falcon", required=True)
    p.add_argument("--config", required=True, help="falcon.toml of the prepared store")
    p.add_argument("--ids", required=True, help="ids.json of the prepared store")
    p.add_argument("--bisect-repos", help="JSON: name -> what examples/bisect/make-repo.sh printed for it")
    p.add_argument("--scenarios", required=True)
    p.add_argument("--skills", required=True)
    p.add_argument("--only")
    p.add_argument("--keep-work", action="store_true")
    args = p.parse_args()
    repo = Path(__file__).resolve().parent.parent
    ids = json.load(open(args.ids))
    repos = json.load(open(args.bisect_repos)) if args.bisect_repos else {}
    scenarios = yaml.safe_load(open(args.scenarios))
    skills = sorted(d.name for d in Path(args.skills).iterdir() if (d / "SKILL.md").is_file())
    unchecked = [s for s in skills if s not in scenarios]
    if unchecked:
        print(f"skills without a scenario (every skill is checked): {', '.join(unchecked)}", file=sys.stderr)
        return 1
    passed = failed = 0
    for name in skills:
        if args.only and name != args.only:
            continue
        spec = skill_spec((Path(args.skills) / name / "SKILL.md").read_text(), name)
        found: set = set()
        for n, scenario in enumerate(scenarios[name], 1):
            started = time.monotonic()
            ok, said, log = run_scenario(name, Path(args.skills) / name, spec, scenario, args, ids, repo, repos,
                                         found)
            took = time.monotonic() - started
            if ok:
                passed += 1
                print(f"skill {name} #{n} ... ok ({took:.1f} s): {said}")
            else:
                failed += 1
                print(f"skill {name} #{n} ... FAILED ({took:.1f} s)\n  " + "\n  ".join(log) + f"\n{said}")
        never = [f"{file}: {path}" for file, paths in spec["fields"].items() for path in paths
                 if path.endswith("?") and (file, path) not in found]
        if never:
            failed += 1
            print(f"skill {name}: optional fields no scenario's output has (renamed?): {', '.join(never)}")
    print(f"skill checks: {passed} passed; {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
