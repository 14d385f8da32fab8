"""What a CI runner does with action.yml and with docs/gate.md's GitLab recipe, for the tests that
run them (tests/test_gate_action.py): a composite action's `run:` steps, each in
``bash --noprofile --norc -eo pipefail`` (GitHub's `shell: bash`), its `${{ ... }}` expressions
filled in from the inputs and the event, `if:` conditions decided, `$GITHUB_OUTPUT` read back,
later steps skipped after a failure unless `always()`; `uses:` steps (setup-python, the cache,
the artifact upload) are listed, not run: the interpreter on PATH stands for setup-python's. A
GitLab job's `script:` lines run in one bash session that stops at the first failure, its
`variables:` and the CI variables in the environment, `after_script:` in a fresh one."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class Step:
    name: str
    ran: bool
    code: int = 0
    stdout: str = ""
    stderr: str = ""


@dataclass
class Job:
    steps: list[Step] = field(default_factory=list)
    failed: bool = False

    def step(self, name: str) -> Step:
        (found,) = [s for s in self.steps if s.name == name]
        return found


def _lookup(name: str, context: dict[str, Any]) -> Any:
    value: Any = context
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return ""
        value = value[part]
    return value


def evaluate(expression: str, context: dict[str, Any]) -> Any:
    """The few forms action.yml uses: ``always()``, ``a || b``, ``a != 'x'``, ``a == 'x'``, a
    dotted name (an unknown one is empty, as on GitHub)."""
    expression = expression.strip()
    if expression == "always()":
        return True
    if "||" in expression:
        return next((v for v in (evaluate(e, context) for e in expression.split("||")) if v), "")
    for op in ("!=", "=="):
        if op in expression:
            left, right = (part.strip() for part in expression.split(op, 1))
            equal = str(evaluate(left, context)) == right.strip("'")
            return equal if op == "==" else not equal
    return _lookup(expression, context)


def expand(text: str, context: dict[str, Any]) -> str:
    return EXPRESSION.sub(lambda m: str(evaluate(m.group(1), context)), text)


def run_action(action: dict[str, Any], with_: dict[str, str], github: dict[str, Any], cwd: Path,
               env: dict[str, str], timeout: float = 600) -> Job:
    """Run the composite ``action`` with the inputs ``with_`` and the ``github`` context in ``cwd``."""
    inputs = {name: str(with_.get(name, spec.get("default", ""))) for name, spec in action["inputs"].items()}
    context: dict[str, Any] = {"inputs": inputs, "github": github, "steps": {}}
    job = Job()
    for index, spec in enumerate(action["runs"]["steps"]):
        name = spec.get("name") or spec.get("uses") or f"step {index}"
        condition = spec.get("if")
        wanted = evaluate(condition, context) if condition else True
        if "uses" in spec or not wanted or (job.failed and condition != "always()"):
            job.steps.append(Step(name, False))
            continue
        outputs = cwd.parent / f"github-output-{index}"
        outputs.write_text("")
        step_env = {**env, "GITHUB_OUTPUT": str(outputs),
                    **{k: expand(str(v), context) for k, v in (spec.get("env") or {}).items()}}
        script = cwd.parent / f"step-{index}.sh"
        script.write_text(expand(spec["run"], context))
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd, env=step_env,
                              capture_output=True, text=True, timeout=timeout)
        job.steps.append(Step(name, True, done.returncode, done.stdout, done.stderr))
        if spec.get("id"):
            pairs = [line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line]
            context["steps"][spec["id"]] = {"outputs": dict(pairs)}
        job.failed = job.failed or done.returncode != 0
    return job


def run_gitlab(job: dict[str, Any], cwd: Path, env: dict[str, str], timeout: float = 600) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess | None]:
    """Run a GitLab job's ``script:`` (and ``after_script:``) in ``cwd``; its variables, then
    ``env``, in the environment."""
    job_env = {**{k: str(v) for k, v in (job.get("variables") or {}).items()}, **env}

    def shell(lines: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(lines)], cwd=cwd,
                              env=job_env, capture_output=True, text=True, timeout=timeout)

    script = shell(list(job["script"]))
    after = shell(list(job["after_script"])) if job.get("after_script") else None
    return script, after


def shims(folder: Path, python: str, record: Path) -> dict[str, str]:
    """A PATH whose ``python`` and ``vitbench`` are this interpreter's and whose ``pip`` (and
    ``python -m pip``) only writes its arguments to ``record``: the default suite runs a runner's
    commands without installing anything into the environment it runs in."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "python").write_text(
        "#!/usr/bin/env bash\n"
        f'if [ "${{1:-}}" = -m ] && [ "${{2:-}}" = pip ]; then shift 2; printf "%s\\n" "$*" >> "{record}"; exit 0; fi\n'
        f'exec "{python}" "$@"\n')
    (folder / "pip").write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$*" >> "{record}"\n')
    (folder / "vitbench").write_text(f'#!/usr/bin/env bash\nexec "{python}" -m vitbench "$@"\n')
    for name in ("python", "pip", "vitbench"):
        (folder / name).chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def gh_shim(folder: Path, record: Path) -> Path:
    """A ``gh`` that writes its arguments to ``record`` (a pull-request comment, recorded)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gh").write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$*" >> "{record}"\n')
    (folder / "gh").chmod(0o755)
    return folder


def log(job: Job | subprocess.CompletedProcess) -> str:
    """What a job printed, for an assertion's message."""
    if isinstance(job, subprocess.CompletedProcess):
        return job.stdout + job.stderr
    return "\n".join(f"--- {s.name} (exit {s.code})\n{s.stdout}{s.stderr}" for s in job.steps if s.ran)
