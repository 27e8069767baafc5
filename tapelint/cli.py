"""The `tapelint` command: `check`, `rule`, `rules`, `validate` and `--version`.

Exit status: 0 nothing found, 1 diagnostics found (0 with `--exit-zero`; with `--diff`,
1 when there is a diff; with `--add-noqa`, 0 once the comments are written, as ruff), 2 a
usage or config error, a missing path, a failed write, or an internal error.
Every error is one `error: ...` line on stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from tapelint.config import ConfigError, Settings, load_settings
from tapelint.output import FORMATS, HUMAN, Rendering
from tapelint.output.fixes import render_fixable, render_fixed
from tapelint.output.statistics import count_by_code, render_json, render_text
from tapelint.output.summary import count, summary
from tapelint.output.text import render_marking_fixable
from tapelint.progress import ProgressDisplay
from tapelint.registry import all_rules, rule_by_code_or_name
from tapelint.rule import Rule
from tapelint.runner import Options, Report, run, run_stdin
from tapelint.selection import SelectorError, close_matches, validate

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Group(click.Group):
    """Runs click outside its standalone mode so that every failure is one `error:` line
    on stderr with exit status 2, where click would print a usage block or a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> NoReturn:
        kwargs["standalone_mode"] = False
        try:
            status = super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError as error:
            click.echo(error.ctx.get_help() if error.ctx else str(error), err=True)
            status = EXIT_ERROR
        except click.ClickException as error:
            _error(error.format_message())
            status = EXIT_ERROR
        except click.Abort:
            _error("interrupted")
            status = EXIT_INTERRUPTED
        except Exception as error:  # never a traceback
            _error(f"internal error: {type(error).__name__}: {error}")
            status = EXIT_ERROR
        sys.exit(status)


def _error(message: str) -> None:
    click.echo(f"error: {message}", err=True)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tapelint", prog_name="tapelint", message="%(prog)s %(version)s")
def cli() -> None:
    """Find misuse of TensorFlow's tf.GradientTape before it costs a training run."""


def _split(values: Iterable[str]) -> list[str]:
    """Comma-separated values of a repeatable option, as one list."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


_SELECTORS = "Rule codes, code prefixes, rule names or ALL, comma-separated; repeatable."


def _rule_selection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--select`, `--extend-select`, `--ignore`, `--config` and `--preview`, shared by
    `check` and `validate`."""
    options = [
        click.option(
            "--select", multiple=True, metavar="SELECTORS", help=f"Run only these. {_SELECTORS}"
        ),
        click.option(
            "--extend-select",
            multiple=True,
            metavar="SELECTORS",
            help=f"Run these too. {_SELECTORS}",
        ),
        click.option(
            "--ignore", multiple=True, metavar="SELECTORS", help=f"Do not run these. {_SELECTORS}"
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="A pyproject.toml, or a TOML file with the settings at its top level.",
        ),
        click.option("--preview", is_flag=True, help="Enable preview rules."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@cli.command()
# Not `readable`: a file that cannot be read is its own TAP002 finding, not a usage error.
@click.argument("paths", nargs=-1, type=click.Path(readable=False))
@_rule_selection_options
@click.option(
    "--output-format",
    type=click.Choice(list(FORMATS)),
    envvar="TAPELINT_OUTPUT_FORMAT",
    show_envvar=True,
    help="How to print diagnostics. concise: one short line each, the problem without the "
    "advice, [*] on what the fixes can fix (the default when standard output is a terminal); "
    "text: one line each with the whole message, flake8's form (the default otherwise, so "
    "that scripts and CI logs get every word); full: each with the code it points at and "
    "what to do; grouped: concise lines under each file's path; json, sarif, and github "
    "(GitHub Actions annotations).",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when diagnostics are found.")
@click.option(
    "--force-exclude", is_flag=True, help="Apply excludes to paths named on the command line too."
)
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="Include unsafe fixes (with --fix or --diff).")
@click.option("--diff", is_flag=True, help="Print the changes --fix would make; write nothing.")
@click.option(
    "--show-fixes",
    is_flag=True,
    help="After the findings, list the fixes applied per file and code (with --fix or "
    "--diff), or mark the fixable findings with [*] and count them.",
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Write a `# noqa: CODE` comment on the line of every finding (to adopt tapelint on "
    "an existing code base); prints only how many were added.",
)
@click.option(
    "--statistics", is_flag=True, help="Print how many diagnostics of each code, not each one."
)
@click.option(
    "--stdin-filename",
    metavar="PATH",
    help="Read the source from standard input (`-`) and check it as the file PATH.",
)
@click.option("-q", "--quiet", is_flag=True, help="No summary line and no progress display.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Worker processes for the files that need parsing (default: one per core).",
)
@click.option(
    "--no-cache",
    is_flag=True,
    envvar="TAPELINT_NO_CACHE",
    show_envvar=True,
    help="Neither read nor write the result cache.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="TAPELINT_CACHE_DIR",
    show_envvar=True,
    help="Where to keep the result cache (default: `cache-dir` in the config, "
    "else .tapelint_cache in the project root).",
)
def check(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_file: Path | None,
    preview: bool,
    output_format: str | None,
    exit_zero: bool,
    force_exclude: bool,
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    show_fixes: bool,
    add_noqa: bool,
    statistics: bool,
    stdin_filename: str | None,
    quiet: bool,
    jobs: int | None,
    no_cache: bool,
    cache_dir: Path | None,
) -> int:
    """Check PATHS (files or directories; default: the current directory).

    `-` reads the source from standard input; `--stdin-filename PATH` says which file it is.
    """
    reading_stdin = _reads_stdin(paths, stdin_filename)
    output_format = output_format or default_format()
    if add_noqa:
        _check_add_noqa_alone(
            fix=fix,
            diff=diff,
            unsafe_fixes=unsafe_fixes,
            statistics=statistics,
            show_fixes=show_fixes,
            reading_stdin=reading_stdin,
        )
    settings = _settings(config_file, select, extend_select, ignore, preview)
    options = Options(
        force_exclude,
        fix=fix,
        diff=diff,
        unsafe_fixes=unsafe_fixes,
        jobs=jobs or 0,
        cache_dir=None if no_cache else (cache_dir or settings.cache_path).absolute(),
        add_noqa=add_noqa,
    )
    fixed_source = None
    rendering = Rendering(unsafe=unsafe_fixes)
    if reading_stdin:
        data = sys.stdin.buffer.read()
        result = run_stdin(data, stdin_filename, settings, options)
        report, fixed_source = result.report, result.fixed_source
        # Every diagnostic is on the source read (as fixed, when fixed), not on the file.
        source = {d.path: fixed_source or data for d in report.diagnostics}
        rendering = Rendering(unsafe=unsafe_fixes, sources=source)
    else:
        with ProgressDisplay(enabled=not quiet) as progress:
            report = run(paths or (".",), settings, options, on_progress=progress)
    if add_noqa:
        return _noqa_outcome(report, quiet)
    marks = show_fixes and not fix and output_format == "text"
    if fixed_source is not None:
        # Fixing standard input: the fixed source is the output; what remains goes to stderr.
        sys.stdout.buffer.write(fixed_source)
        sys.stdout.buffer.flush()
        click.echo(_render(report, output_format, statistics, rendering), nl=False, err=True)
    elif diff:
        click.echo("".join(report.diffs), nl=False)
    else:
        click.echo(_render(report, output_format, statistics, rendering, marks), nl=False)
    if show_fixes:
        # After the findings in the text format; on stderr when stdout carries something else.
        to_stderr = output_format not in HUMAN or diff or fixed_source is not None
        click.echo(_fixes_shown(report, options), nl=False, err=to_stderr)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    for error in report.errors:
        _error(error)
    if output_format in HUMAN and not quiet:
        line = summary(report, options)
        if line:
            click.echo(line, err=True)
    if report.errors:
        return EXIT_ERROR
    found = report.diffs if diff else report.diagnostics
    return EXIT_FOUND if found and not exit_zero else EXIT_CLEAN


def _reads_stdin(paths: tuple[str, ...], stdin_filename: str | None) -> bool:
    if "-" in paths and len(paths) > 1:
        raise click.UsageError("`-` (standard input) cannot be combined with other paths")
    if stdin_filename is not None and paths not in ((), ("-",)):
        raise click.UsageError("--stdin-filename checks standard input: give `-` or no path")
    return stdin_filename is not None or paths == ("-",)


def _check_add_noqa_alone(**given: bool) -> None:
    """--add-noqa writes comments and prints nothing else: options about fixing or printing
    findings, and standard input (nothing to write to), contradict it."""
    names = {"reading_stdin": "standard input"}
    clashes = [names.get(name, f"--{name.replace('_', '-')}") for name, on in given.items() if on]
    if clashes:
        raise click.UsageError(f"--add-noqa cannot be combined with {', '.join(clashes)}")


def _noqa_outcome(report: Report, quiet: bool) -> int:
    """What --add-noqa prints (ruff's words, and how many files): warnings, errors and a count."""
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    for error in report.errors:
        _error(error)
    if report.noqa_added and not quiet:
        added = count(report.noqa_added, "noqa directive")
        click.echo(f"Added {added} to {count(len(report.noqa_paths), 'file')}.", err=True)
    return EXIT_ERROR if report.errors else EXIT_CLEAN


def _fixes_shown(report: Report, options: Options) -> str:
    if options.fix or options.diff:
        table = render_fixed(report.fixed_codes, applied=not options.diff)
        return f"\n{table}" if table else ""
    return render_fixable(report.diagnostics, unsafe=options.unsafe_fixes)


def default_format() -> str:
    """`concise` for a person at a terminal; `text`, every word of each message on its line,
    for a pipe, a file or a CI log (and byte for byte what earlier versions printed)."""
    return "concise" if sys.stdout.isatty() else "text"


def _render(
    report: Report,
    output_format: str,
    statistics: bool,
    rendering: Rendering,
    marks: bool = False,
) -> str:
    if not statistics:
        if marks:
            return render_marking_fixable(report.diagnostics, unsafe=rendering.unsafe)
        return FORMATS[output_format](report.diagnostics, rendering)
    rows = count_by_code(report.diagnostics, unsafe=rendering.unsafe)
    return render_json(rows) if output_format == "json" else render_text(rows)


def _settings(
    config_file: Path | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    preview: bool,
) -> Settings:
    try:
        settings = load_settings(config_file)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    given = {
        "--select": _split(select),
        "--extend-select": _split(extend_select),
        "--ignore": _split(ignore),
    }
    for option, selectors in given.items():
        try:
            validate(selectors)
        except SelectorError as error:
            raise click.ClickException(f"{option}: {error}") from None
    return settings.override(
        select=given["--select"] if select else None,
        extend_select=given["--extend-select"],
        ignore=given["--ignore"],
        preview=preview,
    )


@cli.command("rule")
@click.argument("code_or_name")
def rule_command(code_or_name: str) -> int:
    """Print the documentation of one rule (by code or name)."""
    rule = rule_by_code_or_name(code_or_name)
    if rule is None:
        close = close_matches(code_or_name)
        hint = f"did you mean {', '.join(close)}?" if close else "see `tapelint rules`"
        raise click.ClickException(f"unknown rule {code_or_name!r}; {hint}")
    click.echo(f"{rule.code} {rule.name} ({rule.severity.value}, {_default(rule)})")
    click.echo()
    click.echo(rule.documentation())
    return EXIT_CLEAN


@cli.command("rules")
def rules_command() -> int:
    """List every rule: code, name, severity, whether it runs by default, summary."""
    header = ("code", "name", "severity", "default", "summary")
    rows = [header] + [
        (
            rule.code,
            rule.name,
            rule.severity.value,
            "preview" if rule.preview else "on",
            rule.summary(),
        )
        for rule in all_rules()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[-1]]))
    return EXIT_CLEAN


def _default(rule: type[Rule]) -> str:
    return "preview" if rule.preview else "on by default"


class _ValidateCommand(click.Command):
    """Remembers whether the program came after `--` (a command to run as is)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["tapelint.validate.dash_dash"] = _program_after_dash_dash(args)
        return super().parse_args(ctx, args)


def _program_after_dash_dash(args: list[str]) -> bool:
    """Whether `--` ends the options (before the first argument that is not an option)."""
    takes_value = {"--paths", "--max-steps", "--timeout", "--output-format", "--config"}
    takes_value |= {"--select", "--extend-select", "--ignore"}
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            return True
        elif arg in takes_value:
            skip = True
        elif not arg.startswith("-"):
            return False
    return False


@cli.command(
    "validate",
    cls=_ValidateCommand,
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.argument("program", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--paths",
    multiple=True,
    type=click.Path(),
    help="More files or directories to check, and to watch for exceptions while the program "
    "runs (repeatable).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Stop the program after this many optimizer steps.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120,
    show_default=True,
    help="Kill the program (its whole process group) after this many seconds.",
)
@click.option("--quiet", is_flag=True, help="Capture the program's output instead of showing it.")
@click.option(
    "--output-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="How to print diagnostics and verdicts.",
)
@_rule_selection_options
@click.pass_context
def validate_command(
    ctx: click.Context,
    program: tuple[str, ...],
    paths: tuple[str, ...],
    max_steps: int,
    timeout: float,
    quiet: bool,
    output_format: str,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_file: Path | None,
    preview: bool,
) -> int:
    """Run SCRIPT (or, after `--`, any COMMAND) on TensorFlow and confirm findings.

    \b
    tapelint validate [OPTIONS] SCRIPT [SCRIPT_ARGS...]
    tapelint validate [OPTIONS] -- COMMAND [ARGS...]

    Every diagnostic in the files the run went through gets a verdict: confirmed, refuted,
    not-reached or inconclusive. Exit status: 1 something confirmed or found at runtime,
    0 nothing, 2 a tapelint error, 3 the program failed before its first training step.
    """
    from tapelint.validate.command import Request, ValidateError, validate

    request = Request(
        program=program,
        is_command=bool(ctx.meta.get("tapelint.validate.dash_dash")),
        paths=paths,
        max_steps=max_steps,
        timeout=timeout,
        quiet=quiet,
        output_format=output_format,
        settings=_settings(config_file, select, extend_select, ignore, preview),
    )
    try:
        return validate(request)
    except ValidateError as error:
        raise click.ClickException(str(error)) from None


@cli.command("server")
@click.option("--tcp", is_flag=True, help="Listen on a TCP port instead of standard input/output.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address for --tcp.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=2087,
    show_default=True,
    help="The port for --tcp.",
)
def server_command(tcp: bool, host: str, port: int) -> int:
    """Run the language server (LSP, for editors) over standard input/output.

    Exit status: 0 after the client's `shutdown` and `exit`, 1 when it exits without
    `shutdown` or disconnects.
    """
    try:
        from tapelint.server import serve
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in {"pygls", "lsprotocol"}:
            raise
        raise click.ClickException(
            f"the language server needs {error.name}: pip install 'tapelint[server]'"
        ) from None
    return serve((host, port) if tcp else None)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The `tapelint` command. Once it is done, the process ends at once: tearing down the
    interpreter would free, one object at a time, everything a run over a large repository
    built, which took over a second after a run over TensorFlow's sources (measured), with
    nothing left to write."""
    try:
        cli.main(args=argv, prog_name="tapelint")
    except SystemExit as done:
        status = done.code
        code = status if isinstance(status, int) else (0 if status is None else EXIT_ERROR)
    else:  # cli.main always exits; this keeps the type checker's NoReturn honest
        code = EXIT_CLEAN
    for stream in (sys.stdout, sys.stderr):
        if stream.closed:  # closed by its owner (the language server's transport): all written
            continue
        try:
            stream.flush()
        except OSError:  # a closed pipe: what was left to write is lost
            code = code or EXIT_ERROR
    os._exit(code)
