"""A project's modules as tapelint sees them, and the index each file is checked with.

`Project` holds each module file's first pass (its summary; for a module with no trigger,
its import bindings), loaded when a view first needs it: from the run's own results
(`add`), else by analysing the file (through the result cache when there is one). So
`tapelint check one_file.py` analyses exactly the modules its names lead to, and a run
over the whole project analyses nothing twice.

It is also what a long-lived process (the language server) keeps between checks: hand it
the text of open documents (`set_source`), say which files changed on disk (`changed`),
ask for a file's `context` and check it with that, and ask which checked files used a
module (`dependents`) to know what to check again. Only the changed files are analysed
again; views are rebuilt from the summaries it holds, which costs no parse. Not thread
safe: use it from one thread.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from tapelint.analysis.summaries import FunctionSummary, ModuleSummary, ProjectIndex
from tapelint.cache import ResultCache
from tapelint.checking import (
    FileTask,
    Linters,
    analysis_without_parsing,
    display_path,
    first_pass,
)
from tapelint.config import Settings
from tapelint.engine import FileAnalysis, ModuleContext, decode_source, with_newline_line_ends
from tapelint.files import SourceFile, SourceKind, is_excluded, read_source
from tapelint.project.builders import built_by, possible_builders
from tapelint.project.imports import FROM_CLAUSE, IMPORT_STATEMENT, import_summary
from tapelint.project.modules import ModuleLayout, ModuleName
from tapelint.project.views import View, build_view

# An import statement (a superset: imports inside functions, or in strings, count too).
_IMPORT_STATEMENT = re.compile(IMPORT_STATEMENT.encode(), re.MULTILINE)
_WORD = re.compile(rb"\w+|\*")
_LONE_CR = re.compile(rb"\r(?!\n)")  # an old Mac line end
# What may stand before `import` on the line of an import statement.
_BEFORE_IMPORT = re.compile((r"[ \t]*" + FROM_CLAUSE).encode())


def _import_statements(data: bytes) -> Iterator[bytes]:
    """What `_IMPORT_STATEMENT.findall(data)` finds, from the occurrences of `import`: a
    pattern tried at every line start took 0.05 s over the modules that checking
    TensorFlow's sources reads for their imports, seven times this."""
    start = data.find(b"import")
    while start != -1:
        line = data.rfind(b"\n", 0, start) + 1
        before = _BEFORE_IMPORT.match(data, line)
        if before is not None and before.end() == start:
            statement = _IMPORT_STATEMENT.match(data, line)
            if statement is not None:
                yield statement.group()
        start = data.find(b"import", start + len(b"import"))


@dataclass
class _Module:
    name: ModuleName
    summary: ModuleSummary | None  # from the analysis; None: not analysed (no trigger)
    imports: ModuleSummary | None = None  # the bindings, for a module with no summary
    imports_read: bool = False
    imported: frozenset[str] | None = None  # the words of its import statements
    stamp: tuple[int, int] | None = None  # (mtime, size) of the file it was read from
    # The top-level functions that may build Keras models (`builders.possible_builders`),
    # and those
    # of them that its summary lacks, by name, with what each builds (None: nothing known);
    # see `tapelint.project.builders`.
    builder_names: frozenset[str] | None = None
    builders: dict[str, FunctionSummary | None] = field(default_factory=dict)


class Project:
    """The modules of the project rooted at `settings.root`; paths are real paths
    (`os.path.realpath`). With `watch_disk`, a module read from disk is read again when
    its modification time or size changed (for a long-lived process)."""

    def __init__(
        self,
        settings: Settings,
        *,
        linters: Linters | None = None,
        cache: ResultCache | None = None,
        cwd: Path | None = None,
        watch_disk: bool = False,
    ) -> None:
        self.settings = settings
        self.layout = ModuleLayout(str(settings.root), self._is_project_file)
        self._linters = linters or Linters(settings)
        self._cache = cache
        self._cwd = cwd or Path.cwd()
        self._watch_disk = watch_disk
        self._modules: dict[str, _Module | None] = {}  # None: cannot be read or analysed
        self._sources: dict[str, bytes] = {}
        self._used: dict[str, frozenset[str]] = {}
        self._excluded: dict[str, bool] = {}
        # (modules analysed for their summaries, modules parsed for their imports only)
        self.loaded = (0, 0)

    # ------------------------------------------------------------------ what files are
    def module_of(self, path: str, data: bytes | None = None) -> ModuleName:
        return self.layout.module_of(path, data)

    def add(self, path: str, module: ModuleName, analysis: FileAnalysis) -> None:
        """A file's first pass, done elsewhere (a run's worker) on its current content."""
        self._modules[path] = _Module(module, analysis.summary, stamp=self._stamp(path))

    # ------------------------------------------------------------------ for editors
    def set_source(self, path: str, data: bytes) -> None:
        """`data` stands for the file's content from now on (an open, unsaved document)."""
        if self._sources.get(path) != data:
            self._sources[path] = data
            self._modules.pop(path, None)

    def drop_source(self, path: str) -> None:
        """The file's content is on disk again (the document was closed)."""
        if self._sources.pop(path, None) is not None:
            self._modules.pop(path, None)

    def changed(self, path: str) -> None:
        """The file changed on disk (or was created or deleted)."""
        if os.path.basename(path) == "__init__.py":  # the names of a whole package change
            self._modules.clear()
        self._modules.pop(path, None)
        self.layout.forget()

    def dependents(self, path: str) -> set[str]:
        """The checked files whose last view (`view`, `recheck_view`) held module `path`:
        what to check again when it changes. (A module that did not exist, or did not
        resolve, is in no view: when files are created, check the open files again.)"""
        return {checked for checked, used in self._used.items() if path in used}

    # ------------------------------------------------------------------ indexes
    def view(
        self, path: str, module: ModuleName, summary: ModuleSummary | None, names: frozenset[str]
    ) -> View:
        """The index file `path` (module `module`, summary `summary`) is checked with,
        following `names`."""
        view = build_view(
            names,
            roots=self.layout.roots_of(path, module),
            own=summary,
            layout=self.layout,
            load=self._load,
        )
        self._used[path] = view.paths
        return view

    def recheck_view(self, path: str, module: ModuleName, analysis: FileAnalysis) -> View | None:
        """The view to check a file again with, or None when its first pass is final.

        The first pass looked up every name outside the module in an index with only the
        library table, and recorded each (`asked`). A check is a function of the answers
        to its lookups, so when the project's index answers every recorded name as that
        index did, the check with it takes the same path and asks nothing else: the
        first pass's result is the result with the project's index."""
        summary = analysis.summary
        if summary is None or not analysis.asked:
            self._used[path] = frozenset()
            return None
        view = self.view(path, module, summary, analysis.asked)
        alone = ProjectIndex().with_module(summary)
        project = view.index.with_module(summary)
        for name in sorted(analysis.asked):
            if (alone.resolve(name), alone.function(name)) != (
                project.resolve(name),
                project.function(name),
            ):
                return view
        return None

    def context(self, module: ModuleName, view: View | None) -> ModuleContext:
        """What a file of module `module` is checked in, with `view` (None: the library's
        index only)."""
        return ModuleContext(module.name, module.is_package, view.index if view else None)

    # ------------------------------------------------------------------ loading
    def _load(self, path: str, wanted: str) -> tuple[str, ModuleSummary] | None:
        """`_load_first`, with the Keras builders among the module's functions that its
        summary lacks (`tapelint.project.builders`) that were asked for so far, `wanted`
        included."""
        found = self._load_first(path, wanted)
        entry = self._modules.get(path)
        if found is None or entry is None:
            return found
        name, summary = found
        if wanted not in summary.functions and wanted not in entry.builders:
            entry.builders[wanted] = self._built_by(path, entry, wanted)
        built = {key: f for key, f in entry.builders.items() if f is not None}
        if not built:
            return found
        return name, replace(summary, functions={**built, **summary.functions})

    def _built_by(self, path: str, entry: _Module, wanted: str) -> FunctionSummary | None:
        """What the top-level function `wanted` of module `path` builds, when the module
        may define it as a builder (read once per module); through the cache."""
        if entry.builder_names is None:
            data = self._read(path)
            too_large = data is None or len(data) > self.settings.max_file_size
            entry.builder_names = possible_builders(data) if data and not too_large else frozenset()
        if wanted not in entry.builder_names:
            return None
        data = self._read(path)
        if data is None:
            return None
        key = None
        if self._cache is not None:
            key = self._cache.builder_key(data, entry.name.key, wanted)
            found, summary = self._cache.get_imports(key)
            if found:
                return summary.functions.get(wanted) if summary is not None else None
        try:
            text = with_newline_line_ends(decode_source(data))
        except (UnicodeDecodeError, SyntaxError, LookupError):
            return None
        self.loaded = (self.loaded[0] + 1, self.loaded[1])
        built = built_by(text, entry.name, wanted)
        if self._cache is not None and key is not None:
            stored = ModuleSummary(entry.name.name, {wanted: built}) if built else None
            self._cache.put_imports(key, stored)
        return built

    def _load_first(self, path: str, wanted: str) -> tuple[str, ModuleSummary] | None:
        """Module file `path`'s name and summary, for a look-up of `wanted` in it. A
        module with no summary has its import bindings; when no import statement of it
        names `wanted` or imports `*`, they cannot bind it, and a blank summary says the
        same without a parse (checking TensorFlow's own sources, most names asked about
        are functions of modules that have no trigger)."""
        if path not in self._modules:
            self._modules[path] = self._analysed(path)
        entry = self._modules[path]
        if entry is not None and self._stale(path, entry):
            entry = self._modules[path] = self._analysed(path)
        if entry is None:
            return None
        if entry.summary is not None:
            return entry.name.name, entry.summary
        if not entry.imports_read and not self._may_bind(path, entry, wanted):
            return entry.name.name, ModuleSummary(entry.name.name)
        if not entry.imports_read:
            entry.imports = self._imports(path, entry.name)
            entry.imports_read = True
        return (entry.name.name, entry.imports) if entry.imports is not None else None

    def _analysed(self, path: str) -> _Module | None:
        data = self._read(path)
        if data is None:
            return None
        module = self.layout.module_of(path, data)
        task = FileTask(
            SourceFile(Path(path), SourceKind.PYTHON, path),
            display_path(Path(path), self._cwd),
            self._linters.for_file(Path(path)),
            module,
        )
        done, key = analysis_without_parsing(task, data, self._cache)
        if done is None:
            done = first_pass(task, data, self._cache, key)
            self.loaded = (self.loaded[0] + 1, self.loaded[1])
        if done.error is not None:
            return None
        return _Module(module, done.analysis.summary, stamp=self._stamp(path))

    def _imports(self, path: str, module: ModuleName) -> ModuleSummary | None:
        data = self._read(path)
        if data is None or len(data) > self.settings.max_file_size:
            return None  # unknown, as a file too large to check is
        key = self._cache.imports_key(data, module.key) if self._cache is not None else None
        if self._cache is not None and key is not None:
            found, summary = self._cache.get_imports(key)
            if found:
                return summary
        self.loaded = (self.loaded[0], self.loaded[1] + 1)
        try:
            summary = import_summary(with_newline_line_ends(decode_source(data)), module)
        except (UnicodeDecodeError, SyntaxError, LookupError):
            summary = None
        if self._cache is not None and key is not None:
            self._cache.put_imports(key, summary)
        return summary

    def _may_bind(self, path: str, entry: _Module, wanted: str) -> bool:
        if entry.imported is None:
            words: set[str] = set()
            data = _LONE_CR.sub(b"\n", self._read(path) or b"")
            for statement in _import_statements(data):
                words.update(word.decode() for word in _WORD.findall(statement))
            entry.imported = frozenset(words)
        return wanted in entry.imported or "*" in entry.imported

    def _read(self, path: str) -> bytes | None:
        if path in self._sources:
            return self._sources[path]
        try:
            return read_source(Path(path))
        except OSError:
            return None

    def _stale(self, path: str, entry: _Module) -> bool:
        return self._watch_disk and path not in self._sources and entry.stamp != self._stamp(path)

    def _stamp(self, path: str) -> tuple[int, int] | None:
        if not self._watch_disk or path in self._sources:
            return None
        try:
            status = os.stat(path)
        except OSError:
            return None
        return status.st_mtime_ns, status.st_size

    def _is_project_file(self, path: str) -> bool:
        if path not in self._excluded:
            self._excluded[path] = is_excluded(
                Path(path), root=self.settings.root, exclude=self.settings.exclude_patterns
            )
        return not self._excluded[path]
