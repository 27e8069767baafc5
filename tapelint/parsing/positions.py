"""Positions in the pruned modules of earlier checks, for the statements an edit left alone.

A reported node is placed by resolving libcst's positions in a module pruned to the
statements that lead to it (`engine._Locator`): that costs about a millisecond per path,
for every finding, at every check. With the language server's `IncrementalParser`, a
statement an edit did not touch is the same node object from one check to the next, and
so is every node in it; the pruned module made of the same path of nodes, with the same
default indentation and line end, has the same positions. Only where the path's innermost
statement starts in the file may have moved, and that comes from Python's `ast` at each
check. So the positions are kept by path (node identities: libcst nodes are immutable),
for the paths of the latest checks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange

# (the path's statements, the module's default indentation, its default line end)
PathKey = tuple[tuple[cst.CSTNode, ...], str, str]
# (the line where the innermost statement starts in its pruned module, the positions there)
PrunedPositions = tuple[int, Mapping[cst.CSTNode, CodeRange]]

DEFAULT_MAX_PATHS = 2_000


class PositionMemory:
    """The pruned positions of the paths of recent checks (least recently used go)."""

    def __init__(self, max_paths: int = DEFAULT_MAX_PATHS) -> None:
        self._max_paths = max_paths
        self._paths: OrderedDict[PathKey, PrunedPositions] = OrderedDict()

    def get(self, key: PathKey) -> PrunedPositions | None:
        found = self._paths.get(key)
        if found is not None:
            self._paths.move_to_end(key)
        return found

    def put(self, key: PathKey, positions: PrunedPositions) -> None:
        self._paths[key] = positions
        while len(self._paths) > self._max_paths:
            self._paths.popitem(last=False)
