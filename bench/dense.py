"""The dense corpus and the notebook-versus-script pair of `bench/run.py`.

Training repositories are where tapelint does the most work per line: nearly every file has
a tape, so nearly every file is parsed, modelled and checked. The library corpus (TensorFlow
and Keras) says little about that case, so the benchmark also times a corpus made of
training code, named in `bench/dense.toml` (repositories and commits, never their code):

- the dense corpus: the `.py` files of those repositories that mention `GradientTape`;
- the same with every notebook of those repositories;
- the pair: one book notebook and the same code as one `.py` file (its code cells joined in
  order, each followed by a blank line), to compare what a notebook costs against a script.

The trees are materialised by the evaluation's code (`eval/tapelint_eval/materialise.py`)
from a directory of git mirrors into the evaluation's cache, then copied into the
benchmark's scratch directory, one directory per repository, where every command runs: the
scratch directory is the project root, so each repository's packages resolve through their
`__init__.py` files and its scripts through their own directories.
"""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "dense.toml"
sys.path.insert(0, str(HERE.parent / "eval"))

from tapelint_eval.manifest import Repo, load_manifest  # noqa: E402
from tapelint_eval.materialise import MaterialiseError, materialise  # noqa: E402

TAPE = b"GradientTape"


@dataclass(frozen=True)
class DenseCorpus:
    root: Path  # the project root every command runs from
    scripts: tuple[str, ...]  # the `.py` files with a tape, relative to root
    notebooks: tuple[str, ...]  # every notebook of the same repositories
    notebook: str  # the pair's notebook, relative to root
    script: str  # the same code as one `.py` file, relative to root


def build(mirror: Path, cache: Path, work: Path) -> DenseCorpus:
    """Materialise the manifest's trees and lay the corpus out under `work`."""
    repos = load_manifest(MANIFEST)
    pair = _pair(MANIFEST)
    root = work / "dense"
    root.mkdir()
    scripts: list[str] = []
    notebooks: list[str] = []
    for repo in repos:
        tree = _tree(repo, cache, mirror)
        shutil.copytree(tree, root / repo.slug, ignore=shutil.ignore_patterns(".tapelint-eval-*"))
        for path in sorted((root / repo.slug).rglob("*")):
            relative = str(path.relative_to(root))
            if path.suffix == ".py" and TAPE in path.read_bytes():
                scripts.append(relative)
            elif path.suffix == ".ipynb":
                notebooks.append(relative)
    pair_tree = _tree(pair, cache, mirror)
    pair_dir = root / "pair"
    pair_dir.mkdir()
    notebook = pair_dir / Path(pair.path).name
    shutil.copyfile(pair_tree / pair.path, notebook)
    script = notebook.with_suffix(".py")
    script.write_text(joined_cells(notebook), encoding="utf-8")
    return DenseCorpus(
        root,
        tuple(scripts),
        tuple(notebooks),
        str(notebook.relative_to(root)),
        str(script.relative_to(root)),
    )


def joined_cells(notebook: Path) -> str:
    """The notebook's code cells as one script, in order. The pair's notebook has no IPython
    syntax (magics, shell escapes), so the script is exactly the code the notebook runs."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return "".join(source.rstrip("\n") + "\n\n" for source in sources)


@dataclass(frozen=True)
class _Pair(Repo):
    path: str = ""


def _pair(manifest: Path) -> _Pair:
    table = tomllib.loads(manifest.read_text(encoding="utf-8"))["pair"]
    return _Pair(**table)


def _tree(repo: Repo, cache: Path, mirror: Path) -> Path:
    try:
        return materialise(repo, cache, mirror).root
    except MaterialiseError as error:
        raise RuntimeError(f"{repo.name}@{repo.commit[:12]}: {error}") from error
