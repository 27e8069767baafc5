"""`tapelint validate`: run the user's program under the probe and give every static
diagnostic a verdict.

Exit status: 1 when a diagnostic is confirmed or a problem was found at runtime; else 3 when
the program failed (an error, a non-zero exit, a signal, or the time limit) before its first
optimizer step; else 0. 2 is tapelint's own trouble: bad usage, TensorFlow not importable,
a program that could not be started or started no instrumented Python. 128 + N: interrupted
by signal N (Ctrl-C, SIGTERM, SIGHUP), after the program's processes were ended.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import click

from tapelint.config import Settings
from tapelint.interrupts import Interrupted
from tapelint.runner import Options, Report, display_path, run
from tapelint.validate import report, tflog
from tapelint.validate.join import Validated, judge, runtime_findings
from tapelint.validate.launch import Outcome, probe_environment, run_program
from tapelint.validate.observations import Observations, read_events
from tapelint.validate.probe import schema
from tapelint.validate.verdict import Status
from tapelint.validate.wanted import RuntimeFindingFilter
from tapelint.validate.watched import local_modules, write_sites

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR, EXIT_PROGRAM_FAILED, EXIT_STOPPED = 0, 1, 2, 3, 4
# A script is a training run: a few steps show what it does. A command after `--` is most
# often a test suite, which must run to its end (the timeout still holds).
SCRIPT_MAX_STEPS = 3

INSTALL_HINT = (
    "TensorFlow is not importable by {python}; `tapelint validate` runs your program on it. "
    "Install it into that environment: `pip install 'tapelint[validate]'` (which installs "
    "`tensorflow`), or the TensorFlow build you use, such as `tensorflow-cpu`"
)


class ValidateError(Exception):
    """Something tapelint cannot do; printed as one `error:` line, exit 2."""


@dataclass(frozen=True)
class Request:
    program: tuple[str, ...]
    is_command: bool  # given after `--`: run as is; otherwise a script for this interpreter
    paths: tuple[str, ...]
    max_steps: int | None  # None: SCRIPT_MAX_STEPS for a script, no limit for a command
    timeout: float
    quiet: bool
    output_format: str
    settings: Settings


def validate(request: Request) -> int:
    """SIGINT, SIGTERM and SIGHUP end the run, and every process of the program, with exit
    status 128 + the signal's number: the entry point's handlers (`tapelint.interrupts`)
    raise `Interrupted`, and the program's processes end on its way out (`launch`)."""
    try:
        return _validate(request)
    except Interrupted as stop:
        click.echo(f"error: interrupted ({signal.Signals(stop.signum).name})", err=True)
        return 128 + stop.signum


def _validate(request: Request) -> int:
    command, static_paths = _command(request)
    cwd = Path.cwd()
    # Checked before the run, so that the probe can watch their lines for exceptions.
    before = [*static_paths, *local_modules(static_paths)]
    check = run(before, request.settings, Options()) if before else Report()
    with tempfile.TemporaryDirectory(prefix="tapelint-validate-") as scratch:
        events = Path(scratch) / "events.jsonl"
        sites = Path(scratch) / "sites.json"
        write_sites(check.diagnostics, cwd, sites)
        codes = frozenset(d.code for d in check.diagnostics)
        env = probe_environment(events, _max_steps(request), sites, codes)
        drop_tf_noise = tflog.quiet_environment(env)
        _say(f"running {shlex.join(command)}" + ("" if request.quiet else "; its output follows"))
        try:
            outcome = run_program(
                command,
                env,
                request.timeout,
                quiet=request.quiet,
                stdout_to_stderr=request.output_format == "json",
                drop_tf_noise=drop_tf_noise,
            )
        except OSError as error:
            raise ValidateError(f"cannot run {command[0]!r}: {error.strerror or error}") from None
        observations = read_events(events, cwd)
    _require_instrumented(observations, command)
    if not request.quiet:
        _say("the program's output ends here")

    checked = {str((cwd / path).resolve()) for path in before}
    after = [p for p in _user_files(observations, cwd) if str((cwd / p).resolve()) not in checked]
    if after:
        check.add(run(after, request.settings, Options()))
    diagnostics = sorted(check.diagnostics, key=lambda d: d.sort_key)
    judged = judge(diagnostics, observations, cwd)
    wanted = RuntimeFindingFilter(request.settings)
    found = runtime_findings(judged, observations, cwd, lambda path: shown_path(path, cwd), wanted)
    items = sorted(
        (_with_shown_paths(item, cwd) for item in [*judged, *found]), key=lambda item: item.sort_key
    )

    click.echo(report.render(items, request.output_format), nl=False)
    if request.output_format == "text":
        click.echo(report.cost_table(items), nl=False)
    for warning in [*check.warnings, *_probe_warnings(observations)]:
        click.echo(f"warning: {warning}", err=True)
    failed = _failed_before_training(outcome, observations, cwd)
    summary = report.summary(items, _how_it_ended(outcome, observations, request))
    click.echo(click.style(summary, bold=True), err=True)
    if failed:
        click.echo(f"error: the program failed before its first training step: {failed}", err=True)
        if request.quiet and outcome.output_tail:
            click.echo(outcome.output_tail, err=True)
    if check.errors:
        for error in check.errors:
            click.echo(f"error: {error}", err=True)
        return EXIT_ERROR
    if request.is_command and observations.stopped:
        click.echo(
            "error: the validator stopped the command at --max-steps "
            f"{request.max_steps}; whatever had not run by then (later tests) did not run",
            err=True,
        )
        return EXIT_STOPPED
    if any(_counts_as_found(item) for item in items):
        return EXIT_FOUND
    return EXIT_PROGRAM_FAILED if failed else EXIT_CLEAN


def _max_steps(request: Request) -> int | None:
    if request.max_steps is not None:
        return request.max_steps
    return None if request.is_command else SCRIPT_MAX_STEPS


def _say(message: str) -> None:
    """One of the validator's own lines, set apart from the program's output (bold on a
    terminal)."""
    click.echo(click.style(f"tapelint validate: {message}", bold=True), err=True)


def shown_path(path: str, cwd: Path) -> str:
    """Relative to the working directory, with `..` for a file outside it (absolute only
    where no relative path exists, another drive): the same in every format, and no local
    machine paths in a report that is copied elsewhere."""
    try:
        return Path(os.path.relpath((cwd / path).resolve(), cwd)).as_posix()
    except ValueError:
        return str(path)


def _with_shown_paths(item: Validated, cwd: Path) -> Validated:
    diagnostic = item.diagnostic
    related = tuple(
        place if place.cell is not None else replace(place, path=shown_path(place.path, cwd))
        for place in diagnostic.related
    )
    shown = replace(diagnostic, path=shown_path(diagnostic.path, cwd), related=related)
    return replace(item, diagnostic=shown)


def _counts_as_found(item: Validated) -> bool:
    return item.origin == "runtime" or item.verdict.status is Status.CONFIRMED


def _command(request: Request) -> tuple[list[str], list[str]]:
    if not request.program:
        raise ValidateError(
            "give a script to run (`tapelint validate train.py`) or a command after `--`"
        )
    paths = list(request.paths)
    if request.is_command:  # the scripts it names are most likely what it runs
        scripts = [a for a in request.program[1:] if a.endswith(".py") and Path(a).is_file()]
        return list(request.program), [*scripts, *paths]
    script, *arguments = request.program
    if script.startswith("-"):
        raise ValidateError(f"no such option: {script} (see `tapelint validate --help`)")
    if not Path(script).is_file():
        # Suggest `--` only for what `--` would run: a program on PATH.
        hint = (
            f"; to run a command, put it after `--` "
            f"(`tapelint validate -- {' '.join(request.program)}`)"
            if shutil.which(script)
            else ""
        )
        raise ValidateError(f"{script}: no such script{hint}")
    if importlib.util.find_spec("tensorflow") is None:
        raise ValidateError(INSTALL_HINT.format(python=sys.executable))
    return [sys.executable, script, *arguments], [script, *paths]


def _require_instrumented(observations: Observations, command: Sequence[str]) -> None:
    started = observations.started
    if not started:
        raise ValidateError(
            f"{command[0]!r} started no Python process tapelint could instrument "
            "(Python started with -S, -I or -E ignores PYTHONPATH and sitecustomize)"
        )
    if not any(event["tensorflow"] for event in started):
        raise ValidateError(INSTALL_HINT.format(python=started[0]["executable"]))


def _user_files(observations: Observations, cwd: Path) -> list[str]:
    """The Python files the run went through: their diagnostics get verdicts too."""
    files = []
    for path in sorted(observations.user_paths()):
        candidate = Path(path)
        if candidate.suffix == ".py" and candidate.is_file():
            files.append(display_path(candidate, cwd))
    return files


def _failed_before_training(outcome: Outcome, observations: Observations, cwd: Path) -> str | None:
    """What went wrong, if the program ended badly without a single optimizer step."""
    if observations.steps or observations.stopped:
        return None
    if outcome.timed_out:
        return "it was still running at the time limit"
    if outcome.returncode == 0:
        return None
    main = observations.started[0].pid if observations.started else None
    exceptions = [e for e in observations.of(schema.EXCEPTION) if e.pid == main]
    if exceptions:
        last = exceptions[-1]
        where = ""
        if last.at:
            where = f" at {shown_path(last.at[0].path, cwd)}:{last.at[0].first}"
        message = (last["message"] or "").strip().splitlines()
        first_line = message[0][:200] if message else ""
        return f"{last['type']}: {first_line}{where}"
    return _status(outcome.returncode)


def _status(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _how_it_ended(outcome: Outcome, observations: Observations, request: Request) -> str:
    steps = observations.steps
    done = f"{steps} optimizer step{'s' if steps != 1 else ''}"
    if observations.stopped:
        return f"Stopped the program after {done} (--max-steps {_max_steps(request)})"
    if outcome.timed_out:
        return f"Stopped the program at the time limit ({request.timeout:g} s) after {done}"
    return f"The program {_status(outcome.returncode)} after {done}"


def _probe_warnings(observations: Observations) -> list[str]:
    messages = sorted({e["message"] for e in observations.of(schema.PROBE_ERROR)})
    return [f"the instrumentation failed ({m}); verdicts may be incomplete" for m in messages]
