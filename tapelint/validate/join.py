"""Joining the run to the static diagnostics: a verdict for each, and the problems the run
showed that no static diagnostic covers (origin `runtime`).

Runtime-only findings are limited to facts that name their rule by themselves: a None
gradient that reached an optimizer update (TAP401), the error of a second gradient call on
a non-persistent tape (TAP105), `watch` refusing a Keras variable (TAP204), and
`tf.function` refusing to create variables after its first call (TAP502). An all-None
gradient, by contrast, has several possible causes, so it only ever confirms a diagnostic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from tapelint.diagnostics import Diagnostic, Position
from tapelint.registry import rule_by_code_or_name
from tapelint.validate.checks import (
    CHECKS,
    built_before,
    error_summary,
    errors_at,
    is_variable_error,
)
from tapelint.validate.costs import cost_of, runtime_apply_cost
from tapelint.validate.observations import Event, Frame, Observations
from tapelint.validate.probe import schema
from tapelint.validate.verdict import Cost, Site, Status, Verdict


@dataclass(frozen=True)
class Validated:
    diagnostic: Diagnostic
    verdict: Verdict
    origin: str  # "static" or "runtime"

    @property
    def sort_key(self) -> tuple:
        return self.diagnostic.sort_key


def site_of(diagnostic: Diagnostic, cwd: Path) -> Site:
    path = str((cwd / diagnostic.path).resolve())
    return Site(path, diagnostic.start.line, max(diagnostic.start.line, diagnostic.end.line))


def sites_of(diagnostic: Diagnostic, cwd: Path) -> list[Site]:
    """Where a diagnostic is, then the places it rests on (its `related` locations outside
    notebooks: the apply inside a helper of another module that a call hands gradients to)."""
    related = [
        Site(str((cwd / place.path).resolve()), place.line, place.line)
        for place in diagnostic.related
        if place.cell is None
    ]
    return [site_of(diagnostic, cwd), *related]


def judge(
    diagnostics: Iterable[Diagnostic], observations: Observations, cwd: Path
) -> list[Validated]:
    """A verdict for each diagnostic, at its own lines; where the run never reached them,
    at the places it rests on (the problem of a call that hands gradients to a helper
    shows at the helper's apply)."""
    judged = []
    for diagnostic in diagnostics:
        rule_check = CHECKS.get(diagnostic.code)
        if rule_check is None:
            verdict = Verdict.inconclusive("this rule has no runtime check")
        else:
            for site in sites_of(diagnostic, cwd):
                verdict = rule_check(site, observations)
                if verdict.status is not Status.NOT_REACHED:
                    break
            if verdict.status is Status.NOT_REACHED:
                site = site_of(diagnostic, cwd)
                verdict = (
                    _ran_and_raised(site, observations)
                    or _ran_unseen(diagnostic.code, site, observations)
                    or verdict
                )
            elif verdict.status is Status.CONFIRMED:
                verdict = replace(verdict, cost=cost_of(diagnostic.code, site, observations))
        judged.append(Validated(diagnostic, verdict, "static"))
    return judged


def _ran_and_raised(site: Site, observations: Observations) -> Verdict | None:
    """`not-reached` means the code never ran: code that raised did run, even if the
    program caught the exception and the rule's own fact was never shown."""
    errors = errors_at(site, observations)
    if not errors:
        return None
    return Verdict.inconclusive(f"it ran and raised {error_summary(errors[0], 120)}")


# Why a line that ran showed its rule's check nothing, by rule; others get `_UNSEEN`.
_UNSEEN_UPDATE = (
    "the line ran, but no update by an optimizer the validator follows was seen "
    "(Keras 3's, or Keras 2's as tf_keras): this run's optimizer is not instrumented"
)
_UNSEEN_BY_RULE = dict.fromkeys(("TAP401", "TAP402", "TAP403", "TAP404"), _UNSEEN_UPDATE)
_UNSEEN = "the line ran, but the run showed nothing this rule's check can judge"


def _ran_unseen(code: str, site: Site, observations: Observations) -> Verdict | None:
    """`not-reached` means the code never ran: a line the run marked as run is
    `inconclusive`, with what the run could not see."""
    if not observations.ran(site):
        return None
    return Verdict.inconclusive(_UNSEEN_BY_RULE.get(code, _UNSEEN))


@dataclass(frozen=True)
class _Finding:
    code: str
    frame: Frame
    message: str
    evidence: str
    cause: Event | None = None  # the event that showed it
    cost: Cost | None = None


def runtime_findings(
    judged: list[Validated],
    observations: Observations,
    cwd: Path,
    display: Callable[[str], str],
    wanted: Callable[[str, str, int], bool],
) -> list[Validated]:
    """Problems the run showed that no judged diagnostic of the same rule accounts for.

    `display` turns a resolved path into the path to print; `wanted(code, path, line)` says
    whether the selection and `# noqa` comments let the finding through.
    """
    covered: dict[str, list[Site]] = {}
    for item in judged:
        covered.setdefault(item.diagnostic.code, []).extend(sites_of(item.diagnostic, cwd))
    found: dict[tuple[str, str, int], Validated] = {}
    for finding in _findings(observations):
        frame = finding.frame
        sites = covered.get(finding.code, [])
        if any(site.overlaps(frame) for site in sites) or _built_at(finding, sites, observations):
            continue
        key = (finding.code, frame.path, frame.first)
        if key in found or frame.path.startswith("<"):
            continue
        if not wanted(finding.code, frame.path, frame.first):
            continue
        rule = rule_by_code_or_name(finding.code)
        assert rule is not None  # runtime findings are made for catalogue codes only
        diagnostic = Diagnostic(
            path=display(frame.path),
            start=Position(frame.first, frame.column),
            end=Position(frame.last, frame.column),
            code=finding.code,
            name=rule.name,
            severity=rule.severity,
            message=finding.message,
        )
        verdict = Verdict(Status.CONFIRMED, finding.evidence, finding.cost)
        found[key] = Validated(diagnostic, verdict, "runtime")
    return list(found.values())


def _findings(observations: Observations) -> Iterable[_Finding]:
    for apply in observations.of(schema.APPLY):
        if apply["none_variables"] and apply.where is not None:
            names = ", ".join(apply["none_variables"][:3])
            yield _Finding(
                "TAP401",
                apply.where,
                f"a None gradient reached `{apply['method']}` at runtime (no gradient for "
                f"{names}); filter out None gradients and report the variables that got none",
                "seen at runtime; no static diagnostic covers this call",
                apply,
                runtime_apply_cost(apply),
            )
    for call in observations.of(schema.GRADIENT):
        error = call["error"]
        if error and error[0] == "RuntimeError" and "non-persistent" in error[1] and call.where:
            yield _Finding(
                "TAP105",
                call.where,
                "a non-persistent tape was asked for gradients a second time at runtime; "
                "make one call with every source, or use `persistent=True` and `del` it after",
                f"{error[0]}: {error[1]}",
            )
    for watch in observations.of(schema.WATCH):
        error = watch["error"]
        if error and error[0] == "ValueError" and watch.where is not None:
            yield _Finding(
                "TAP204",
                watch.where,
                "`watch` refused a Keras variable at runtime; let the tape watch the variables "
                "it reads, or watch `[v.value for v in variables]`",
                f"{error[0]}: {error[1][:160]}",
            )
    for exception in observations.errors:
        if exception["via"] == "line":  # one frame only: where it passed, not where it began
            continue
        if is_variable_error(exception) and exception.at:
            yield _Finding(
                "TAP502",
                exception.at[0],
                "a tf.function step created variables after its first call; create models, "
                "optimizers and variables once, outside the step",
                error_summary(exception, 160),
                exception,
            )


def _built_at(finding: _Finding, sites: list[Site], observations: Observations) -> bool:
    """A `tf.function` variable error whose variables a diagnosed constructor made."""
    cause = finding.cause
    return (
        finding.code == "TAP502" and cause is not None and built_before(cause, sites, observations)
    )


def counts(items: Iterable[Validated]) -> dict[str, int]:
    """How many of each verdict, plus `runtime` for the runtime-only findings."""
    result = {status.value: 0 for status in Status}
    result["runtime"] = 0
    for item in items:
        if item.origin == "runtime":
            result["runtime"] += 1
        else:
            result[item.verdict.status.value] += 1
    return result
