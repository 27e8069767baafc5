#!/usr/bin/env python3
"""tapelint's speed benchmark: tapelint against ruff, flake8 and Fixit on real code.

    python3 -m pip install -e '.[bench]'   # tapelint, ruff, flake8, TensorFlow (the corpus)
    python3 bench/run.py                   # about 20 minutes on 2 busy cores

Corpus: the `.py` files of the `tensorflow` and `keras` packages installed in the running
interpreter's environment (found without importing them). Every tool is run as its own
command, from this one process tree, round after round with the order of the tools rotated
each round, so that drift in the machine's load hits all tools alike (tapelint's bytecode is
written first, as an installed package has it); the tables show medians of the wall times,
and of the CPU time (user + system of the whole process tree, from os.wait4), which a
shared machine disturbs less than wall time.

- tapelint cold: an empty cache directory each run (so the run also writes the cache);
  tapelint cold `--jobs 1`; tapelint warm: the same command again with the cache filled by
  an untimed run. Their outputs are compared: warm and `--jobs 1` must print exactly what
  the cold parallel run prints.
- ruff: `ruff check --no-cache` with its default rules.
- flake8: `flake8 --select F -j <cores>` (pyflakes' checks; flake8 still tokenizes every
  file for its other checks and then drops their results).
- Fixit: `fixit lint` with its default rules on a fixed subset, the top-level modules of
  `tensorflow/python/eager` (it is too slow for the whole corpus); tapelint cold is run on
  the same subset for a like-for-like ratio.

Peak memory: the sum of the proportional set size (PSS, so pages a process pool shares count
once) of the tool's whole process tree, sampled every 20 ms from /proc, in an untimed run
(flake8 and Fixit: during their first timed run), and the peak resident size of the tree's
largest process. (os.wait4's maxrss cannot be used: on Linux it includes the memory of the
benchmark process the child was forked from.)

The scaling tables run tapelint cold on a generated corpus: one training-step file copied
10, 100 and 1000 times, and single files of about 1k, 10k and 100k lines. "net per 1k
lines" subtracts the time to check one tiny file (interpreter start, imports, discovery).

With `--training-repo PATH` (a checkout of a repository of training code, such as
google/uncertainty-baselines), a second table times tapelint cold and warm and ruff on it,
run from its root (the project root, where imports are resolved), and tapelint cold on three
of its files with a tape (what a pre-commit hook checks). "What the index costs" runs
`tapelint.run.runner.run` once, cold, on each corpus and reports its passes (`RunStats`): the
files the first pass parsed, those checked again with the project index, the modules
outside the run analysed or read for their imports, and the seconds of each step.

The start-up table comes first (alone with `--startup-only`, a minute or two): `--version`,
`--help`, and a check of one small training file (`--no-cache`, 21 lines, one tape), each
against ruff doing the same; what every shell-completion TAB, pre-commit hook and flake8
run on a few files pays before any work (target: `--version` and `--help` under 0.15 s, the
small file under 0.5 s).

With `--dense-mirror MIRROR` (a directory of bare git mirrors, `MIRROR/owner+name[/repo]`, as
the evaluation reads them), the dense tables: training code, where nearly every file has a
tape (`bench/dense.toml` names the repositories and commits; `bench/dense.py` materialises
them with the evaluation's code into its cache, `--dense-cache`, default
`~/.cache/tapelint-eval` or TAPELINT_EVAL_CACHE):

    python3 bench/run.py --skip-fixit --skip-scaling --dense-mirror /work/.mirror

- the dense corpus: tapelint cold and warm and ruff on the repositories' `.py` files that
  mention `GradientTape`, then tapelint cold and ruff on the same files with every notebook
  of those repositories, each against ruff on the same files (target: 10 times ruff);
- the pair: tapelint cold on one book notebook and on the same code as one `.py` file (its
  code cells joined), and on one empty file (start-up), so that the notebook's cost against
  the script's is given with and without start-up (target: 1.3).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

FIXIT_VERSION = "2.2.1"  # its own environment: it pins click<8.2, tapelint needs >=8.2
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dense  # noqa: E402  (bench/dense.py, beside this script)


class BenchError(Exception):
    """A problem the user can fix; printed as one line, exit status 2."""


# ---------------------------------------------------------------------------- corpus
@dataclass(frozen=True)
class Corpus:
    paths: tuple[Path, ...]
    files: int
    lines: int


def locate_corpus() -> Corpus:
    roots = []
    for name in ("tensorflow", "keras"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise BenchError(
                f"the benchmark corpus is the installed `{name}` package, and this "
                f"interpreter ({sys.executable}) has none: "
                "install it with `python3 -m pip install -e '.[bench]'`"
            )
        roots.append(Path(next(iter(spec.submodule_search_locations))))
    return measure_corpus(roots)


def measure_corpus(paths: Sequence[Path]) -> Corpus:
    files = [f for p in paths for f in (p.rglob("*.py") if p.is_dir() else [p])]
    return Corpus(tuple(paths), len(files), sum(_line_count(f) for f in files))


def _line_count(path: Path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


# ---------------------------------------------------------------------------- running
@dataclass
class Result:
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)  # user + system, whole tree
    tree_pss_kb: int | None = None  # peak summed PSS of the whole tree (sampled)
    largest_rss_kb: int | None = None  # peak RSS of its largest process (sampled)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu_times)


@dataclass(frozen=True)
class Command:
    label: str
    argv: tuple[str, ...]
    corpus: Corpus
    prepare: str | None = None  # "fresh-cache" or "warm-cache"
    slow: bool = False  # fewer runs
    cwd: Path | None = None  # where it runs (default: the scratch directory)


@dataclass(frozen=True)
class Sample:
    seconds: float
    cpu_seconds: float  # user + system of the process and the children it waited for
    tree_pss_kb: int | None  # peak summed PSS of the tree, when sampled
    largest_rss_kb: int | None  # peak RSS of its largest process, when sampled
    stdout: str


def run_once(argv: Sequence[str], cwd: Path, *, sample_memory: bool = False) -> Sample:
    """One run; its exit status must be 0 or 1 (1: the tool found something)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err)
        peak = largest = 0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG if sample_memory else 0)
            if pid:
                break
            sizes = [_memory(pid) for pid in _descendants(process.pid)]
            peak = max(peak, sum(pss for pss, _ in sizes))
            largest = max([largest, *(rss for _, rss in sizes)])
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode not in (0, 1):
            message = err.read().decode(errors="replace").strip().splitlines()[-5:]
            raise BenchError(
                f"`{' '.join(argv)}` exited {process.returncode}: " + " | ".join(message)
            )
        cpu = usage.ru_utime + usage.ru_stime
        if not sample_memory:
            return Sample(elapsed, cpu, None, None, out.read().decode())
        return Sample(elapsed, cpu, peak, largest, out.read().decode())


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def _memory(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of one process in KB; zeros for a process that is gone."""
    found = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as file:
            for line in file:
                key, _, rest = line.partition(":")
                if key in ("Pss", "Rss"):
                    found[key] = int(rest.split()[0])
    except (OSError, ValueError):
        pass
    return found.get("Pss", 0), found.get("Rss", 0)


# ---------------------------------------------------------------------------- tools
@dataclass(frozen=True)
class Tools:
    tapelint: str
    ruff: str
    flake8: str
    fixit: str | None


def find_tools(fixit: str | None, skip_fixit: bool) -> Tools:
    bindir = str(Path(sys.executable).parent)

    def which(name: str) -> str:
        found = shutil.which(name, path=bindir) or shutil.which(name)
        if found is None:
            raise BenchError(f"`{name}` is not installed: `python3 -m pip install -e '.[bench]'`")
        return found

    return Tools(
        tapelint=which("tapelint"),
        ruff=which("ruff"),
        flake8=which("flake8"),
        fixit=None if skip_fixit else (fixit or _fixit_environment()),
    )


def compile_tapelint() -> None:
    """Write the bytecode of tapelint's own modules, as `pip install` does for an installed
    package. An editable install leaves it to the first import, and with
    PYTHONDONTWRITEBYTECODE set (as on some CI machines) every run would compile tapelint's
    sources again: about 0.08 s of each run that a user's installation never pays."""
    import compileall

    import tapelint
    from tapelint import rules

    for package in (tapelint, rules):
        for directory in package.__path__:
            compileall.compile_dir(directory, quiet=1)


def _fixit_environment() -> str:
    """Fixit from `bench/.fixit-venv`, created on first use (Fixit cannot share tapelint's
    environment: it requires click<8.2)."""
    venv = HERE / ".fixit-venv"
    fixit = venv / "bin" / "fixit"
    if not fixit.exists():
        print(f"creating {venv} with fixit=={FIXIT_VERSION} (once)...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"fixit=={FIXIT_VERSION}"],
            check=True,
        )
    return str(fixit)


def tool_version(argv: Sequence[str]) -> str:
    result = subprocess.run([*argv, "--version"], capture_output=True, text=True)
    return " ".join((result.stdout or result.stderr).split()[:3])


# ---------------------------------------------------------------------------- the scaling corpus
UNIT = '''

def train_step_{i}(model, optimizer, x, y):
    """One optimisation step."""
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = tf.reduce_mean(tf.keras.losses.mse(y, predictions))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


def evaluate_{i}(model, dataset):
    """Mean loss over a dataset; no tape here."""
    total, count = 0.0, 0
    for x, y in dataset:
        predictions = model(x, training=False)
        total += float(tf.reduce_mean(tf.keras.losses.mse(y, predictions)))
        count += 1
    return total / max(count, 1)
'''
HEADER = "import tensorflow as tf\n"


def training_file(target_lines: int) -> str:
    parts, lines, i = [HEADER], 1, 0
    while lines < target_lines:
        unit = UNIT.format(i=i)
        parts.append(unit)
        lines += unit.count("\n")
        i += 1
    return "".join(parts)


def write_scaling_corpus(base: Path) -> dict[str, Corpus]:
    corpora: dict[str, Corpus] = {}
    tiny = base / "tiny.py"
    tiny.write_text(HEADER)
    corpora["startup"] = measure_corpus([tiny])
    one = training_file(100)
    for copies in (10, 100, 1000):
        directory = base / f"copies_{copies}"
        directory.mkdir()
        for n in range(copies):
            (directory / f"train_{n:04d}.py").write_text(one)
        corpora[f"{copies} files"] = measure_corpus([directory])
    for size in (1_000, 10_000, 100_000):
        path = base / f"single_{size}.py"
        path.write_text(training_file(size))
        corpora[f"1 file, {size // 1000}k lines"] = measure_corpus([path])
    return corpora


# ---------------------------------------------------------------------------- the benchmark
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs per tool (default 9)")
    parser.add_argument(
        "--slow-runs", type=int, default=3, help="timed runs of flake8 and Fixit (default 3)"
    )
    parser.add_argument("--fixit", help="a fixit executable (default: bench/.fixit-venv)")
    parser.add_argument("--skip-fixit", action="store_true")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument(
        "--startup-only", action="store_true", help="only the start-up table (needs only ruff)"
    )
    parser.add_argument(
        "--dense-mirror",
        type=Path,
        help="a directory of git mirrors (MIRROR/owner+name[/repo]) holding bench/dense.toml's "
        "commits: adds the dense corpus and the notebook-versus-script pair",
    )
    parser.add_argument(
        "--dense-cache",
        type=Path,
        default=Path(os.environ.get("TAPELINT_EVAL_CACHE") or "~/.cache/tapelint-eval"),
        help="where the dense corpus's trees are materialised (default: the evaluation's "
        "cache, ~/.cache/tapelint-eval or TAPELINT_EVAL_CACHE)",
    )
    parser.add_argument(
        "--skip-library",
        action="store_true",
        help="leave out the TensorFlow + Keras corpus (with --dense-mirror: the dense tables only)",
    )
    parser.add_argument(
        "--training-repo",
        type=Path,
        help="a checkout of a repository of training code for a second table "
        "(e.g. google/uncertainty-baselines)",
    )
    args = parser.parse_args(argv)
    try:
        return _bench(args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _bench(args: argparse.Namespace) -> int:
    if args.skip_library and args.dense_mirror is None:
        raise BenchError("--skip-library leaves nothing to time without --dense-mirror")
    tools = find_tools(args.fixit, args.skip_fixit or args.skip_library or args.startup_only)
    compile_tapelint()
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="tapelint-bench-") as scratch:
        work = Path(scratch)
        print(_machine(cores, tools), flush=True)
        _bench_startup(work, tools, args)
        if args.startup_only:
            return 0
        if not args.skip_library:
            _bench_in(work, locate_corpus(), tools, cores, args)
        if args.dense_mirror is not None:
            _bench_dense(work, tools, args)
    return 0


def _bench_startup(work: Path, tools: Tools, args: argparse.Namespace) -> None:
    """tapelint against ruff before any work: `--version`, `--help`, one small file."""
    small = work / "startup" / "train.py"
    small.parent.mkdir()
    small.write_text(training_file(20))
    file = measure_corpus([small])
    rows = []
    for label, tapelint, ruff, corpus in (
        ("--version", ("--version",), ("--version",), Corpus((), 0, 0)),
        ("--help", ("--help",), ("--help",), Corpus((), 0, 0)),
        (
            "check, one small file",
            ("check", "-q", "--no-cache"),
            ("check", "-q", "--no-cache"),
            file,
        ),
    ):
        target = (str(small),) if corpus.files else ()
        rows += [
            Command(f"tapelint {label}", (tools.tapelint, *tapelint, *target), corpus),
            Command(f"ruff {label}", (tools.ruff, *ruff, *target), corpus),
        ]
    results, _ = _timed_rounds(rows, work, args)
    print("\nStart-up, against ruff doing the same:\n")
    print(_against_ruff(rows, results))


def _bench_dense(work: Path, tools: Tools, args: argparse.Namespace) -> None:
    """The dense corpus, with and without notebooks, and the notebook-versus-script pair."""
    try:
        corpus = dense.build(args.dense_mirror.resolve(), args.dense_cache.expanduser(), work)
    except RuntimeError as error:
        raise BenchError(f"the dense corpus: {error}") from error
    root = corpus.root
    scripts = measure_corpus([root / path for path in corpus.scripts])
    both = measure_corpus([root / path for path in (*corpus.scripts, *corpus.notebooks)])
    tapelint = (tools.tapelint, "check", "-q")
    ruff = (tools.ruff, "check", "--no-cache", "-q")
    empty = root / "pair" / "empty.py"
    empty.write_text("")
    dense_rows = [
        Command(
            "tapelint cold (dense)", (*tapelint, *corpus.scripts), scripts, "fresh-cache", cwd=root
        ),
        Command(
            "tapelint warm (dense)", (*tapelint, *corpus.scripts), scripts, "warm-cache", cwd=root
        ),
        Command("ruff check --no-cache (dense)", (*ruff, *corpus.scripts), scripts, cwd=root),
        Command(
            "tapelint cold (dense + notebooks)",
            (*tapelint, *corpus.scripts, *corpus.notebooks),
            both,
            "fresh-cache",
            cwd=root,
        ),
        Command(
            "ruff check --no-cache (dense + notebooks)",
            (*ruff, *corpus.scripts, *corpus.notebooks),
            both,
            cwd=root,
        ),
    ]
    pair_rows = [
        Command(
            "tapelint cold (book notebook)",
            (*tapelint, corpus.notebook),
            measure_corpus([root / corpus.notebook]),
            "fresh-cache",
            cwd=root,
        ),
        Command(
            "tapelint cold (its code as one .py)",
            (*tapelint, corpus.script),
            measure_corpus([root / corpus.script]),
            "fresh-cache",
            cwd=root,
        ),
        Command(
            "tapelint cold (one empty file: start-up)",
            (*tapelint, str(empty.relative_to(root))),
            measure_corpus([empty]),
            "fresh-cache",
            cwd=root,
        ),
    ]
    results, outputs = _timed_rounds([*dense_rows, *pair_rows], work, args)
    print(
        f"\nDense corpus: {len(corpus.scripts)} files with a tape, "
        f"{len(corpus.notebooks)} notebooks (bench/dense.toml), from {root}\n"
    )
    print(_against_ruff(dense_rows, results))
    warm_same = outputs[dense_rows[1].label] == outputs[dense_rows[0].label]
    print(f"\nwarm output identical to cold: {'yes' if warm_same else 'NO'}")
    print(_pair_table(pair_rows, results))
    print(_index_costs([(dense_rows[0], root), (dense_rows[3], root)]))


def _bench_in(
    work: Path, corpus: Corpus, tools: Tools, cores: int, args: argparse.Namespace
) -> None:
    eager = next(p for p in corpus.paths if p.name == "tensorflow") / "python" / "eager"
    subset = _copied(sorted(eager.glob("*.py")), work / "fixit-subset")
    paths = tuple(map(str, corpus.paths))
    tapelint = (tools.tapelint, "check", "-q")
    commands = [
        Command("tapelint cold", (*tapelint, *paths), corpus, prepare="fresh-cache"),
        Command("tapelint cold, --jobs 1", (*tapelint, "-j1", *paths), corpus, "fresh-cache"),
        Command("tapelint warm", (*tapelint, *paths), corpus, prepare="warm-cache"),
        Command("ruff check --no-cache", (tools.ruff, "check", "--no-cache", "-q", *paths), corpus),
        Command(
            f"flake8 --select F -j {cores}",
            (tools.flake8, "--select", "F", "-j", str(cores), *paths),
            corpus,
            slow=True,
        ),
    ]
    if tools.fixit is not None:
        subset_paths = tuple(map(str, subset.paths))
        commands += [
            Command(
                "tapelint cold (Fixit's subset)", (*tapelint, *subset_paths), subset, "fresh-cache"
            ),
            Command("fixit lint (subset)", (tools.fixit, "lint", *subset_paths), subset, slow=True),
        ]
    training = _training_commands(args.training_repo, tools) if args.training_repo else []
    results, outputs = _timed_rounds([*commands, *training], work, args)
    print(_main_table(commands, results))
    cold, serial, warm = (outputs[command.label] for command in commands[:3])
    print(f"\nwarm output identical to cold: {'yes' if warm == cold else 'NO'}")
    print(f"--jobs 1 output identical to the parallel run: {'yes' if serial == cold else 'NO'}")
    if training:
        print(f"\nTraining repository: {args.training_repo.resolve()}\n")
        print(_main_table(training, results))
        cold, warm = outputs[training[0].label], outputs[training[1].label]
        print(f"\nwarm output identical to cold: {'yes' if warm == cold else 'NO'}")
    index_runs = [(commands[0], work)]
    if training:
        index_runs.append((training[0], args.training_repo.resolve()))
    print(_index_costs(index_runs))
    if not args.skip_scaling:
        print(_scaling(work, tools, args.runs))


def _copied(files: Sequence[Path], destination: Path) -> Corpus:
    """The files copied into `destination`: Fixit skips files that a `.gitignore` above
    them ignores, and an interpreter installed by pyenv sits under one that ignores
    `/versions` (Fixit then checked no file, in 0.3 s, and said so only in its summary)."""
    destination.mkdir()
    for file in files:
        shutil.copy2(file, destination / file.name)
    return measure_corpus(sorted(destination.iterdir()))


def _training_commands(repo: Path, tools: Tools) -> list[Command]:
    """tapelint cold and warm, ruff, and a pre-commit-sized run, from the repository's root."""
    repo = repo.resolve()
    if not repo.is_dir():
        raise BenchError(f"{repo}: not a directory")
    corpus = measure_corpus([repo])
    with_tapes = sorted(
        path
        for path in repo.rglob("*.py")
        if b"GradientTape" in path.read_bytes() and ".tapelint_cache" not in path.parts
    )
    if len(with_tapes) < 3:
        raise BenchError(f"{repo}: fewer than three files with a GradientTape")
    # Three files spread over the sorted list: a hook's batch of staged files.
    few = [with_tapes[len(with_tapes) * k // 4] for k in (1, 2, 3)]
    few_corpus = measure_corpus(few)
    tapelint = (tools.tapelint, "check", "-q")
    relative = tuple(str(path.relative_to(repo)) for path in few)
    return [
        Command("tapelint cold (training repo)", (*tapelint, "."), corpus, "fresh-cache", cwd=repo),
        Command("tapelint warm (training repo)", (*tapelint, "."), corpus, "warm-cache", cwd=repo),
        Command(
            "ruff check --no-cache (training repo)",
            (tools.ruff, "check", "--no-cache", "-q", "."),
            corpus,
            cwd=repo,
        ),
        Command(
            "tapelint cold, 3 files (training repo, a pre-commit run)",
            (*tapelint, *relative),
            few_corpus,
            "fresh-cache",
            cwd=repo,
        ),
    ]


# Runs in a fresh interpreter: one cold run with `RunStats`, printed as JSON.
_STATS_SCRIPT = """
import dataclasses, json, sys
from tapelint.settings.config import load_settings
from tapelint.run.runner import Options, RunStats, run
stats = RunStats()
run(sys.argv[1:], load_settings(), Options(), stats=stats)
print(json.dumps(dataclasses.asdict(stats)))
"""


def _index_costs(runs: Sequence[tuple[Command, Path]]) -> str:
    """What each pass of one cold run does, on each corpus."""
    rows = [
        "\nWhat the index costs (one cold run without a cache, `RunStats`):\n",
        "| corpus | files | parsed, first pass | checked again | modules analysed / imports "
        "read outside the run | first pass s | index s | second pass s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for command, cwd in runs:
        process = subprocess.run(
            [sys.executable, "-c", _STATS_SCRIPT, *command.argv[3:]],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        if process.returncode != 0:
            raise BenchError(f"the stats run failed: {process.stderr.strip()[-300:]}")
        stats = json.loads(process.stdout.splitlines()[-1])
        rows.append(
            f"| {command.label.replace('tapelint cold', '').strip(' ()') or 'TensorFlow + Keras'} "
            f"| {stats['files']:,} | {stats['first_parsed']:,} | {stats['rechecked']:,} "
            f"| {stats['modules_analysed']} / {stats['imports_read']} "
            f"| {stats['first_seconds']:.2f} | {stats['index_seconds']:.2f} "
            f"| {stats['second_seconds']:.2f} |"
        )
    return "\n".join(rows)


def _argv(command: Command, work: Path, run: str) -> list[str]:
    """The command line for one run; tapelint gets its cache directory here."""
    argv = list(command.argv)
    if command.prepare == "fresh-cache":
        argv[2:2] = ["--cache-dir", str(work / f"cache-{command.label}-{run}".replace(" ", "_"))]
    elif command.prepare == "warm-cache":
        argv[2:2] = ["--cache-dir", str(work / f"cache-warm-{command.corpus.files}")]
    return argv


def _timed_rounds(
    commands: Sequence[Command], work: Path, args: argparse.Namespace
) -> tuple[dict[str, Result], dict[str, str]]:
    """Timed rounds, the order rotated each round. Fast tools get an untimed first run (it
    fills the warm cache and the OS file cache) and a separate untimed run for memory; the
    slow ones are too slow for that: their memory is sampled during their first timed run
    (sampling costs them a few percent)."""
    results = {c.label: Result() for c in commands}
    outputs: dict[str, str] = {}
    for command in commands:
        if not command.slow:
            warmup = run_once(_argv(command, work, "warmup"), command.cwd or work)
            outputs[command.label] = warmup.stdout
    for round_ in range(args.runs):
        shift = round_ % len(commands)
        for command in [*commands[shift:], *commands[:shift]]:
            if command.slow and round_ >= args.slow_runs:
                continue
            first_slow = command.slow and round_ == 0
            sample = run_once(
                _argv(command, work, str(round_)), command.cwd or work, sample_memory=first_slow
            )
            result = results[command.label]
            result.times.append(sample.seconds)
            result.cpu_times.append(sample.cpu_seconds)
            if first_slow:
                result.tree_pss_kb, result.largest_rss_kb = (
                    sample.tree_pss_kb,
                    sample.largest_rss_kb,
                )
            if outputs.setdefault(command.label, sample.stdout) != sample.stdout:
                raise BenchError(f"{command.label}: output changed between runs")
        print(f"round {round_ + 1}/{args.runs} done", file=sys.stderr, flush=True)
    for command in commands:
        if not command.slow:
            sample = run_once(
                _argv(command, work, "memory"), command.cwd or work, sample_memory=True
            )
            result = results[command.label]
            result.tree_pss_kb, result.largest_rss_kb = sample.tree_pss_kb, sample.largest_rss_kb
    return results, outputs


def _main_table(commands: Sequence[Command], results: dict[str, Result]) -> str:
    """Each command against the first (tapelint cold on the same corpus)."""
    cold = results[commands[0].label]
    cold_per_line = cold.median / commands[0].corpus.lines
    rows = [
        "| command | files | lines | wall s (median) | files/s | lines/s | CPU s (median) "
        "| peak memory MB (tree PSS) | largest process RSS MB | time / tapelint cold "
        "| CPU / tapelint cold |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for command in commands:
        result = results[command.label]
        corpus = command.corpus
        if corpus is commands[0].corpus:
            ratio = f"{result.median / cold.median:.2f}"
            cpu_ratio = f"{result.cpu_median / cold.cpu_median:.2f}"
        else:  # a subset: compare time per line
            per_line = result.median / corpus.lines
            ratio = f"{per_line / cold_per_line:.1f} per line"
            cpu_per_line = result.cpu_median / corpus.lines
            cpu_ratio = (
                f"{cpu_per_line / (cold.cpu_median / commands[0].corpus.lines):.1f} per line"
            )
            notes.append((command.label, per_line))
        rows.append(
            f"| `{command.label}` | {corpus.files:,} | {corpus.lines:,} "
            f"| {result.median:.2f} | {corpus.files / result.median:,.0f} "
            f"| {corpus.lines / result.median:,.0f} | {result.cpu_median:.2f} "
            f"| {(result.tree_pss_kb or 0) / 1024:.0f} "
            f"| {(result.largest_rss_kb or 0) / 1024:.0f} | {ratio} | {cpu_ratio} |"
        )
    text = "\n".join(rows)
    if len(notes) == 2:
        (_, tapelint_subset), (_, fixit) = notes
        text += (
            f"\n\nFixit per line: {fixit / cold_per_line:.0f}x tapelint cold's time per line on "
            f"the whole corpus, {fixit / tapelint_subset:.0f}x on the same subset."
        )
    return text


def _against_ruff(commands: Sequence[Command], results: dict[str, Result]) -> str:
    """Each command against ruff on the same files (the next ruff row after it)."""
    rows = [
        "| command | files | lines | wall s (median) | CPU s (median) | peak memory MB (tree PSS) "
        "| wall / ruff | CPU / ruff |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for command in commands:
        ruff = next(
            c for c in commands if c.label.startswith("ruff") and c.corpus is command.corpus
        )
        result, against = results[command.label], results[ruff.label]
        rows.append(
            f"| `{command.label}` | {command.corpus.files:,} | {command.corpus.lines:,} "
            f"| {result.median:.2f} | {result.cpu_median:.2f} "
            f"| {(result.tree_pss_kb or 0) / 1024:.0f} "
            f"| {result.median / against.median:.1f} "
            f"| {result.cpu_median / against.cpu_median:.1f} |"
        )
    return "\n".join(rows)


def _pair_table(commands: Sequence[Command], results: dict[str, Result]) -> str:
    """The notebook against the same code as a script, with and without start-up."""
    notebook, script, empty = (results[c.label] for c in commands)
    rows = [
        "\nThe notebook against the same code as one `.py` file:\n",
        "| command | lines | wall s (median) | CPU s (median) |",
        "|---|---:|---:|---:|",
    ]
    for command in commands:
        result = results[command.label]
        rows.append(
            f"| `{command.label}` | {command.corpus.lines:,} | {result.median:.2f} "
            f"| {result.cpu_median:.2f} |"
        )

    def ratio(a: float, b: float, start: float) -> str:
        net = (a - start) / (b - start) if b > start else float("nan")
        return f"{a / b:.2f} ({net:.2f} without start-up)"

    rows.append(
        f"\nnotebook / script: wall {ratio(notebook.median, script.median, empty.median)}, "
        f"CPU {ratio(notebook.cpu_median, script.cpu_median, empty.cpu_median)}"
    )
    return "\n".join(rows)


def _scaling(work: Path, tools: Tools, runs: int) -> str:
    base = work / "scaling"
    base.mkdir()
    corpora = write_scaling_corpus(base)
    samples: dict[str, list[float]] = {label: [] for label in corpora}
    for _ in range(max(3, runs // 2)):
        for label, corpus in corpora.items():
            argv = [tools.tapelint, "check", "-q", "--no-cache", *map(str, corpus.paths)]
            samples[label].append(run_once(argv, base).seconds)
    times = {label: statistics.median(values) for label, values in samples.items()}
    startup = times.pop("startup")
    rows = [
        f"\nScaling (tapelint cold, `--no-cache`; one tiny file takes {startup:.2f} s):\n",
        "| corpus | files | lines | wall s (median) | ms per 1k lines | net ms per 1k lines |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, seconds in times.items():
        corpus = corpora[label]
        per_1k = 1000 * seconds / (corpus.lines / 1000)
        net = 1000 * (seconds - startup) / (corpus.lines / 1000)
        rows.append(
            f"| {label} | {corpus.files:,} | {corpus.lines:,} | {seconds:.2f} "
            f"| {per_1k:.1f} | {net:.1f} |"
        )
    return "\n".join(rows)


def _machine(cores: int, tools: Tools) -> str:
    versions = [
        tool_version([tools.tapelint]),
        tool_version([tools.ruff]),
        "flake8 " + tool_version([tools.flake8]).split()[0],
    ]
    if tools.fixit:
        versions.append(tool_version([tools.fixit]))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"machine: {cores} cores ({platform.machine()}, {platform.system()}), "
        f"Python {platform.python_version()}, load average at start {load}\n"
        f"tools: {'; '.join(versions)}\n"
    )


if __name__ == "__main__":
    sys.exit(main())
