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
