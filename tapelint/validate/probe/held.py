"""What a persistent tape kept alive after its last use (TAP102/TAP103's cost): measured
when the tape object is released (`release` events).

A persistent tape keeps the tensors its recorded operations need for gradients until the
tape object itself goes. For the first tape of each creation site the probe holds the
tape's inner recording (`GradientTape._tape`) a moment longer than the tape object; once
the tape object has been released it lists the live eager tensors, lets the recording go,
and adds up the tensors that died with it: exactly those that only the tape kept alive (a
buffer shared by several tensor objects counts once, and only when all of them died).
Listing every live object takes tens of milliseconds, hence one tape per site; how long and
for how many optimizer steps each tape outlived its last gradient call is known for all.

The listing never runs inside a weak-reference callback (the garbage collector may be in
the middle of a collection there): released tapes wait in `pending` for the probe's next
tape event (a tape created, entered or left, a gradient call), the program's end, or the
validator stopping it. Until then that one tape's tensors stay in memory: the price of
measuring them, paid once per site.
"""

from __future__ import annotations

import gc
import time
import weakref
from typing import Any

from . import schema
from .recorder import Recorder


class Held:
    def __init__(self, recorder: Recorder, eager_tensor_type: type) -> None:
        self.recorder = recorder
        self.eager_tensor_type = eager_tensor_type
        self.sites_measured: set[tuple[str, int]] = set()
        self.pending: list[tuple[Any, list]] = []  # (tape info, [its inner recording])
        recorder.before_stop.append(self.measure_pending)

    def keep(self, info: Any, tape: Any, site: tuple[str, int] | None) -> None:
        """Hold `tape`'s inner recording when no tape from `site` has been measured yet."""
        if site is None or site in self.sites_measured or info.inner is not None:
            return
        inner = getattr(tape, "_tape", None)
        if inner is not None:
            self.sites_measured.add(site)
            info.inner = inner

    def released(self, info: Any) -> None:
        """The tape object is gone (called from its weak-reference callback)."""
        info.released_at = time.perf_counter()
        info.released_step = self.recorder.step
        if info.inner is None:
            self._emit(info, None)
        else:
            self.pending.append((info, [info.inner]))
            info.inner = None

    def measure_pending(self) -> None:
        while self.pending:
            info, holder = self.pending.pop()
            try:
                freed = self._freed_by_clearing(holder)
            except Exception as error:
                self.recorder.probe_error(error)
                holder.clear()
                freed = None
            self._emit(info, freed)

    def still_alive(self, info: Any) -> None:
        """At the program's end: the tape was never released."""
        info.released_at = time.perf_counter()
        info.released_step = self.recorder.step
        info.inner = None
        self._emit(info, None, at_end=True)

    def _freed_by_clearing(self, holder: list) -> int:
        """Bytes of the eager tensors that die when `holder`, which has the last reference
        to a tape's inner recording, is cleared."""
        buffers: dict[object, tuple[int, list[weakref.ref]]] = {}
        for obj in gc.get_objects():
            if issubclass(type(obj), self.eager_tensor_type):
                key, size = _buffer(obj)
                if key is not None:
                    buffers.setdefault(key, (size, []))[1].append(weakref.ref(obj))
        obj = None
        holder.clear()  # the recording and what only it held are freed here
        return sum(size for size, refs in buffers.values() if all(r() is None for r in refs))

    def _emit(self, info: Any, freed: int | None, *, at_end: bool = False) -> None:
        if info.last_use is None:
            return
        self.recorder.emit(
            schema.RELEASE,
            tape=info.serial,
            seconds=round(info.released_at - info.last_use, 6),
            steps=info.released_step - info.last_step,
            bytes=freed,
            at_end=at_end,
        )


def _buffer(tensor: Any) -> tuple[object, int]:
    """A key for the memory a tensor uses, and its size in bytes; (None, 0) for tensors
    whose size means nothing here (resource handles, variants, strings)."""
    try:
        dtype = tensor.dtype
        if dtype.name in ("resource", "variant", "string"):
            return None, 0
        size = int(tensor.shape.num_elements()) * dtype.size
        if "CPU" not in tensor.device:  # reading it would copy it to the host
            return ("tensor", id(tensor)), size
        array = tensor._numpy()  # a view of the tensor's own buffer
        return array.__array_interface__["data"][0], size
    except Exception:
        return None, 0
