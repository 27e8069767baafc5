"""Runs tapelint over one materialised repository, as a user would from its root."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath

from tapelint_eval.labels import Finding


class LintError(RuntimeError):
    """tapelint could not check a repository; the message says why."""


def tapelint_config_for(root: Path) -> Path | None:
    """The `pyproject.toml` whose `[tool.tapelint]` a run from `root` would read: the first one
    upward that has the table (tapelint's own rule)."""
    for directory in (root, *root.parents):
        candidate = directory / "pyproject.toml"
        if not candidate.is_file():
            continue
        try:
            data = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(data.get("tool"), dict) and "tapelint" in data["tool"]:
            return candidate
    return None


def run_tapelint(repo: str, root: Path, preview: bool) -> list[Finding]:
    """Every finding of the default rules (and the preview ones with `preview`) in `root`.

    A `[tool.tapelint]` outside the repository (in a directory above the cache) would change
    what is checked, so it is an error; the repository's own configuration is used as is.
    """
    config = tapelint_config_for(root)
    if config is not None and not config.resolve().is_relative_to(root.resolve()):
        raise LintError(
            f"a run in {root} would read the [tool.tapelint] of {config}; "
            "put the cache directory outside any project that configures tapelint"
        )
    command = [sys.executable, "-m", "tapelint", "check", ".", "--output-format", "json"]
    command += ["--no-cache", "--exit-zero", "--quiet"]
    if preview:
        command.append("--preview")
    process = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if process.returncode != 0:
        raise LintError(
            f"tapelint exited {process.returncode} in {root}: {process.stderr.strip()[-2000:]}"
        )
    try:
        records = json.loads(process.stdout)
    except json.JSONDecodeError as error:
        raise LintError(f"tapelint printed no JSON in {root}: {error}") from error
    return [_finding(repo, root, record) for record in records]


def _finding(repo: str, root: Path, record: dict) -> Finding:
    path = Path(record["path"])
    if path.is_absolute():
        path = path.relative_to(root)
    return Finding(
        repo=repo,
        path=str(PurePosixPath(*path.parts)),
        cell=record.get("cell"),
        line=record["line"],
        column=record["column"],
        code=record["code"],
        message=record["message"],
    )
