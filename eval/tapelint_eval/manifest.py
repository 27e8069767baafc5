"""`repos.toml`: the repositories of the evaluation, each pinned to one commit."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class ManifestError(ValueError):
    """The manifest cannot be used as it is; the message says where and why."""


@dataclass(frozen=True)
class Repo:
    name: str  # owner/name, as GitHub spells it
    commit: str  # 40 hex digits
    kind: str
    why: str

    @property
    def slug(self) -> str:
        """`owner+name`: how the snapshot store and the cache name a repository's directory."""
        return self.name.replace("/", "+")


def load_manifest(path: Path) -> list[Repo]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ManifestError(f"{path}: {error}") from error
    entries = data.get("repo")
    if not isinstance(entries, list) or not entries:
        raise ManifestError(f"{path}: expected one or more [[repo]] tables")
    repos: list[Repo] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries, start=1):
        where = f"{path}: [[repo]] #{index}"
        fields = {}
        for key in ("name", "commit", "kind", "why"):
            value = entry.get(key)
            if not isinstance(value, str) or not value.strip():
                raise ManifestError(f"{where}: `{key}` must be a non-empty string")
            fields[key] = value.strip()
        unknown = set(entry) - set(fields)
        if unknown:
            raise ManifestError(f"{where}: unknown keys {sorted(unknown)}")
        if not _NAME.match(fields["name"]):
            raise ManifestError(f"{where}: `name` must be owner/name, got {fields['name']!r}")
        if not _COMMIT.match(fields["commit"]):
            raise ManifestError(f"{where}: `commit` must be 40 lowercase hex digits")
        if fields["name"] in seen:
            raise ManifestError(f"{where}: {fields['name']} is listed twice")
        seen.add(fields["name"])
        repos.append(Repo(**fields))
    return repos


def load_repos_tsv(path: Path) -> list[Repo]:
    """A miss list's manifest (`../shared/recall/repos.tsv`): a header `set`, `repo`, `commit`,
    then one pinned repository a line; its set becomes the repository's `kind`."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ManifestError(f"{path}: {error}") from error
    if not lines or lines[0].split("\t") != ["set", "repo", "commit"]:
        raise ManifestError(f"{path}: expected the header `set<TAB>repo<TAB>commit`")
    repos: list[Repo] = []
    seen: set[str] = set()
    for number, text in enumerate(lines[1:], start=2):
        if not text.strip():
            continue
        where = f"{path}:{number}"
        fields = text.split("\t")
        if len(fields) != 3:
            raise ManifestError(f"{where}: expected three tab-separated fields")
        group, name, commit = (field.strip() for field in fields)
        if not _NAME.match(name):
            raise ManifestError(f"{where}: the repository must be owner/name, got {name!r}")
        if not _COMMIT.match(commit):
            raise ManifestError(f"{where}: the commit must be 40 lowercase hex digits")
        if name in seen:
            raise ManifestError(f"{where}: {name} is listed twice")
        seen.add(name)
        repos.append(Repo(name=name, commit=commit, kind=group, why="a miss list's repository"))
    return repos
