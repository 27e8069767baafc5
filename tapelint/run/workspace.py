"""A project's modules as tapelint sees them, and the index each file is checked with.

`Project` holds each module file's first pass (its summary; for a module with no trigger,
its import bindings), loaded when a view first needs it: from the run's own results
(`add`), else by analysing the file (through the result cache when there is one). So
`tapelint check one_file.py` analyses exactly the modules its names lead to, and a run
over the whole project analyses nothing twice, except a module that gets TensorFlow or
Keras from another module of the project (`from mypkg import tf`): its first pass could
not know that, and it is analysed again with the project's import bindings for the
summary views hand out (`_bound_summary`).

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

from tapelint.linter.engine import (
    FileAnalysis,
    ModuleContext,
    decode_source,
    with_newline_line_ends,
)
from tapelint.parsing.incremental import IncrementalParser
from tapelint.parsing.positions import PositionMemory
from tapelint.project.builders import built_by, possible_builders
from tapelint.project.imports import (
    DOTTED_ASSIGNMENT,
    FROM_CLAUSE,
    IMPORT_STATEMENT,
    import_summary,
)
from tapelint.project.modules import ModuleLayout, ModuleName
from tapelint.project.transformers import transforms_of
from tapelint.project.views import View, build_view
from tapelint.run.cache import ResultCache
from tapelint.run.per_file import (
    FileTask,
    Linters,
    analyse_data,
    analysis_without_parsing,
    display_path,
    first_pass,
)
from tapelint.semantic.project_model.names import canonical, is_tensorflow_or_keras
from tapelint.semantic.project_model.summaries import (
    FunctionSummary,
    ModuleSummary,
    ProjectIndex,
    transforms_question,
)
from tapelint.settings.config import Settings
from tapelint.sources.discovery import SourceFile, SourceKind, is_excluded, read_source

# How many times a module is analysed again with the project's bindings, each with a view
# that follows the names the one before asked (as `runner.MAX_RECHECKS` for a check).
MAX_ROUNDS = 4

# An import statement (a superset: imports inside functions, or in strings, count too).
_IMPORT_STATEMENT = re.compile(IMPORT_STATEMENT.encode(), re.MULTILINE)
_WORD = re.compile(rb"\w+|\*")
_DOTTED_ASSIGNMENT = re.compile(DOTTED_ASSIGNMENT.encode(), re.MULTILINE)
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


def _bindable(names: frozenset[str]) -> frozenset[str]:
    """The names the project may bind to TensorFlow or Keras (those that are neither
    already, and are names, not questions of transforms): what a module's bindings, and so
    its summary, depend on."""
    return frozenset(
        name
        for name in names
        if transforms_question(name) is None and not is_tensorflow_or_keras(canonical(name))
    )


@dataclass
class _Module:
    name: ModuleName
    summary: ModuleSummary | None  # from the analysis; None: not analysed (no trigger)
    asked: frozenset[str] = frozenset()  # the names its analysis asked about
    imports: ModuleSummary | None = None  # the bindings, for a module with no summary
    imports_read: bool = False
    imported: frozenset[str] | None = None  # the words of its import statements
    stamp: tuple[int, int] | None = None  # (mtime, size) of the file it was read from
    bound: _Bound | None = None  # its summary with the project's bindings, once known
    # The top-level functions that may build Keras models (`builders.possible_builders`),
    # and those of them that its summary lacks, by name, with what each builds (None:
    # nothing known); see `tapelint.project.builders`.
    builder_names: frozenset[str] | None = None
    builders: dict[str, FunctionSummary | None] = field(default_factory=dict)
    # What the top-level names asked about in questions of transforms transform, by name,
    # when its summary does not say (see `tapelint.project.transformers`).
    transformers: dict[str, ModuleSummary | None] = field(default_factory=dict)


@dataclass(frozen=True)
class _Bound:
    """A module's summary with what the project binds the names it imports to, and the
    modules (as they were then) whose bindings it read."""

    summary: ModuleSummary
    used: tuple[tuple[str, _Module | None], ...]


class Project:
    """The modules of the project rooted at `settings.root`; paths are real paths
    (`os.path.realpath`). With `watch_disk`, a module read from disk is read again when
    its modification time or size changed (for a long-lived process); with `parser` and
    `positions`, the files checked in it (`context`) are parsed reusing the pieces of
    earlier parses, and their findings placed with the positions of earlier checks."""

    def __init__(
        self,
        settings: Settings,
        *,
        linters: Linters | None = None,
        cache: ResultCache | None = None,
        cwd: Path | None = None,
        watch_disk: bool = False,
        parser: IncrementalParser | None = None,
        positions: PositionMemory | None = None,
    ) -> None:
        self.settings = settings
        self.layout = ModuleLayout(str(settings.root), self._is_project_file)
        self._linters = linters or Linters(settings)
        self._cache = cache
        self._cwd = cwd or Path.cwd()
        self._watch_disk = watch_disk
        self._parser = parser
        self._positions = positions
        self._modules: dict[str, _Module | None] = {}  # None: cannot be read or analysed
        self._sources: dict[str, bytes] = {}
        self._used: dict[str, frozenset[str]] = {}
        self._read_files: dict[str, frozenset[str]] = {}  # checked file -> other files read
        self._excluded: dict[str, bool] = {}
        # (modules analysed for their summaries, modules parsed for their imports only)
        self.loaded = (0, 0)

    # ------------------------------------------------------------------ what files are
    def module_of(self, path: str, data: bytes | None = None) -> ModuleName:
        return self.layout.module_of(path, data)

    def add(self, path: str, module: ModuleName, analysis: FileAnalysis) -> None:
        """A file's first pass, done elsewhere (a run's worker) on its current content."""
        self._modules[path] = _Module(
            module, analysis.summary, analysis.asked, stamp=self._stamp(path)
        )

    # ------------------------------------------------------------------ for editors
    def set_source(self, path: str, data: bytes) -> None:
        """`data` stands for the file's content from now on (an open, unsaved document)."""
        if self._sources.get(path) != data:
            self._sources[path] = data
            self._forget(path)

    def drop_source(self, path: str) -> None:
        """The file's content is on disk again (the document was closed)."""
        if self._sources.pop(path, None) is not None:
            self._forget(path)

    def changed(self, path: str) -> None:
        """The file changed on disk (or was created or deleted)."""
        if os.path.basename(path) == "__init__.py":  # the names of a whole package change
            self._modules.clear()
        self._forget(path)
        self.layout.forget()

    def buffers(self) -> tuple[tuple[str, bytes], ...]:
        """The text that stands for files (`set_source`), for reading other files the way
        the project reads modules (a notebook's `%run` files)."""
        return tuple(sorted(self._sources.items()))

    def read_by(self, path: str, files: frozenset[str]) -> None:
        """The last check of file `path` read these other files (`FileAnalysis.files`)."""
        self._read_files[path] = files

    def _forget(self, path: str) -> None:
        """Module `path` is not what it was: its entry goes, and so does every summary
        made with the project's bindings (any of them may have read it)."""
        self._modules.pop(path, None)
        for entry in self._modules.values():
            if entry is not None:
                entry.bound = None

    def dependents(self, path: str) -> set[str]:
        """The checked files whose last view (`view`, `recheck_view`) held module `path`, or
        whose last check read it (`read_by`): what to check again when it changes. (A
        module that did not exist, or did not resolve, is in no view: when files are
        created, check the open files again.)"""
        used = {checked for checked, used in self._used.items() if path in used}
        return used | {checked for checked, read in self._read_files.items() if path in read}

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
        used = set(view.paths)
        for module_path in view.paths:
            entry = self._modules.get(module_path)
            if entry is not None and entry.bound is not None:
                used.update(read for read, _ in entry.bound.used)
        self._used[path] = frozenset(used)
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
            if alone.answers(name) != project.answers(name):
                return view
        return None

    def context(self, module: ModuleName, view: View | None) -> ModuleContext:
        """What a file of module `module` is checked in, with `view` (None: the library's
        index only)."""
        index = view.index if view else None
        return ModuleContext(module.name, module.is_package, index, self._parser, self._positions)

    # ------------------------------------------------------------------ loading
    def _load(
        self, path: str, wanted: str, transforms: bool = False
    ) -> tuple[str, ModuleSummary] | None:
        """`_load_first`, with an analysed module's summary made with what the project
        binds the names it imports to (`_bound_summary`), with the Keras builders among
        the module's functions that its summary lacks (`tapelint.project.builders`) that
        were asked for so far, `wanted` included, and with `transforms`, what `wanted`
        transforms, read for that question (`tapelint.project.transformers`: the first
        pass may have cut it out, or said only what it runs on each element)."""
        found = self._load_first(path, wanted)
        entry = self._modules.get(path)
        if found is None or entry is None:
            return found
        name, summary = found
        if entry.summary is not None:
            summary = self._bound_summary(path, entry)
        if wanted not in summary.functions and wanted not in entry.builders:
            entry.builders[wanted] = self._built_by(path, entry, wanted)
        built = {key: f for key, f in entry.builders.items() if f is not None}
        if transforms and wanted not in entry.transformers:
            entry.transformers[wanted] = self._transforms_of(path, entry, wanted)
        transformed = entry.transformers.get(wanted) if transforms else None
        if not built and transformed is None:
            return name, summary
        functions = {**built, **summary.functions}
        if transformed is None:
            return name, replace(summary, functions=functions)
        for key, function in transformed.functions.items():
            known = functions.get(key)
            functions[key] = replace(known, transforms=function.transforms) if known else function
        return name, replace(
            summary,
            functions=functions,
            bases={**transformed.bases, **summary.bases},
            classes={**transformed.classes, **summary.classes},
        )

    def _transforms_of(self, path: str, entry: _Module, wanted: str) -> ModuleSummary | None:
        """What the top-level function (or class) `wanted` of module `path` transforms (and,
        for a class, what its body binds and its bases); through the cache."""
        data = self._read(path)
        if data is None or len(data) > self.settings.max_file_size:
            return None
        display = display_path(Path(path), self._cwd)
        key = None
        if self._cache is not None:
            key = self._cache.transforms_key(data, entry.name.key, wanted, display)
            found, summary = self._cache.get_imports(key)
            if found:
                return summary
        try:
            text = with_newline_line_ends(decode_source(data))
        except (UnicodeDecodeError, SyntaxError, LookupError):
            return None
        self.loaded = (self.loaded[0] + 1, self.loaded[1])
        transformed = transforms_of(text, display, entry.name, wanted)
        if self._cache is not None and key is not None:
            self._cache.put_imports(key, transformed)
        return transformed

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

    def _load_first(
        self, path: str, wanted: str, transforms: bool = False
    ) -> tuple[str, ModuleSummary] | None:
        """Module file `path`'s name and summary, for a look-up of `wanted` in it. A
        module with no summary has its import bindings; when no import statement of it
        names `wanted` or imports `*`, and no line assigns it an imported name, they cannot
        bind it, and a blank summary says the same without a parse (checking TensorFlow's
        own sources, most names asked about are functions of modules that have no
        trigger). It answers no question of transforms (`transforms` is ignored: a view of
        import bindings follows names only)."""
        if path not in self._modules:
            self._modules[path] = self._analysed(path)
        entry = self._modules[path]
        if entry is not None and self._stale(path, entry):
            entry = self._modules[path] = self._analysed(path)
        if entry is None:
            return None
        if entry.summary is not None:
            return entry.name.name, entry.summary
        if not self._may_bind(path, entry, wanted):  # the same whatever was read before
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
        task = self._task(path, module)
        done, key = analysis_without_parsing(task, data, self._cache)
        if done is None:
            done = first_pass(task, data, self._cache, key)
            self.loaded = (self.loaded[0] + 1, self.loaded[1])
        if done.error is not None:
            return None
        analysis = done.analysis
        return _Module(module, analysis.summary, analysis.asked, stamp=self._stamp(path))

    def _task(self, path: str, module: ModuleName) -> FileTask:
        return FileTask(
            SourceFile(Path(path), SourceKind.PYTHON, path),
            display_path(Path(path), self._cwd),
            self._linters.for_file(Path(path)),
            module,
        )

    # ------------------------------------------------------------------ bound summaries
    def _bound_summary(self, path: str, entry: _Module) -> ModuleSummary:
        """The module's summary with what the project binds the names it imports to.

        The first pass knew no other module, so a module that gets `tf` from the project
        (`from mypkg import tf`) had no tape then, and its functions no facts. When the
        project makes TensorFlow or Keras of a name that pass asked about, the module is
        analysed again with a view of the project's import bindings (of first passes and
        imports: what a module binds does not depend on other modules' bindings, so this
        goes one level only), until the names it asks are all ones the view followed;
        else its first pass's summary is the one. Cached like a re-check."""
        assert entry.summary is not None
        bound = entry.bound
        if bound is not None and all(self._current(p, e) for p, e in bound.used):
            return bound.summary
        summary, names = entry.summary, entry.asked
        view = self._bindings_view(path, entry, names)
        index = view.index.with_module(summary) if view is not None else None
        if view is not None and index is not None and any(map(index.tensorflow_binding, names)):
            summary = self._analysed_with_bindings(path, entry, view) or summary
        used = view.paths if view is not None else frozenset()
        entry.bound = _Bound(summary, tuple((p, self._modules.get(p)) for p in sorted(used)))
        return summary

    def _bindings_view(self, path: str, entry: _Module, names: frozenset[str]) -> View | None:
        """The view of the project's import bindings that `names` lead to (None when none
        can be TensorFlow or Keras through the project: they are so already)."""
        wanted = _bindable(names)
        if not wanted:
            return None
        return build_view(
            wanted,
            roots=self.layout.roots_of(path, entry.name),
            own=entry.summary,
            layout=self.layout,
            load=self._load_first,
        )

    def _analysed_with_bindings(
        self, path: str, entry: _Module, view: View
    ) -> ModuleSummary | None:
        """The module's summary analysed with `view` (widened to every name the analysis
        asks); None when it cannot be had (an unreadable file, an engine bug: the first
        pass's then stands)."""
        data = self._read(path)
        assert entry.summary is not None
        if data is None:
            return None
        task = self._task(path, entry.name)
        key = None
        if self._cache is not None:
            first = self._cache.analysis_key(data, task.display, task.linter.codes, entry.name.key)
            key = self._cache.bound_key(first, self._digest(view, entry.summary, entry.asked))
            found = self._cache.get_bound(key)
            if found is not None:
                summary, asked, digest = found
                if not _bindable(asked) <= view.names:
                    view = self._bindings_view(path, entry, view.names | asked) or view
                if self._digest(view, entry.summary, asked) == digest:
                    return summary
        for _ in range(MAX_ROUNDS):
            context = ModuleContext(entry.name.name, entry.name.is_package, view.index)
            try:
                analysis = analyse_data(task, data, context)
            except Exception:  # an engine bug: the first pass's summary stands
                return None
            self.loaded = (self.loaded[0] + 1, self.loaded[1])
            if _bindable(analysis.asked) <= view.names:
                break
            view = self._bindings_view(path, entry, view.names | analysis.asked) or view
        if analysis.summary is None:
            return None
        if self._cache is not None and key is not None:
            digest = self._digest(view, entry.summary, analysis.asked)
            self._cache.put_bound(key, analysis.summary, analysis.asked, digest)
        return analysis.summary

    @staticmethod
    def _digest(view: View, summary: ModuleSummary, names: frozenset[str]) -> str:
        return view.index.with_module(summary).digest(names)

    def _current(self, path: str, entry: _Module | None) -> bool:
        """Whether `entry` is still what the project holds for module `path`."""
        return self._modules.get(path) is entry and (entry is None or not self._stale(path, entry))

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
        """Whether the module's import bindings may bind `wanted`: an import statement
        names it or imports `*`, or it is assigned an imported name (a superset)."""
        if entry.imported is None:
            words: set[str] = set()
            data = _LONE_CR.sub(b"\n", self._read(path) or b"")
            for statement in _import_statements(data):
                words.update(word.decode() for word in _WORD.findall(statement))
            words.update(
                assignment.group(1).decode()
                for assignment in _DOTTED_ASSIGNMENT.finditer(data)
                if assignment.group(2).decode() in words
            )
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
