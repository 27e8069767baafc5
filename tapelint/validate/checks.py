"""The runtime check of every rule: RULES.md's "runtime confirmation" column as code.

Keyed by rule code, so a rule's diagnostics get verdicts as soon as the rule exists; a code
missing here gets `inconclusive`. Each judge looks at the events whose user frame matches
the diagnostic's place (the lines of the reported node; for TAP103 the `with` statement's
first line) and answers confirmed / refuted / not-reached / inconclusive with a short
evidence sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tapelint.validate.observations import Event, Frame, Observations
from tapelint.validate.probe import schema
from tapelint.validate.verdict import NOT_REACHED, Site, Verdict

Judge = Callable[[Site, Observations], Verdict]


def events_at(events: Iterable[Event], site: Site) -> list[Event]:
    """The events whose user frame was executing the site's lines."""
    return [e for e in events if site.overlaps(e.where)]


def constructions_at(obs: Observations, site: Site) -> list[Event]:
    """The constructions the site's lines ran: written there, or, when none was, made by a
    helper the site calls (`make_optimizer(lr)`, whose `return` constructs). A helper's
    construction is the one line of it that ran most often under the site: a helper that
    builds a model also builds its layers, once each, and those must not count as the
    model built again."""
    built = events_at(obs.of(schema.CONSTRUCT), site)
    if built:
        return built
    through: dict[Frame | None, list[Event]] = {}
    for event in obs.of(schema.CONSTRUCT):
        if len(event.at) > 1 and site.overlaps(event.at[1]):
            through.setdefault(event.where, []).append(event)
    return max(through.values(), key=len, default=[])


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def error_summary(exception: Event, limit: int) -> str:
    """`Type: message` on one line. An error raised while a `tf.function` traced says
    "in user code:" and the traceback first; its own message is the last line."""
    lines = [line.strip() for line in (exception["message"] or "").splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("in user code"):
        lines = lines[-1:]
    message = lines[0] if lines else ""
    message = message.removeprefix(f"{exception['type']}: ")
    if len(message) > limit:
        message = message[: limit - 1] + "…"
    return f"{exception['type']}: {message}"


def errors_at(site: Site, obs: Observations) -> list[Event]:
    """The exceptions raised at the site's lines (or passing through them), caught or not."""
    return [e for e in obs.errors if any(site.overlaps(f) for f in e.at)]


def _all_none(event: Event) -> bool:
    return bool(event["none"]) and all(event["none"])


# --------------------------------------------------------------------- gradient calls
def _loss_outside_tape(site: Site, obs: Observations) -> Verdict:
    calls = events_at(obs.of(schema.GRADIENT), site)
    if not calls:
        return NOT_REACHED
    empty = [c for c in calls if _all_none(c)]
    if empty:
        return Verdict.confirmed(
            f"every gradient it returned was None ({len(empty)} of {len(calls)} calls)"
        )
    if all(c["error"] for c in calls):
        return Verdict.inconclusive(f"the call raised {calls[0]['error'][0]}")
    return Verdict.refuted(f"the call returned gradients ({len(calls)} calls)")


def _gradient_inside_tape(site: Site, obs: Observations) -> Verdict:
    calls = events_at(obs.of(schema.GRADIENT), site)
    if not calls:
        return NOT_REACHED
    inside = [c for c in calls if c["recording"]]
    if inside:
        return Verdict.confirmed(
            f"ran while its tape was recording ({len(inside)} of {len(calls)} calls)"
        )
    return Verdict.refuted(f"ran after its tape stopped recording ({len(calls)} calls)")


def _tape_reused(site: Site, obs: Observations) -> Verdict:
    calls = events_at(obs.of(schema.GRADIENT), site)
    if not calls:
        return NOT_REACHED
    for call in calls:
        if _is_reuse_error(call):
            return Verdict.confirmed(f"{call['error'][0]}: {call['error'][1]}")
    return Verdict.refuted(f"the call ran without the error ({len(calls)} calls)")


def _is_reuse_error(event: Event) -> bool:
    error = event["error"]
    return bool(error) and error[0] == "RuntimeError" and "non-persistent" in error[1]


def _unwatched_source(site: Site, obs: Observations) -> Verdict:
    calls = events_at(obs.of(schema.GRADIENT), site)
    if not calls:
        return NOT_REACHED
    tensor_results = [
        none
        for call in calls
        for kind, none in zip(call["sources"] or [], call["none"] or [], strict=False)
        if kind == "tensor"
    ]
    if not tensor_results:
        return Verdict.inconclusive("no source of this call was a plain tensor")
    if any(tensor_results):
        return Verdict.confirmed("a plain-tensor source got a None gradient")
    return Verdict.refuted("every plain-tensor source got a gradient")


def _some_none(site: Site, obs: Observations) -> Verdict:
    calls = [c for c in events_at(obs.of(schema.GRADIENT), site) if not c["error"]]
    if not calls:
        return NOT_REACHED
    missing = sum(sum(1 for n in c["none"] or [] if n) for c in calls)
    if missing:
        return Verdict.confirmed(f"{missing} gradients were None over {len(calls)} calls")
    return Verdict.refuted(f"every gradient was computed ({len(calls)} calls)")


# ------------------------------------------------------------------------- tapes
def tapes_created_at(site: Site, obs: Observations, *, header: bool = False) -> list[Event]:
    match = site.starts_with if header else site.overlaps
    tapes = [t for t in obs.of(schema.TAPE) if match(t.where)]
    if header:
        keys = {(t.pid, t["tape"]) for t in tapes}
        for enter in obs.of(schema.ENTER):
            if site.starts_with(enter.where) and (enter.pid, enter["tape"]) not in keys:
                tape = obs.tapes.get((enter.pid, enter["tape"]))
                if tape is not None:
                    tapes.append(tape)
                    keys.add((enter.pid, enter["tape"]))
    return tapes


def _unnecessary_persistent(site: Site, obs: Observations) -> Verdict:
    tapes = [t for t in tapes_created_at(site, obs) if t["persistent"]]
    if not tapes:
        return NOT_REACHED
    ends = [obs.tape_ends[(t.pid, t["tape"])] for t in tapes if (t.pid, t["tape"]) in obs.tape_ends]
    if not ends:
        return Verdict.inconclusive("no tape from here finished before the program ended")
    most = max(end["calls"] for end in ends)
    if most <= 1:
        return Verdict.confirmed(f"each of {len(ends)} tapes served at most one gradient call")
    return Verdict.refuted(f"a tape from here served {most} gradient calls")


def _not_released(site: Site, obs: Observations) -> Verdict:
    tapes = [t for t in tapes_created_at(site, obs, header=True) if t["persistent"]]
    if not tapes:
        return NOT_REACHED
    eager = [t for t in tapes if not t["traced"]]
    if not eager:
        return Verdict.inconclusive("the tape exists only while a tf.function traces")
    ends = [obs.tape_ends[(t.pid, t["tape"])] for t in eager if (t.pid, t["tape"]) in obs.tape_ends]
    if not ends:
        return Verdict.inconclusive("no tape from here finished before the program ended")
    alive = [end for end in ends if end["alive"]]
    if alive:
        return Verdict.confirmed(
            f"{len(alive)} of {len(ends)} tapes were still alive when the next step began "
            "or the program ended"
        )
    return Verdict.refuted(f"all {len(ends)} tapes were released before the next step")


def _unused_tape(site: Site, obs: Observations) -> Verdict:
    """The tapes entered at the `with` statement: asked for nothing over their life, and
    what they recorded (`tape-end`'s operation count)."""
    tapes = tapes_created_at(site, obs, header=True)
    if not tapes:
        return NOT_REACHED
    eager = [t for t in tapes if not t["traced"]]
    if not eager:
        return Verdict.inconclusive("the tape exists only while a tf.function traces")
    asked = sum(1 for t in eager for _ in obs.gradients_of(t.pid, t["tape"]))
    if asked:
        return Verdict.refuted(f"tapes from here served {asked} gradient calls")
    ends = [obs.tape_ends[(t.pid, t["tape"])] for t in eager if (t.pid, t["tape"]) in obs.tape_ends]
    if not ends:
        return Verdict.inconclusive("no tape from here ended before the program did")
    if any(end["ops"] is None for end in ends):
        return Verdict.inconclusive("the tape served no call; its operations were not counted")
    ops = max(end["ops"] for end in ends)
    served = "the tape served no call" if len(ends) == 1 else f"{len(ends)} tapes served no call"
    if not ops:
        return Verdict.refuted(f"{served}, but recorded no operation")
    each = "" if len(ends) == 1 else " (the most of one tape)"
    return Verdict.confirmed(f"{served} and recorded {_counted(ops, 'operation')}{each}")


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _tapes_without_watch(site: Site, obs: Observations) -> Verdict:
    tapes = [t for t in tapes_created_at(site, obs) if t["watch_accessed_variables"] is False]
    if not tapes:
        return NOT_REACHED
    calls = [c for t in tapes for c in obs.gradients_of(t.pid, t["tape"]) if not c["error"]]
    if not calls:
        return Verdict.inconclusive("no gradient was asked of these tapes")
    empty = [c for c in calls if _all_none(c)]
    if empty:
        return Verdict.confirmed(f"every gradient was None ({len(empty)} of {len(calls)} calls)")
    return Verdict.refuted(f"the tape's gradient calls returned gradients ({len(calls)} calls)")


def _watch_keras_variables(site: Site, obs: Observations) -> Verdict:
    watches = events_at(obs.of(schema.WATCH), site)
    if not watches:
        return NOT_REACHED
    for watch in watches:
        if watch["error"]:
            return Verdict.confirmed(f"{watch['error'][0]}: {watch['error'][1]}")
    return Verdict.refuted(f"`watch` accepted its argument ({_times(len(watches))})")


# ----------------------------------------------------------------- recorded blocks
def _blocks_containing(site: Site, obs: Observations) -> list[Event]:
    """The tapes whose `with` statement contains the diagnostic, one per tape."""
    seen: set[tuple[int, int]] = set()
    tapes = []
    for enter in obs.of(schema.ENTER):
        key = (enter.pid, enter["tape"])
        if key not in seen and site.inside(enter.where) and not site.starts_with(enter.where):
            seen.add(key)
            tapes.append(enter)
    return tapes


def _gradients_after(obs: Observations, pid: int, tapes: Iterable[int], after: int) -> list[Event]:
    wanted = set(tapes)
    return [
        c
        for c in obs.of(schema.GRADIENT)
        if c.pid == pid and c["tape"] in wanted and c.index > after and not c["error"]
    ]


def _numpy_in_path(site: Site, obs: Observations) -> Verdict:
    """A NumPy conversion while a tape recorded: did the gradients that follow lose a path?"""
    conversions = [c for c in obs.of(schema.CONVERT) if any(site.overlaps(f) for f in c.at)]
    for conversion in conversions:
        if conversion["error"]:
            error = conversion["error"][0]
            return Verdict.confirmed(f"converting a tensor to NumPy raised {error}")
    if not conversions:
        return _block_gradients(site, obs)
    return _path_cut_by(conversions, obs, "a tensor went to NumPy")


def _op_in_path(site: Site, obs: Observations) -> Verdict:
    """A non-differentiable op while a tape recorded: did the gradients that follow lose a path?"""
    calls = events_at(obs.of(schema.OP), site)
    if not calls:
        return _block_gradients(site, obs)
    return _path_cut_by(calls, obs, f"`{calls[0]['op']}` ran")


def _path_cut_by(events: list[Event], obs: Observations, what: str) -> Verdict:
    for event in events:
        later = _gradients_after(obs, event.pid, event["recording"], event.index)
        if any(any(c["none"] or []) for c in later):
            return Verdict.confirmed(
                f"{what} while the tape recorded, and the tape's gradient call returned None"
            )
        if any(any(c["zero"] or []) for c in later):  # `sign`: a zero gradient, not None
            return Verdict.confirmed(
                f"{what} while the tape recorded, and the tape's gradient call returned "
                "gradients that were all zeros"
            )
    return Verdict.refuted(
        f"{what} while the tape recorded, but the tape's gradients were not None"
    )


def _block_gradients(site: Site, obs: Observations) -> Verdict:
    blocks = _blocks_containing(site, obs)
    if not blocks:
        return NOT_REACHED
    calls = [c for b in blocks for c in _gradients_after(obs, b.pid, [b["tape"]], b.index)]
    if not calls:
        return Verdict.inconclusive("the tape's block ran, but no gradient was asked of it")
    if any(any(c["none"] or []) for c in calls):
        return Verdict.confirmed("the block ran and its tape's gradient call returned None")
    return Verdict.refuted("the block ran and its tape's gradients were not None")


def _unrelated_work(site: Site, obs: Observations) -> Verdict:
    if not _blocks_containing(site, obs):
        return NOT_REACHED
    return Verdict.inconclusive(
        "the block ran; TensorFlow does not expose which operations a tape recorded"
    )


def _regularization_ignored(site: Site, obs: Observations) -> Verdict:
    """At the gradient call: did the trained model hold losses (regularized sources, or
    losses its layers added while the tape recorded), and did the step read them while the
    tape recorded (Keras computes weight penalties only when `losses` is read, so a target
    that never read them cannot depend on them)?"""
    calls = [c for c in events_at(obs.of(schema.GRADIENT), site) if not c["error"]]
    if not calls:
        return NOT_REACHED
    known = [c for c in calls if c["regularized"] is not None or c["added_losses"]]
    if not known:
        return Verdict.inconclusive("no source was a Keras 3 variable, whose regularizer shows")
    holding = [c for c in known if (c["regularized"] or 0) + (c["added_losses"] or 0)]
    if not holding:
        return Verdict.refuted("`model.losses` was empty: no source carried a regularizer")
    ignored = [c for c in holding if not c["losses_read"]]
    if ignored:
        first = ignored[0]
        held = _losses_held(first["regularized"] or 0, first["added_losses"] or 0)
        return Verdict.confirmed(
            f"`model.losses` was non-empty ({held}) and the target did not depend on it: "
            f"nothing read it while the tape recorded ({len(ignored)} of {len(calls)} calls)"
        )
    return Verdict.refuted(f"`losses` was read while the tape recorded ({len(holding)} calls)")


def _losses_held(regularized: int, added: int) -> str:
    parts = []
    if regularized:
        parts.append(_counted(regularized, "regularized variable"))
    if added:
        parts.append("1 added loss" if added == 1 else f"{added} added losses")
    return " and ".join(parts)


def _missing_training_flag(site: Site, obs: Observations) -> Verdict:
    calls = events_at(obs.of(schema.LAYER_CALL), site)
    if not calls:
        return NOT_REACHED
    unset = [c for c in calls if not c["training"]]
    if unset:
        return Verdict.confirmed(
            f"{unset[0]['type']} was called without `training` while the tape recorded "
            f"({len(unset)} of {len(calls)} calls)"
        )
    return Verdict.refuted(f"every call passed `training` ({len(calls)} calls)")


# ------------------------------------------------------------------------ updates
def _unfiltered_apply(site: Site, obs: Observations) -> Verdict:
    applies = events_at(obs.of(schema.APPLY), site)
    if not applies:
        return NOT_REACHED
    # An update inside a `tf.function` is seen while the step traces, not at each call of
    # the compiled step: those are counted as traces, not updates.
    eager = [apply for apply in applies if not apply["traced"]]
    traced = [apply for apply in applies if apply["traced"]]
    counts = []
    for group, noun in ((eager, "updates"), (traced, "traces of the compiled step")):
        reached = sum(1 for apply in group if apply["none_variables"])
        if reached:
            counts.append(f"{reached} of {len(group)} {noun}")
    if counts:
        # Which variables: the cost says (costs.py), once.
        return Verdict.confirmed("a None gradient reached it in " + " and ".join(counts))
    received = [f"{_times(len(eager))}" if eager else "", _traces(len(traced)) if traced else ""]
    return Verdict.refuted(
        "every gradient it received was a tensor (" + ", ".join(filter(None, received)) + ")"
    )


def _traces(count: int) -> str:
    return f"in {count} trace{'s' if count != 1 else ''} of the compiled step"


def _variable_mismatch(site: Site, obs: Observations) -> Verdict:
    applies = events_at(obs.of(schema.APPLY), site)
    if not applies:
        return NOT_REACHED
    by_gradient = _pairs_by_gradient(applies, obs)
    if by_gradient is not None:
        return by_gradient
    judged = 0
    for apply in applies:
        variables = set(apply["variables"] or [])
        if not variables:
            continue
        previous = max(
            (a.index for a in obs.of(schema.APPLY) if a.pid == apply.pid and a.index < apply.index),
            default=-1,
        )
        sources = [
            set(c["variable_ids"] or [])
            for c in obs.of(schema.GRADIENT)
            if c.pid == apply.pid and previous < c.index < apply.index
        ]
        if not sources:
            continue
        judged += 1
        if variables not in sources:
            return Verdict.confirmed(
                "the variables it updated are not the sources of any gradient call before it"
            )
    if not judged:
        return Verdict.inconclusive("no gradient call could be matched to this update")
    return Verdict.refuted("it updated exactly the sources of a gradient call")


def _pairs_by_gradient(applies: list[Event], obs: Observations) -> Verdict | None:
    """Each pair an update received, judged by its gradient: the tensor a gradient call
    returned for one source, paired with another variable (a mismatch, or a slice out of
    step); then each source of those gradient calls whose gradient reached no update before
    the call ran again (a slice one short). None when no gradient it received can be
    traced to a gradient call (transformed on the way)."""
    calls = obs.of(schema.GRADIENT)
    feeding: dict[tuple[int, int], Event] = {}
    matched = 0
    for apply in applies:
        earlier = [c for c in calls if c.pid == apply.pid and c.index < apply.index]
        owner = _gradient_owners(earlier)
        pairs = zip(apply["gradient_ids"] or [], apply["variables"] or [], strict=False)
        for position, (gradient, variable) in enumerate(pairs):
            found = owner.get(gradient) if gradient is not None else None
            if found is None:
                continue
            call, index = found
            matched += 1
            feeding[(call.pid, call.index)] = call
            if call["source_ids"][index] != variable:
                names = apply["variable_names"] or []
                given = names[position] if position < len(names) else "another variable"
                return Verdict.confirmed(
                    f"the gradient of `{call['source_names'][index]}` updated `{given}`"
                )
    if not matched:
        return None
    for call in feeding.values():
        starved = _sources_never_updated(call, obs)
        if starved:
            return Verdict.confirmed(
                f"{len(starved)} source(s) of the gradient call got no update: "
                + ", ".join(f"`{name}`" for name in starved[:3])
            )
    return Verdict.refuted("every gradient updated its own source")


def _gradient_owners(calls: list[Event]) -> dict[int, tuple[Event, int]]:
    """For each gradient tensor's `id()`, the latest call that returned it and where."""
    owners: dict[int, tuple[Event, int]] = {}
    for call in calls:
        for index, gradient in enumerate(call["gradient_ids"] or []):
            if gradient is not None and index < len(call["source_ids"] or []):
                owners[gradient] = (call, index)
    return owners


def _sources_never_updated(call: Event, obs: Observations) -> list[str]:
    """The sources of `call` with a gradient that no update received before the same line
    asked for gradients again. The line's last call is not judged: the run may have been
    stopped between its updates."""
    again = min(
        (
            c.index
            for c in obs.of(schema.GRADIENT)
            if c.pid == call.pid and c.index > call.index and c.where == call.where
        ),
        default=None,
    )
    if again is None:
        return []
    applied = {
        gradient
        for apply in obs.of(schema.APPLY)
        if apply.pid == call.pid and call.index < apply.index < again
        for gradient in apply["gradient_ids"] or []
    }
    names = call["source_names"] or []
    return [
        names[index] if index < len(names) else f"source {index + 1}"
        for index, gradient in enumerate(call["gradient_ids"] or [])
        if gradient is not None and gradient not in applied
    ]


def _optimizer_variables_changed(site: Site, obs: Observations) -> Verdict:
    for error in errors_at(site, obs):
        message = error["message"] or ""
        if "Unknown variable" in message or "originally built with" in message:
            return Verdict.confirmed(error_summary(error, 120))
    applies = events_at(obs.of(schema.APPLY), site)
    if not applies:
        return NOT_REACHED
    for apply in applies:
        built = apply["built"]
        if built is None:
            continue
        new = [v for v in apply["variables"] or [] if v not in set(built)]
        if new:
            return Verdict.confirmed(
                f"the optimizer was built for {len(built)} variables and was handed "
                f"{len(new)} others"
            )
    if all(apply["built"] is None for apply in applies):
        return Verdict.inconclusive("each update here was its optimizer's first")
    if obs.stopped:
        return Verdict.inconclusive(
            f"every update handed the optimizer variables it was built with "
            f"({_times(len(applies))}){_before_the_end(obs)}"
        )
    return Verdict.refuted(
        f"every update handed the optimizer variables it was built with ({_times(len(applies))})"
    )


def _unsafe_transform(site: Site, obs: Observations) -> Verdict:
    errors = errors_at(site, obs)
    for error in errors:
        if "None" in (error["message"] or ""):
            return Verdict.confirmed(error_summary(error, 120))
    if errors:
        return Verdict.inconclusive(f"it raised {error_summary(errors[0], 120)}")
    later = [
        a
        for a in obs.of(schema.APPLY)
        if a.where is not None and a.where.path == site.path and a.where.first > site.last
    ]
    if later:
        return Verdict.refuted("the update after it ran, so the transform did not raise")
    return NOT_REACHED


# ---------------------------------------------------------------- compiled steps
def function_calls_at(site: Site, obs: Observations) -> tuple[set[tuple[int, int]], list[Event]]:
    """The `tf.function`s created or defined at the site, and the eager calls of them (or
    made at the site)."""
    functions = {
        (f.pid, f["function"])
        for f in obs.of(schema.FUNCTION)
        if site.overlaps(f.where) or site.overlaps(f["definition"])
    }
    calls = [
        c
        for c in obs.of(schema.CALL)
        if (c.pid, c["function"]) in functions or site.overlaps(c.where)
    ]
    return functions, calls


def _retracing(site: Site, obs: Observations) -> Verdict:
    functions, calls = function_calls_at(site, obs)
    if not calls:
        return NOT_REACHED if not functions else Verdict.inconclusive("never called eagerly")
    traced: dict[tuple[int, int], int] = {}
    arguments: dict[tuple[int, int], set[str]] = {}
    retraced = 0
    for call in calls:
        key = (call.pid, call["function"])
        if key in traced and call["traces_after"] > call["traces_before"]:
            retraced += 1
        traced.setdefault(key, call["traces_after"])
        arguments.setdefault(key, set()).add(call["arguments"])
    instances = sum(1 for key, traces in traced.items() if traces)
    if retraced:
        return Verdict.confirmed(f"traced again on {retraced} later calls")
    if len(functions) > 1 and instances > 1:
        return Verdict.confirmed(f"{instances} separate tf.functions were created and traced here")
    if len(calls) < 2:
        return Verdict.inconclusive("called only once" + _before_the_end(obs))
    if any(len(values) > 1 for values in arguments.values()):
        return Verdict.refuted(
            f"no retrace over {len(calls)} calls, though its Python arguments changed"
        )
    # The same function called with the same Python values: what would retrace it (the
    # next epoch's number, the next function object) never came.
    return Verdict.inconclusive(
        f"no retrace over {len(calls)} calls of one function, all with the same Python "
        "arguments" + _before_the_end(obs)
    )


def _frozen_at_trace(site: Site, obs: Observations) -> Verdict:
    """The side effect at the site (a draw of NumPy's or Python's randomness) ran fewer
    times than the function tracing it was called; for a read or an append, the function
    whose body holds the site was called more often than it was traced."""
    effects = [e for e in obs.of(schema.SIDE_EFFECT) if any(site.overlaps(f) for f in e.at)]
    if effects:
        ran: dict[tuple[int, int], int] = {}
        for effect in effects:
            key = (effect.pid, effect["function"])
            ran[key] = ran.get(key, 0) + 1
        calls = _calls_of(obs, set(ran))
        for key, count in ran.items():
            if calls.get(key, 0) > count:
                return Verdict.confirmed(
                    f"{effects[0]['what']} ran {_times(count)} while the function was "
                    f"called {calls[key]} times"
                )
        if all(calls.get(key, 0) >= 2 for key in ran):
            return Verdict.refuted("it ran on every call of the function")
        return Verdict.inconclusive("the function was called only once" + _before_the_end(obs))
    enclosing = {
        (f.pid, f["function"])
        for f in obs.of(schema.FUNCTION)
        if f["definition"] is not None
        and f["definition"].path == site.path
        and f["definition"].first <= site.first <= (f["end"] or 0)
    }
    if not enclosing:
        return NOT_REACHED
    calls = _calls_of(obs, enclosing)
    traces: dict[tuple[int, int], int] = {}
    for call in obs.of(schema.CALL):
        key = (call.pid, call["function"])
        if key in enclosing:
            traces[key] = max(traces.get(key, 0), call["traces_after"])
    for key, count in calls.items():
        if count > traces.get(key, 0) >= 1:
            return Verdict.confirmed(
                f"the function was traced {_times(traces[key])} and called {count} times: "
                "its Python, this line included, ran only while it was traced"
            )
    if calls and all(traces.get(key, 0) >= count >= 2 for key, count in calls.items()):
        return Verdict.refuted("the function was traced again on every call")
    if not calls:
        return NOT_REACHED
    return Verdict.inconclusive("the function was called only once" + _before_the_end(obs))


def _calls_of(obs: Observations, functions: set[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """How many eager calls each of these functions got."""
    counts: dict[tuple[int, int], int] = {}
    for call in obs.of(schema.CALL):
        key = (call.pid, call["function"])
        if key in functions:
            counts[key] = counts.get(key, 0) + 1
    return counts


def _before_the_end(obs: Observations) -> str:
    return " before the validator stopped the program" if obs.stopped else ""


def _state_in_step(site: Site, obs: Observations) -> Verdict:
    for exception in obs.errors:
        if not is_variable_error(exception):
            continue
        if any(site.overlaps(f) for f in exception.at) or built_before(exception, [site], obs):
            return Verdict.confirmed(error_summary(exception, 120))
    built = constructions_at(obs, site)
    if not built:
        return NOT_REACHED
    if len(built) > 1:
        return Verdict.confirmed(f"the constructor ran {len(built)} times")
    if _ended_early(obs, built[0].pid):
        # The loop or step around it may well have come round again had the program gone on.
        return Verdict.inconclusive(
            "the constructor ran once, and the program was stopped or failed soon after"
        )
    return Verdict.refuted("the constructor ran once, and the program ended normally")


def _ended_early(obs: Observations, pid: int) -> bool:
    """The process was stopped by the validator or ended on an uncaught exception."""
    return any(e.pid == pid for e in obs.of(schema.STOP) + obs.of(schema.EXCEPTION))


def is_variable_error(exception: Event) -> bool:
    """`tf.function` refused to create variables after its first call."""
    return "singleton tf.Variables" in (exception["message"] or "")


def built_before(exception: Event, sites: Iterable[Site], obs: Observations) -> bool:
    """A constructor at one of `sites` ran in the exception's process and step, before it.

    A Keras layer builds its variables when it is first called, so `tf.function` raises at
    that call rather than at the constructor the static rule reports."""
    sites = list(sites)
    return any(
        built.pid == exception.pid
        and built.step == exception.step
        and built.index < exception.index
        for built in obs.of(schema.CONSTRUCT)
        if any(site.overlaps(built.where) for site in sites)
    )


# ------------------------------------------------------------------------- table
# What confirms each rule's diagnostic is RULES.md's "runtime confirmation" column,
# quoted beside each judge.
CHECKS: dict[str, Judge] = {
    # every gradient this call returned is None
    "TAP101": _loss_outside_tape,
    # the tape instance served exactly one call
    "TAP102": _unnecessary_persistent,
    # the tape object is still alive after the step it served ended
    "TAP103": _not_released,
    # the call ran while its tape was recording
    "TAP104": _gradient_inside_tape,
    # RuntimeError: A non-persistent GradientTape can only be used to compute one set of gradients
    "TAP105": _tape_reused,
    # op count recorded on the tape from unwatched inputs
    "TAP106": _unrelated_work,
    # the tape served no call and recorded N ops
    "TAP107": _unused_tape,
    # the gradient for that source is None
    "TAP201": _unwatched_source,
    # all gradients None
    "TAP202": _tapes_without_watch,
    # some gradients None
    "TAP203": _some_none,
    # the ValueError was raised
    "TAP204": _watch_keras_variables,
    # a NumPy conversion of a tensor ran while the tape recorded, and the target's gradient is None
    "TAP301": _numpy_in_path,
    # the target's gradient is None
    "TAP302": _op_in_path,
    # the call ran with training unset
    "TAP303": _missing_training_flag,
    # model.losses was non-empty and the target did not depend on it
    "TAP304": _regularization_ignored,
    # a None gradient reached the apply call
    "TAP401": _unfiltered_apply,
    # the apply call's variables differ from the gradient call's sources
    "TAP402": _variable_mismatch,
    # the transform raised on a None gradient
    "TAP403": _unsafe_transform,
    # the ValueError was raised, or the variable set differed from the one the optimizer
    # was built with
    "TAP404": _optimizer_variables_changed,
    # experimental_get_tracing_count() grew after the first call
    "TAP501": _retracing,
    # the constructor ran more than once / the error was raised
    "TAP502": _state_in_step,
    # the side effect ran once while the function was called N times
    "TAP503": _frozen_at_trace,
}
