"""Writes a repository's files at its pinned commit into a directory of the cache.

Only what tapelint reads is written: Python files, notebooks, `.gitignore` files (tapelint
honours them) and `pyproject.toml` files (where a `[tool.tapelint]` table could be). Files of
4 MiB or more are left out whatever the source: the snapshot store keeps no such files (its
mirrors list them without their content), so leaving them out of a clone too makes a tree from
a mirror and one from GitHub the same.

The objects come from a local mirror (a bare git directory that holds the commit, as the
snapshot store's `fetch` leaves them: `MIRROR/owner+name/repo` or `MIRROR/owner+name`) or,
failing that, from GitHub: the one commit is fetched into a bare repository in the cache.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tapelint_eval.manifest import Repo

MAX_FILE_BYTES = 4 * 1024 * 1024
_WANTED_SUFFIXES = (".py", ".ipynb")
_WANTED_NAMES = (".gitignore", "pyproject.toml")
_REGULAR_FILE_MODES = ("100644", "100755")
_COMPLETE_MARKER = ".tapelint-eval-complete"


class MaterialiseError(RuntimeError):
    """A repository could not be brought into the cache; the message says why."""


@dataclass(frozen=True)
class Tree:
    root: Path
    source: str  # where the objects came from: a mirror's git directory or a GitHub URL
    files: int
    left_out: int  # files of MAX_FILE_BYTES or more, or absent from the mirror


def materialise(repo: Repo, cache_dir: Path, mirror_dir: Path | None) -> Tree:
    root = cache_dir / "trees" / f"{repo.slug}@{repo.commit[:12]}"
    marker = root / _COMPLETE_MARKER
    if marker.is_file():
        files, left_out, source = marker.read_text(encoding="utf-8").split("\n", 2)
        return Tree(root, source.strip(), int(files), int(left_out))
    git_dir, source = _objects_for(repo, cache_dir, mirror_dir)
    wanted, left_out = _wanted_blobs(git_dir, repo.commit)
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    _write_blobs(git_dir, wanted, partial)
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    marker.write_text(f"{len(wanted)}\n{left_out}\n{source}\n", encoding="utf-8")
    return Tree(root, source, len(wanted), left_out)


def _objects_for(repo: Repo, cache_dir: Path, mirror_dir: Path | None) -> tuple[Path, str]:
    if mirror_dir is not None:
        # A snapshot is a bare directory, or a clone whose git directory is `repo/.git`.
        for candidate in (
            mirror_dir / repo.slug / "repo" / ".git",
            mirror_dir / repo.slug / "repo",
            mirror_dir / repo.slug,
        ):
            if _has_commit(candidate, repo.commit):
                return candidate, str(candidate)
    git_dir = cache_dir / "git" / f"{repo.slug}.git"
    url = f"https://github.com/{repo.name}.git"
    if not _has_commit(git_dir, repo.commit):
        git_dir.mkdir(parents=True, exist_ok=True)
        _git(["init", "--quiet", "--bare", str(git_dir)])
        _git(["--git-dir", str(git_dir), "fetch", "--quiet", "--depth", "1", url, repo.commit])
    return git_dir, url


def _has_commit(git_dir: Path, commit: str) -> bool:
    if not git_dir.is_dir():
        return False
    result = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
    )
    return result.returncode == 0


def _wanted_blobs(git_dir: Path, commit: str) -> tuple[list[tuple[str, str]], int]:
    """(object id, path) of every file to write, and how many were left out: too large, or
    absent (git lists a file whose object a mirror lacks with a size that is not a number)."""
    listing = _git(["--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--long", commit])
    wanted: list[tuple[str, str]] = []
    left_out = 0
    for record in listing.split(b"\0"):
        if not record:
            continue
        header, path_bytes = record.split(b"\t", 1)
        mode, kind, oid, size = header.decode().split()
        path = path_bytes.decode("utf-8", "surrogateescape")
        name = PurePosixPath(path).name
        if kind != "blob" or mode not in _REGULAR_FILE_MODES:
            continue
        if not (name.endswith(_WANTED_SUFFIXES) or name in _WANTED_NAMES):
            continue
        if not size.isdigit() or int(size) >= MAX_FILE_BYTES:
            left_out += 1
            continue
        wanted.append((oid, path))
    return wanted, left_out


def _write_blobs(git_dir: Path, wanted: list[tuple[str, str]], root: Path) -> None:
    request = b"".join(oid.encode() + b"\n" for oid, _ in wanted)
    process = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input=request,
        capture_output=True,
        check=False,
    )
    if process.returncode != 0:
        raise MaterialiseError(f"git cat-file failed in {git_dir}: {process.stderr.decode()}")
    output = process.stdout
    position = 0
    for oid, path in wanted:
        end_of_header = output.index(b"\n", position)
        header = output[position:end_of_header].decode().split()
        if header[1] == "missing":
            raise MaterialiseError(f"{git_dir} lacks the object of {path} ({oid})")
        size = int(header[2])
        start = end_of_header + 1
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(output[start : start + size])
        position = start + size + 1


def _git(arguments: list[str]) -> bytes:
    process = subprocess.run(["git", *arguments], capture_output=True)
    if process.returncode != 0:
        raise MaterialiseError(f"git {' '.join(arguments)}: {process.stderr.decode().strip()}")
    return process.stdout
