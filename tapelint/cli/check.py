"""One `tapelint check`: run it, print what it found, and say how it ends (the exit status).

The command line is parsed in `tapelint.cli`; `--watch` (`tapelint.cli.watch`) runs this again
after each change. Where the output goes:

- stdout (or `--output-file`): the findings in the chosen format, or the diff with `--diff`,
  or, when fixing standard input, the fixed source (the findings then go to the output file
  if one is given, else to stderr);
- stderr: warnings, `error:` lines, and the summary line after a format for people
  (`tapelint.output.summary`).

`--fix-only` applies the fixes and reports only what it fixed: the remaining findings are
neither printed nor counted in the exit status (ruff's meaning). `--exit-non-zero-on-fix`
makes a run that fixed something exit 1 even when nothing remains.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import click

from tapelint.cli.main import EXIT_CLEAN, EXIT_ERROR, print_error
from tapelint.cli.progress import ProgressDisplay
from tapelint.output import FORMATS, HUMAN, Rendering
from tapelint.output.fixes import render_fixable, render_fixed
from tapelint.output.statistics import count_by_code, render_json, render_text
from tapelint.output.style import Style, wants_color
from tapelint.output.summary import PASSED, count, summary
from tapelint.output.text import render_marking_fixable
from tapelint.run.runner import Options, Report, RunStats, run, run_stdin
from tapelint.settings.config import ConfigError, Settings
from tapelint.settings.resolution import SettingsResolver

EXIT_FOUND = 1


@dataclass(frozen=True)
class CheckRequest:
    """What the command line asked for. `settings` gives the resolution of each file's
    configuration, once a run (a watched run sees an edited pyproject.toml); it raises
    click.ClickException."""

    paths: tuple[str, ...]
    settings: Callable[[], SettingsResolver]
    reading_stdin: bool = False
    stdin_filename: str | None = None
    output_format: str = "text"
    output_file: Path | None = None
    color: str = "auto"  # `--color`: auto, always or never (`tapelint.output.style`)
    exit_zero: bool = False
    exit_non_zero_on_fix: bool = False
    force_exclude: bool = False
    fix: bool = False
    fix_only: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    show_fixes: bool = False
    add_noqa: bool = False
    statistics: bool = False
    quiet: bool = False
    jobs: int = 0
    no_cache: bool = False
    cache_dir: Path | None = None

    def options(self, settings: Settings) -> Options:
        return Options(
            self.force_exclude,
            fix=self.fix or self.fix_only,
            diff=self.diff,
            unsafe_fixes=self.unsafe_fixes,
            jobs=self.jobs,
            cache_dir=None if self.no_cache else (self.cache_dir or settings.cache_path).absolute(),
            add_noqa=self.add_noqa,
        )


def default_format() -> str:
    """`concise` for a person at a terminal; `text`, every word of each message on its line,
    for a pipe, a file or a CI log (and byte for byte what earlier versions printed)."""
    return "concise" if sys.stdout.isatty() else "text"


def run_check(request: CheckRequest) -> int:
    """Run the check, print its results, and return the exit status."""
    resolver = request.settings()
    try:
        return _run_check(request, resolver)
    except ConfigError as error:  # the config of a file met on the way
        raise click.ClickException(str(error)) from None


def _run_check(request: CheckRequest, resolver: SettingsResolver) -> int:
    settings = resolver.for_run()
    options = request.options(settings)
    fixed_source = None
    rendering = Rendering(unsafe=request.unsafe_fixes)
    if request.reading_stdin:
        data = sys.stdin.buffer.read()
        if request.stdin_filename is not None:
            settings = resolver.for_file(Path(request.stdin_filename))
        result = run_stdin(data, request.stdin_filename, settings, options)
        report, fixed_source = result.report, result.fixed_source
        # Every diagnostic is on the source read (as fixed, when fixed), not on the file.
        source = {d.path: fixed_source or data for d in report.diagnostics}
        rendering = Rendering(unsafe=request.unsafe_fixes, sources=source)
    else:
        stats = RunStats()
        with ProgressDisplay(enabled=not request.quiet) as progress:
            report = run(
                request.paths or (".",),
                settings,
                options,
                progress,
                stats,
                settings_for=resolver.for_file,
            )
        if not stats.files and not report.errors:
            # As ruff warns: "All checks passed!" alone would hide a wrong path.
            report.warnings.append("no Python files or notebooks found under the given paths")
    if request.add_noqa:
        return _noqa_outcome(report, request.quiet)
    with _output(request.output_file) as out:
        _print_results(request, report, options, rendering, fixed_source, out)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    for error in report.errors:
        print_error(error)
    if request.output_format in HUMAN and not request.quiet:
        line = summary(report, options, fix_only=request.fix_only)
        if line:
            painted = wants_color(request.color, sys.stderr)
            style = Style(painted)
            line = style.passed(line) if line == PASSED else style.found(line)
            if report.skipped:  # skips by policy are never silent (`tapelint.sources.discovery`)
                line += f" {report.skipped} skipped by policy (--show-files says why)."
            click.echo(line, err=True, color=painted)
    return _exit_status(request, report)


def _print_results(
    request: CheckRequest,
    report: Report,
    options: Options,
    rendering: Rendering,
    fixed_source: bytes | None,
    out: TextIO | None,
) -> None:
    fixing = request.fix or request.fix_only
    if fixed_source is not None:
        # Fixing standard input: the fixed source is stdout's; the findings go elsewhere.
        sys.stdout.buffer.write(fixed_source)
        sys.stdout.buffer.flush()
        findings_out = out if request.output_file is not None else sys.stderr
        if not request.fix_only:
            rendering = _colored(rendering, request, findings_out)
            text = _render(report, request.output_format, request.statistics, rendering)
            click.echo(text, nl=False, file=findings_out, color=rendering.color)
    elif request.diff:
        click.echo("".join(report.diffs), nl=False, file=out)
    elif not request.fix_only:
        marks = request.show_fixes and not fixing and request.output_format == "text"
        rendering = _colored(rendering, request, out or sys.stdout)
        text = _render(report, request.output_format, request.statistics, rendering, marks)
        click.echo(text, nl=False, file=out, color=rendering.color)
    if request.show_fixes:
        # After the findings of a format for people; on stderr when stdout has other things.
        elsewhere = request.output_format not in HUMAN or request.diff or fixed_source is not None
        shown = _fixes_shown(report, options)
        click.echo(shown, nl=False, file=sys.stderr if elsewhere else out)


def _colored(rendering: Rendering, request: CheckRequest, stream: TextIO | None) -> Rendering:
    """`rendering`, coloured when the format is one for people and `--color` says so for
    `stream`; the formats for programs are never coloured."""
    if request.output_format not in HUMAN or request.statistics:
        return rendering
    return dataclasses.replace(rendering, color=wants_color(request.color, stream))


def _exit_status(request: CheckRequest, report: Report) -> int:
    if report.errors:
        return EXIT_ERROR
    if request.exit_zero:
        return EXIT_CLEAN
    if request.diff:
        return EXIT_FOUND if report.diffs else EXIT_CLEAN
    fixed = request.exit_non_zero_on_fix and report.fixed > 0
    remaining = bool(report.diagnostics) and not request.fix_only
    return EXIT_FOUND if fixed or remaining else EXIT_CLEAN


@contextlib.contextmanager
def _output(path: Path | None) -> Iterator[TextIO | None]:
    """The `--output-file` (its directories created, as ruff does), or None: stdout."""
    if path is None:
        yield None
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        file = path.open("w", encoding="utf-8")
    except OSError as error:
        raise click.ClickException(
            f"{path}: cannot write the output file: {error.strerror or error}"
        ) from None
    with file:
        yield file


def _noqa_outcome(report: Report, quiet: bool) -> int:
    """What --add-noqa prints (ruff's words, and how many files): warnings, errors and a count."""
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    for error in report.errors:
        print_error(error)
    if report.noqa_added and not quiet:
        added = count(report.noqa_added, "noqa directive")
        click.echo(f"Added {added} to {count(len(report.noqa_paths), 'file')}.", err=True)
    return EXIT_ERROR if report.errors else EXIT_CLEAN


def _fixes_shown(report: Report, options: Options) -> str:
    if options.fix or options.diff:
        table = render_fixed(report.fixed_codes, applied=not options.diff)
        return f"\n{table}" if table else ""
    return render_fixable(report.diagnostics, unsafe=options.unsafe_fixes)


def _render(
    report: Report,
    output_format: str,
    statistics: bool,
    rendering: Rendering,
    marks: bool = False,
) -> str:
    if not statistics:
        if marks:
            return render_marking_fixable(
                report.diagnostics, unsafe=rendering.unsafe, style=rendering.style
            )
        return FORMATS[output_format](report.diagnostics, rendering)
    rows = count_by_code(report.diagnostics, unsafe=rendering.unsafe)
    return render_json(rows) if output_format == "json" else render_text(rows)
