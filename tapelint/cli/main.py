"""The `tapelint` command: `check`, `clean`, `rule`, `rules`, `validate`, `server` and
`--version`.

Exit status of `check`, as ruff's: 0 nothing found, 1 diagnostics found (0 with
`--exit-zero`; with `--diff`, 1 when there is a diff; with `--fix-only`, 0 whatever remains;
with `--exit-non-zero-on-fix`, 1 also when something was fixed; with `--add-noqa`, 0 once
the comments are written), 2 a usage or config error, a missing path, a failed write, or an
internal error. Every error is one `error: ...` line on stderr.

Output formats, their default and the summary line: `tapelint.output`,
`tapelint.cli.check.default_format` and `tapelint.output.summary`.

Start-up is kept short (`--version`, `--help` and each shell-completion TAB): at import this
module loads click and the few light modules its options name; libcst, the rules and each
command's implementation are imported inside the command that runs (the figures:
docs/performance.md, and `tests/test_startup.py` holds the import graph to it).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

import tapelint
from tapelint import interrupts
from tapelint.cli.watch import watch as watch_and_check
from tapelint.output import FORMAT_NAMES
from tapelint.output.style import CHOICES as COLOR_CHOICES

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from tapelint.cli.check import CheckRequest
    from tapelint.findings.rule import Rule
    from tapelint.settings.config import Settings
    from tapelint.settings.resolution import ConfigSource, SettingsResolver

# Exit statuses of every command (`check` adds EXIT_FOUND: `tapelint.cli.check`).
EXIT_CLEAN, EXIT_ERROR = 0, 2


def print_error(message: str) -> None:
    click.echo(f"error: {message}", err=True)


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
            print_error(error.format_message())
            status = EXIT_ERROR
        except click.Abort:  # a KeyboardInterrupt: Ctrl-C, SIGTERM or SIGHUP
            print_error("interrupted")
            status = interrupts.exit_status()
        except Exception as error:  # never a traceback
            print_error(f"internal error: {type(error).__name__}: {error}")
            status = EXIT_ERROR
        sys.exit(status)


class _EnvOption(click.Option):
    """An option that can come from an environment variable, whose errors name the variable
    only when the value came from it (click names it whatever the value's origin)."""

    def consume_value(self, ctx: click.Context, opts: Any) -> tuple[Any, Any]:
        value, source = super().consume_value(ctx, opts)
        ctx.meta[f"tapelint.parsing.slicer.{self.name}"] = source
        return value, source

    def get_error_hint(self, ctx: click.Context | None) -> str:
        hint = click.Parameter.get_error_hint(self, ctx)
        source = ctx.meta.get(f"tapelint.parsing.slicer.{self.name}") if ctx is not None else None
        if source is click.core.ParameterSource.ENVIRONMENT and self.envvar is not None:
            hint += f" (from the environment variable {self.envvar})"
        return hint


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    tapelint.__version__,
    "-V",
    "--version",
    prog_name="tapelint",
    message="%(prog)s %(version)s",
)
def cli() -> None:
    """Find misuse of TensorFlow's tf.GradientTape before it costs a training run."""


def _split(values: Iterable[str]) -> list[str]:
    """Comma-separated values of a repeatable option, as one list."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


_SELECTORS = "Rule codes, code prefixes, rule names or ALL, comma-separated; repeatable."
_CONFIG_OPTION = click.option(
    "--config",
    "config",
    multiple=True,
    metavar="FILE|TOML",
    help="A config file for every file checked (a pyproject.toml, or a file with the settings "
    "at its top level) instead of each file's closest one; or, when the value is no existing "
    'file and reads as TOML, settings on top of the config (`--config "preview = true"`). '
    "Repeatable: one file, any number of TOML settings.",
)
_ISOLATED_OPTION = click.option(
    "--isolated", is_flag=True, help="Read no config file: the defaults and the options only."
)


def _complete_rules(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Shell completion of rule codes and names (docs/cli.md): after a comma, of the last
    selector in the list. Only a TAB here imports the rules."""
    from click.shell_completion import CompletionItem

    from tapelint.linter.registry import all_rules

    done, comma, last = incomplete.rpartition(",")
    return [
        CompletionItem(done + comma + key, help=other)
        for rule in all_rules()
        for key, other in ((rule.code, rule.name), (rule.name, rule.code))
        if key.startswith(last.upper() if key == rule.code else last.lower())
    ]


def _rule_selection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--select`, `--extend-select`, `--ignore`, `--config` and `--preview`, shared by
    `check` and `validate`."""
    options = [
        click.option(
            "--select",
            multiple=True,
            metavar="SELECTORS",
            shell_complete=_complete_rules,
            help=f"Run only these. {_SELECTORS}",
        ),
        click.option(
            "--extend-select",
            multiple=True,
            metavar="SELECTORS",
            shell_complete=_complete_rules,
            help=f"Run these too. {_SELECTORS}",
        ),
        click.option(
            "--ignore",
            multiple=True,
            metavar="SELECTORS",
            shell_complete=_complete_rules,
            help=f"Do not run these. {_SELECTORS}",
        ),
        _CONFIG_OPTION,
        _ISOLATED_OPTION,
        click.option("--preview", is_flag=True, help="Enable preview rules."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


_PATTERNS = (
    "Glob patterns, comma-separated; repeatable; relative to the project root as in the config."
)
_PER_FILE = (
    "GLOB:SELECTORS pairs (`tests/*:TAP401,TAP402`), comma-separated; repeatable; the globs "
    "relative to the project root as in the config."
)


@cli.command()
# Not `readable`: a file that cannot be read is its own TAP002 finding, not a usage error.
@click.argument("paths", nargs=-1, type=click.Path(readable=False))
@_rule_selection_options
@click.option(
    "--output-format",
    type=click.Choice(FORMAT_NAMES),
    envvar="TAPELINT_OUTPUT_FORMAT",
    show_envvar=True,
    cls=_EnvOption,
    help="How to print diagnostics. concise: one short line each, the problem without the "
    "advice, [*] on what the fixes can fix (the default when standard output is a terminal); "
    "text: one line each with the whole message, flake8's form (the default otherwise, so "
    "that scripts and CI logs get every word); full: each with the code it points at and "
    "what to do; grouped: concise lines under each file's path; for programs and CI: json, "
    "json-lines, sarif, github (GitHub Actions annotations), gitlab (GitLab Code Quality), "
    "azure (Azure Pipelines logging commands), junit (JUnit XML), pylint, rdjson (reviewdog).",
)
@click.option(
    "--color",
    type=click.Choice(COLOR_CHOICES),
    default="auto",
    show_default=True,
    help="Colour the formats for people. auto: only on a terminal, and not when NO_COLOR is "
    "set (FORCE_COLOR or CLICOLOR_FORCE colour a pipe too); the formats for programs are "
    "never coloured.",
)
@click.option(
    "-o",
    "--output-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="TAPELINT_OUTPUT_FILE",
    show_envvar=True,
    cls=_EnvOption,
    help="Write the diagnostics (or the diff) to this file instead of standard output; "
    "warnings, errors and the summary line still go to standard error.",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when diagnostics are found.")
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="Exit 1 when a fix was applied, even if no diagnostic remains.",
)
@click.option(
    "--force-exclude", is_flag=True, help="Apply excludes to paths named on the command line too."
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="PATTERNS",
    help=f"Skip these files and directories instead of the config's `exclude` (which "
    f"includes the defaults: .git, .venv, build...). {_PATTERNS}",
)
@click.option(
    "--extend-exclude",
    multiple=True,
    metavar="PATTERNS",
    help=f"Skip these files and directories too. {_PATTERNS}",
)
@click.option(
    "--per-file-ignores",
    multiple=True,
    metavar="PAIRS",
    help=f"Do not run these rules on these files, instead of the config's "
    f"`per-file-ignores`. {_PER_FILE}",
)
@click.option(
    "--extend-per-file-ignores",
    multiple=True,
    metavar="PAIRS",
    help=f"Like --per-file-ignores, on top of the config's. {_PER_FILE}",
)
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option(
    "--fix-only",
    is_flag=True,
    help="Apply fixes and report only what was fixed, not the diagnostics that remain "
    "(which do not make the exit status 1). Implies --fix.",
)
@click.option("--unsafe-fixes", is_flag=True, help="Include unsafe fixes (with --fix or --diff).")
@click.option(
    "--unfixable",
    multiple=True,
    metavar="SELECTORS",
    shell_complete=_complete_rules,
    help=f"Report these rules' diagnostics without their fixes: --fix leaves them alone. "
    f"{_SELECTORS}",
)
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
    "--ignore-noqa",
    is_flag=True,
    help="Report what `# noqa` and `# tapelint: ignore[...]` comments would silence.",
)
@click.option(
    "--statistics", is_flag=True, help="Print how many diagnostics of each code, not each one."
)
@click.option(
    "--show-files",
    is_flag=True,
    help="Print the files a check of PATHS would read, one a line, and check nothing.",
)
@click.option(
    "--show-settings",
    is_flag=True,
    help="Print the settings in effect (the config with the command-line options applied, "
    "as [tool.tapelint] TOML) and the rules that run, and check nothing.",
)
@click.option(
    "-w",
    "--watch",
    is_flag=True,
    help="Check, then check again whenever a .py, .ipynb or .toml file under PATHS changes, "
    "until Ctrl-C.",
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
    cls=_EnvOption,
    help="Neither read nor write the result cache.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="TAPELINT_CACHE_DIR",
    show_envvar=True,
    cls=_EnvOption,
    help="Where to keep the result cache (default: `cache-dir` in the config, "
    "else .tapelint_cache in the project root).",
)
def check(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config: tuple[str, ...],
    isolated: bool,
    preview: bool,
    output_format: str | None,
    output_file: Path | None,
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    per_file_ignores: tuple[str, ...],
    extend_per_file_ignores: tuple[str, ...],
    unfixable: tuple[str, ...],
    ignore_noqa: bool,
    show_files: bool,
    show_settings: bool,
    watch: bool,
    stdin_filename: str | None,
    **flags: Any,
) -> int:
    """Check PATHS (files or directories; default: the current directory).

    `-` reads the source from standard input; `--stdin-filename PATH` says which file it is.
    """
    from tapelint.cli.check import CheckRequest, default_format, run_check

    reading_stdin = _reads_stdin(paths, stdin_filename)
    if flags["add_noqa"]:
        _check_add_noqa_alone(
            fix=flags["fix"] or flags["fix_only"],
            diff=flags["diff"],
            unsafe_fixes=flags["unsafe_fixes"],
            statistics=flags["statistics"],
            show_fixes=flags["show_fixes"],
            watch=watch,
            reading_stdin=reading_stdin,
        )
    if watch and reading_stdin:
        raise click.UsageError("--watch watches files: it cannot check standard input")
    overrides = _Overrides(
        select,
        extend_select,
        ignore,
        preview,
        unfixable,
        exclude,
        extend_exclude,
        per_file_ignores,
        extend_per_file_ignores,
        ignore_noqa,
    )
    source = _config_source(config, isolated)
    resolver = _resolver(source, overrides)
    if show_files or show_settings:
        return _show(paths, resolver, show_files, flags["force_exclude"])
    request = CheckRequest(
        paths=paths,
        # A watching run reads the config again for each check: it may have been edited.
        settings=(lambda: _resolver(source, overrides)) if watch else (lambda: resolver),
        reading_stdin=reading_stdin,
        stdin_filename=stdin_filename,
        output_format=output_format or ("text" if output_file else default_format()),
        output_file=output_file,
        **{**flags, "jobs": flags["jobs"] or 0},
    )
    if not watch:
        status = run_check(request)
        interrupts.check()  # a signal whose interruption something swallowed still ends it
        return status
    also = [source.config_file] if source.config_file is not None else []
    status = watch_and_check(paths or (".",), also, lambda: _checked_once(request))
    if interrupts.received() not in (None, signal.SIGINT):
        interrupts.check()  # Ctrl-C is how watching ends (status 0); SIGTERM and SIGHUP are not
    return status


def _checked_once(request: CheckRequest) -> None:
    """One check of a watching run: an error, even an internal one, is printed as a run
    would print it, and the watching goes on."""
    from tapelint.cli.check import run_check

    try:
        run_check(request)
    except click.ClickException as error:
        print_error(error.format_message())
    except Exception as error:  # never a traceback, and the next change is checked
        print_error(f"internal error: {type(error).__name__}: {error}")


def _show(
    paths: tuple[str, ...], resolver: SettingsResolver, show_files: bool, force_exclude: bool
) -> int:
    from tapelint.cli.show import files_checked, settings_text
    from tapelint.settings.config import ConfigError

    try:
        settings = resolver.for_run()
        if not show_files:
            # The settings of the one file given, else of the current directory.
            one = Path(paths[0]) if len(paths) == 1 and Path(paths[0]).is_file() else None
            directory = one.absolute().parent if one is not None else Path.cwd()
            shown = resolver.for_directory(directory)
            config = resolver.config_of(directory)
            click.echo(settings_text(shown, config, paths), nl=False)
            return EXIT_CLEAN
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    files, skipped, missing = files_checked(paths, settings, force_exclude=force_exclude)
    for file in files:
        click.echo(file)
    for line in skipped:
        click.echo(f"skipped {line}", err=True)
    for path in missing:
        print_error(f"{path}: no such file or directory")
    return EXIT_ERROR if missing else EXIT_CLEAN


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


@dataclass(frozen=True)
class _Overrides:
    """The command-line options that change the settings, as given."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    preview: bool = False
    unfixable: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[str, ...] = ()
    extend_per_file_ignores: tuple[str, ...] = ()
    ignore_noqa: bool = False


def _config_source(values: tuple[str, ...], isolated: bool) -> ConfigSource:
    """`--config` values and `--isolated`, as ruff reads them: a value that names no existing
    file and parses as TOML is settings; any other value is a config file."""
    from tapelint.settings.config import parse_inline
    from tapelint.settings.resolution import ConfigSource

    files: list[Path] = []
    inline: dict[str, Any] = {}
    for value in values:
        table = None if os.path.lexists(value) else parse_inline(value)
        if table is None:
            files.append(Path(value))
        else:
            inline.update(table)
    if len(files) > 1:
        raise click.UsageError("--config: one config file at most (and any number of settings)")
    if files and isolated:
        raise click.UsageError("--isolated reads no config file: it cannot be combined with one")
    return ConfigSource(files[0] if files else None, inline, isolated)


def _resolver(source: ConfigSource, given: _Overrides) -> SettingsResolver:
    """Each file's settings, with the command-line options on top (checked at once)."""
    from tapelint.settings.config import ConfigError
    from tapelint.settings.resolution import SettingsResolver

    selectors = {
        "--select": _split(given.select),
        "--extend-select": _split(given.extend_select),
        "--ignore": _split(given.ignore),
        "--unfixable": _split(given.unfixable),
    }
    for option, found in selectors.items():
        _validate(option, found)
    per_file = _pairs("--per-file-ignores", given.per_file_ignores)
    extend_per_file = _pairs("--extend-per-file-ignores", given.extend_per_file_ignores)

    def adjust(settings: Settings) -> Settings:
        return settings.override(
            select=selectors["--select"] if given.select else None,
            extend_select=selectors["--extend-select"],
            ignore=selectors["--ignore"],
            preview=given.preview,
            unfixable=selectors["--unfixable"],
            exclude=_split(given.exclude) if given.exclude else None,
            extend_exclude=_split(given.extend_exclude),
            per_file_ignores=per_file if given.per_file_ignores else None,
            extend_per_file_ignores=extend_per_file,
            ignore_noqa=given.ignore_noqa,
        )

    resolver = SettingsResolver(source, adjust=adjust)
    try:
        resolver.for_run()  # a broken config of the current directory stops the run here
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    return resolver


def _settings(source: ConfigSource, given: _Overrides) -> Settings:
    """The settings of the current directory (`clean`, `validate`)."""
    return _resolver(source, given).for_run()


def _validate(option: str, selectors: list[str]) -> None:
    from tapelint.settings.selection import SelectorError, validate

    try:
        validate(selectors)
    except SelectorError as error:
        raise click.ClickException(f"{option}: {error}") from None


def _pairs(option: str, values: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """`GLOB:SELECTORS` pairs, ruff's form: in `a.py:TAP401,TAP402,tests/*:TAP1` a part
    with a colon starts a pair (the glob before its last colon) and one without adds a
    selector to the pair before it."""
    pairs: list[tuple[str, list[str]]] = []
    for part in _split(values):
        glob, colon, selector = part.rpartition(":")
        if colon and glob.strip():
            pairs.append((glob.strip(), [selector.strip()] if selector.strip() else []))
        elif pairs and not colon:
            pairs[-1][1].append(part)
        else:
            raise click.ClickException(f"{option}: expected GLOB:SELECTORS, got {part!r}")
    for glob, selectors in pairs:
        if not selectors:
            raise click.ClickException(f"{option}: no rule selector after {glob!r}")
        _validate(option, selectors)
    return [(glob, tuple(selectors)) for glob, selectors in pairs]


@cli.command("clean")
@_CONFIG_OPTION
@_ISOLATED_OPTION
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="TAPELINT_CACHE_DIR",
    show_envvar=True,
    cls=_EnvOption,
    help="The cache to remove (default: `cache-dir` in the config, else .tapelint_cache in "
    "the project root).",
)
def clean_command(config: tuple[str, ...], isolated: bool, cache_dir: Path | None) -> int:
    """Remove the result cache that `tapelint check` uses here.

    Only a directory that tapelint made (its CACHEDIR.TAG says so) is removed.
    """
    from tapelint.cli.clean import CleanError, remove_cache

    source = _config_source(config, isolated)
    directory = (cache_dir or _settings(source, _Overrides()).cache_path).absolute()
    try:
        removed = remove_cache(directory)
    except CleanError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"{'Removed' if removed else 'No cache at'} {directory}", err=True)
    return EXIT_CLEAN


@cli.command("rule")
@click.argument("code_or_name", shell_complete=_complete_rules)
def rule_command(code_or_name: str) -> int:
    """Print the documentation of one rule (by code or name)."""
    from tapelint.linter.registry import rule_by_code_or_name
    from tapelint.settings.selection import close_matches

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
@click.option(
    "--output-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a table; json: a list of {code, name, severity, preview, fixable, url, summary}.",
)
def rules_command(output_format: str) -> int:
    """List every rule: code, name, severity, whether it runs by default, summary."""
    from tapelint.linter.registry import all_rules
    from tapelint.output.rules_json import render as rules_json

    if output_format == "json":
        click.echo(rules_json(all_rules()), nl=False)
        return EXIT_CLEAN
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
@click.option(
    "-q", "--quiet", is_flag=True, help="Capture the program's output instead of showing it."
)
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
    config: tuple[str, ...],
    isolated: bool,
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
        settings=_settings(
            _config_source(config, isolated), _Overrides(select, extend_select, ignore, preview)
        ),
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
    nothing left to write. A signal at any moment ends it as `tapelint.interrupts` says
    (the entry point, `tapelint.__main__`, handles them from its first line)."""
    interrupts.install()
    try:
        os._exit(_flushed(_status(argv)))
    except KeyboardInterrupt:  # a signal outside the command's own handling
        interrupts.end_interrupted()


def _status(argv: Sequence[str] | None) -> int:
    try:
        cli.main(args=argv, prog_name="tapelint")
    except SystemExit as done:
        status = done.code
        return status if isinstance(status, int) else (0 if status is None else EXIT_ERROR)
    return EXIT_CLEAN  # cli.main always exits; this keeps the type checker honest


def _flushed(code: int) -> int:
    """`code`, or EXIT_ERROR when what was left to write could not be."""
    for stream in (sys.stdout, sys.stderr):
        if stream.closed:  # closed by its owner (the language server's transport): all written
            continue
        try:
            stream.flush()
        except OSError:  # a closed pipe: what was left to write is lost
            code = code or EXIT_ERROR
    return code
