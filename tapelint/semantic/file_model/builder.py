"""One pass over a module that builds the tape model (`FileModel`).

Each scope (module, function, lambda, class body) is walked statement by statement with an
abstract state: the definitions that reach each name, and for each tape how many gradient
calls it has answered so far on the current path. Branches are walked separately and
joined; loop bodies are walked twice so that values and counts carried by the back edge are
seen. Nested scopes are walked after their parent: a closure sees what reached its
definition plus what its function binds later; a module-level function or a method sees every
definition of the enclosing scopes (it may run at any time).

Tapes stored in attributes (`self.tape = tf.GradientTape()`) are followed like names: such a
dotted name is tracked from the first assignment of a tape to it.

A tape a helper hands back (`out, tape = self._forward(x)`) is a tape of the caller too,
when the builder is told which calls hand one back (`handed_back`, from the helpers'
summaries): the name bound to that part of the call's value holds a `TapeInstance` whose
`ctor` is the call, made afresh each time the call runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import libcst as cst

from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.conversions import numpy_conversion
from tapelint.semantic.file_model.expressions import (
    call_argument,
    child_blocks,
    decorator_callee,
    is_none,
    statements,
)
from tapelint.semantic.file_model.model import (
    ApplyCall,
    CallSite,
    Context,
    Def,
    DefKind,
    FileModel,
    Frame,
    FrameKind,
    HandedTape,
    NoneCheck,
    NumpyCall,
    Scope,
    TapeCall,
    TapeInstance,
    Tri,
    Use,
)
from tapelint.semantic.file_model.state import State, join
from tapelint.semantic.project_model.names import (
    ImportTable,
    ProjectBinding,
    dotted_name,
    is_gradient_tape,
    is_tf_function,
)
from tapelint.semantic.project_model.summaries import WHOLE

_MAX_LOOP_DEPTH_FOR_SECOND_PASS = 3
_KERAS_STEPS = frozenset({"train_step", "test_step", "predict_step"})


def _literal_bool(expr: cst.BaseExpression) -> Tri:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return Tri.YES if expr.value == "True" else Tri.NO
    return Tri.UNKNOWN


class ModelBuilder:
    def __init__(
        self,
        module: cst.Module,
        *,
        source_text: str,
        is_notebook: bool,
        is_test_file: bool,
        imports: ImportTable | None = None,
        handed_back: Mapping[cst.Call, Mapping[str, HandedTape]] | None = None,
    ) -> None:
        self.module = module
        self.source_text = source_text
        self.is_notebook = is_notebook
        self.is_test_file = is_test_file
        self.imports = imports if imports is not None else ImportTable()
        self.scopes: list[Scope] = []
        self.tapes: list[TapeInstance] = []
        self.tape_calls: dict[cst.Call, TapeCall] = {}
        self.apply_calls: dict[cst.Call, ApplyCall] = {}
        self.numpy_calls: dict[cst.Call, NumpyCall] = {}
        self.none_checks: dict[cst.Name, NoneCheck] = {}
        self.calls: dict[cst.Call, CallSite] = {}
        self.defs_by_stmt: dict[cst.CSTNode, list[Def]] = {}
        self.uses_by_node: dict[cst.CSTNode, Use] = {}  # by its Name or tracked Attribute
        self.stmt_parent: dict[cst.CSTNode, tuple[cst.CSTNode, tuple[cst.CSTNode, ...], int]] = {}
        self.stmt_of: dict[cst.CSTNode, cst.CSTNode] = {}
        self._defs: dict[tuple[int, str], Def] = {}
        self._scope_defs: dict[Scope, dict[str, list[Def]]] = {}
        self._ctor_tapes: dict[cst.Call, TapeInstance] = {}
        # call -> part of its value -> the tape it hands back, and the instances made of them
        self._handed_back = handed_back or {}
        self._handed_tapes: dict[tuple[cst.Call, str], TapeInstance] = {}
        self._tracked_attributes: set[str] = set()  # dotted names that held a tape
        self._order = 0
        # walking state
        self.scope: Scope
        self.state: State | None = None
        self.ctx: Context = ()
        self.stmt: cst.CSTNode  # the statement being walked: each walk sets it before reading
        self.feeds_value = True
        self.loop_stack: list[tuple[list[State], list[State]]] = []
        self.loop_depth = 0
        self.pending: list[tuple[Scope, cst.CSTNode]] = []
        # nested scope node -> (its scope, the state reaching its definition, traversal order)
        self._definition_points: dict[cst.CSTNode, tuple[Scope, State | None, int]] = {}
        self._visible_names: dict[Scope, dict[str, frozenset[Def]]] = {}

    # ------------------------------------------------------------------ entry point
    def build(self) -> FileModel:
        self._collect_imports(self.module.body)
        self.imports.bind_star_tensorflow()
        module_scope = self._new_scope(self.module, None)
        self._walk_scope(module_scope, self.module.body, State())
        # Parents are walked before their nested scopes, so every definition of an enclosing
        # scope is known when a nested scope starts.
        index = 0
        while index < len(self.pending):
            scope, node = self.pending[index]
            self._walk_nested(scope, node, self._closure_state(scope))
            index += 1
        return FileModel(
            module=self.module,
            imports=self.imports,
            scopes=self.scopes,
            tapes=self.tapes,
            tape_calls=list(self.tape_calls.values()),
            apply_calls=list(self.apply_calls.values()),
            numpy_calls=list(self.numpy_calls.values()),
            none_checks=list(self.none_checks.values()),
            defs_by_stmt=self.defs_by_stmt,
            uses_by_node=self.uses_by_node,
            stmt_parent=self.stmt_parent,
            stmt_of=self.stmt_of,
            scope_defs=self._scope_defs,
            source_text=self.source_text,
            is_notebook=self.is_notebook,
            is_test_file=self.is_test_file,
            calls=list(self.calls.values()),
        )

    def _collect_imports(self, body: Sequence[cst.CSTNode]) -> None:
        """Every import anywhere in the module, flow-insensitively (statements only)."""
        for stmt in body:
            if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in stmt.body:
                    if isinstance(small, cst.Import):
                        self.imports.add_import(small)
                    elif isinstance(small, cst.ImportFrom):
                        self.imports.add_import_from(small)
            else:
                for block in child_blocks(stmt):
                    self._collect_imports(block)

    # ------------------------------------------------------------------ scopes
    def _new_scope(self, node: cst.CSTNode, parent: Scope | None) -> Scope:
        scope = Scope(node=node, parent=parent)
        self.scopes.append(scope)
        self._scope_defs[scope] = {}
        return scope

    def _walk_scope(self, scope: Scope, body: Sequence[cst.CSTNode], initial: State) -> None:
        self.scope, self.state, self.ctx = scope, initial, ()
        self.loop_stack, self.loop_depth = [], 0
        self._block(body, scope.node)

    def _defer(self, node: cst.CSTNode) -> None:
        """Walk `node`'s scope once its parent is done. A definition walked again (in a loop's
        second pass) keeps its scope and joins what reaches it."""
        inside_function = isinstance(self.scope.node, (cst.FunctionDef, cst.Lambda))
        seen = self._definition_points.get(node)
        if seen is not None:
            if inside_function:
                self._definition_points[node] = (seen[0], join(seen[1], self.state), seen[2])
            return
        scope = self._new_scope(node, self.scope)
        # Only closures need the state at their definition (see `_closure_state`).
        reaching = self.state.copy() if inside_function and self.state else None
        self._definition_points[node] = (scope, reaching, self._order)
        self.pending.append((scope, node))

    def _closure_state(self, scope: Scope) -> State:
        """The enclosing scopes' names as a nested scope sees them when it runs.

        Inside a function, that is what reached its definition plus whatever the enclosing
        function binds after it (the closure may run later): a name rebound before the
        definition (`tape` of an earlier tape) is not confused with its later value. A
        module-level function or a method may run any time: every definition of the
        enclosing non-class scopes is visible.
        """
        _, reaching, defined_at = self._definition_points[scope.node]
        parent = scope.parent
        if parent is not None and isinstance(parent.node, (cst.FunctionDef, cst.Lambda)):
            later: dict[str, frozenset[Def]] = {}
            for name, defs in self._scope_defs[parent].items():
                after = frozenset(d for d in defs if d.order > defined_at)
                if after:
                    later[name] = after
            if reaching is None:
                return State(outer=later)
            return State(outer=_ClosureNames(reaching, later))
        return State(outer=self._all_names_visible_from(parent))

    def _all_names_visible_from(self, scope: Scope | None) -> dict[str, frozenset[Def]]:
        """Every definition of `scope` and its enclosing non-class scopes, computed once per
        scope (a module with thousands of functions shares one mapping)."""
        while scope is not None and isinstance(scope.node, cst.ClassDef):
            scope = scope.parent
        if scope is None:
            return {}
        cached = self._visible_names.get(scope)
        if cached is None:
            cached = dict(self._all_names_visible_from(scope.parent))
            for name, defs in self._scope_defs[scope].items():
                cached[name] = frozenset(defs)
            self._visible_names[scope] = cached
        return cached

    def _walk_nested(self, scope: Scope, node: cst.CSTNode, initial: State) -> None:
        self.scope, self.state, self.ctx = scope, initial, ()
        self.loop_stack, self.loop_depth = [], 0
        self.stmt = node
        if isinstance(node, cst.FunctionDef):
            scope.is_compiled = self._is_tf_function(node) or self._is_keras_step(node, scope)
            self._bind_params(node.params, node)
            self._block(statements(node.body), node)
            scope.falls_off_end = self.state is not None
        elif isinstance(node, cst.Lambda):
            self._bind_params(node.params, node)
            self._expr(node.body)
        elif isinstance(node, cst.ClassDef):
            self._block(statements(node.body), node)

    def _is_tf_function(self, node: cst.FunctionDef) -> bool:
        return any(
            is_tf_function(self.imports.qualify(decorator_callee(d.decorator)))
            for d in node.decorators
        )

    def _is_keras_step(self, node: cst.FunctionDef, scope: Scope) -> bool:
        owner = scope.parent.node if scope.parent is not None else None
        if node.name.value not in _KERAS_STEPS or not isinstance(owner, cst.ClassDef):
            return False
        for base in owner.bases:
            qualified = self.imports.qualify(base.value) or ""
            dotted = dotted_name(base.value) or ""
            if qualified.startswith("keras.") or dotted.endswith("Model"):
                return True
        return False

    def _bind_params(self, params: cst.Parameters, owner: cst.CSTNode) -> None:
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                every.append(extra)
        for param in every:
            self._define(param.name, param.name.value, DefKind.PARAM, None, owner)

    # ------------------------------------------------------------------ definitions and uses
    def _tick(self) -> int:
        self._order += 1
        return self._order

    def _define(
        self,
        target: cst.CSTNode,
        name: str,
        kind: DefKind,
        value: cst.BaseExpression | None,
        stmt: cst.CSTNode,
        unpack_index: tuple[int, ...] = (),
    ) -> Def:
        key = (id(target), name)
        d = self._defs.get(key)
        if d is None:
            d = Def(
                name=name,
                kind=kind,
                target=target,
                stmt=stmt,
                value=value,
                ctx=self.ctx,
                order=self._tick(),
                scope=self.scope,
                unpack_index=unpack_index,
            )
            self._defs[key] = d
            self._scope_defs[self.scope].setdefault(name, []).append(d)
            self.defs_by_stmt.setdefault(stmt, []).append(d)
        if self.state is not None:
            self.state.bind(name, frozenset((d,)))
        return d

    def _use(self, node: cst.Name | cst.Attribute, key: str) -> Use:
        """Record a load of a name (or of a tracked attribute such as `self.tape`), by its
        dotted `key`, with the definitions reaching it."""
        defs = self.state.lookup(key) if self.state else frozenset()
        use = self.uses_by_node.get(node)
        if use is None:
            use = Use(node, defs, self.ctx, self._tick(), self.scope, self.stmt)
            self.uses_by_node[node] = use
        elif not defs <= use.defs:
            use.defs = use.defs | defs
        return use

    def _tape_of(self, use: Use) -> TapeInstance | None:
        tapes = {d.tape for d in use.defs}
        if len(tapes) == 1:
            return next(iter(tapes))
        return None

    def _bind(
        self,
        target: cst.BaseExpression,
        value: cst.BaseExpression | None,
        kind: DefKind,
        index: tuple[int, ...] = (),
    ) -> None:
        if isinstance(target, cst.Name):
            d = self._define(target, target.value, kind, value, self.stmt, index)
            tape = None
            if value is not None and not index:
                tape = self._tape_bound_by(value)
            if tape is None and self._handed_back:
                tape = self._tape_handed_back(value, kind, index)
            if tape is not None:
                d.tape = tape
                tape.name = tape.name or target.value
        elif isinstance(target, (cst.Tuple, cst.List)):
            for i, element in enumerate(target.elements):
                sub_kind = DefKind.UNPACK if kind in (DefKind.ASSIGN, DefKind.UNPACK) else kind
                if isinstance(element, cst.StarredElement):
                    self._bind(element.value, value, sub_kind, ())
                else:
                    self._bind(element.value, value, sub_kind, (*index, i))
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, value, kind, ())
        elif isinstance(target, cst.Attribute) and (
            key := self._tracked_attribute_key(target, value)
        ):
            self._expr(target.value)
            d = self._define(target, key, kind, value, self.stmt)
            tape = self._tape_bound_by(value) if value is not None else None
            if tape is not None:
                d.tape = tape
                tape.name = tape.name or key
        else:  # attribute or subscript: evaluates its object, binds no local name
            self._expr(target)

    def _tracked_attribute_key(
        self, target: cst.Attribute, value: cst.BaseExpression | None
    ) -> str | None:
        """Attributes are followed like names once a tape is stored in one (`self.tape`):
        the dotted name `target` binds when it is followed."""
        key = dotted_name(target)
        if key is None:
            return None
        if value is not None and self._tape_bound_by(value) is not None:
            self._tracked_attributes.add(key)
        return key if key in self._tracked_attributes else None

    def _tape_handed_back(
        self, value: cst.BaseExpression | None, kind: DefKind, index: tuple[int, ...]
    ) -> TapeInstance | None:
        """The tape a helper's call hands back as the part of its value a name binds
        (`tape = make()`, `out, tape = forward(x)`): a fresh tape each time the call runs."""
        if not isinstance(value, cst.Call):
            return None
        if kind is DefKind.ASSIGN and not index:
            part = WHOLE
        elif kind is DefKind.UNPACK and len(index) == 1:
            part = str(index[0])
        else:
            return None
        handed = self._handed_back.get(value, {}).get(part)
        if handed is None:
            return None
        tape = self._handed_tapes.get((value, part))
        if tape is None:
            persistent = {True: Tri.YES, False: Tri.NO, None: Tri.UNKNOWN}[handed.fact.persistent]
            tape = TapeInstance(
                ctor=value,
                scope=self.scope,
                ctx=self.ctx,
                order=self._tick(),
                stmt=self.stmt,
                persistent=persistent,
                persistent_arg=None,
                watch_accessed_variables=Tri.UNKNOWN,
                handed_back=handed,
            )
            self._handed_tapes[(value, part)] = tape
            self.tapes.append(tape)
        if self.state is not None:
            self.state.counts[tape] = 0
        return tape

    def _tape_bound_by(self, value: cst.BaseExpression) -> TapeInstance | None:
        if isinstance(value, cst.Call):
            return self._ctor_tapes.get(value)
        if isinstance(value, (cst.Name, cst.Attribute)):
            use = self.uses_by_node.get(value)
            return self._tape_of(use) if use else None
        return None

    # ------------------------------------------------------------------ statements
    def _block(self, body: Sequence[cst.CSTNode], owner: cst.CSTNode) -> None:
        statements = tuple(body)
        dead = False
        for index, stmt in enumerate(statements):
            self.stmt_parent[stmt] = (owner, statements, index)
            if self.state is None and not dead:
                dead, self.state = True, State()
            self._stmt(stmt)
        if dead:
            self.state = None

    def _stmt(self, stmt: cst.CSTNode) -> None:
        self.stmt = stmt
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in stmt.body:
                self._small(small)
            return
        handler = getattr(self, f"_stmt_{type(stmt).__name__}", None)
        if handler is not None:
            handler(stmt)
        else:
            for block in child_blocks(stmt):
                self._block(block, stmt)

    def _small(self, node: cst.BaseSmallStatement) -> None:
        self.stmt_of[node] = self.stmt
        if isinstance(node, cst.Expr):
            self._expr(node.value)
        elif isinstance(node, cst.Assign):
            self._expr(node.value)
            for target in node.targets:
                self._bind(target.target, node.value, DefKind.ASSIGN)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self._expr(node.value)
                self._bind(node.target, node.value, DefKind.ASSIGN)
        elif isinstance(node, cst.AugAssign):
            self._expr(node.target)
            self._expr(node.value)
            if isinstance(node.target, cst.Name):
                self._define(node.target, node.target.value, DefKind.AUG, node.value, self.stmt)
        elif isinstance(node, (cst.Return, cst.Raise)):
            for part in (node.value,) if isinstance(node, cst.Return) else (node.exc, node.cause):
                if isinstance(part, cst.From):
                    part = part.item
                if isinstance(part, cst.BaseExpression):
                    self._expr(part)
            self.state = None
        elif isinstance(node, cst.Assert):
            self._control_expr(node.test)
            if node.msg is not None:
                self._expr(node.msg)
        elif isinstance(node, cst.Del):
            self._del(node.target)
        elif isinstance(node, (cst.Break, cst.Continue)):
            if self.loop_stack and self.state is not None:
                breaks, continues = self.loop_stack[-1]
                (breaks if isinstance(node, cst.Break) else continues).append(self.state)
            self.state = None
        elif isinstance(node, cst.Import):
            for alias in node.names:
                bound: cst.BaseExpression = alias.asname.name if alias.asname else alias.name
                while isinstance(bound, cst.Attribute):
                    bound = bound.value
                if isinstance(bound, cst.Name):
                    self._define(bound, bound.value, DefKind.IMPORT, None, self.stmt)
        elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                bound = alias.asname.name if alias.asname else alias.name
                if isinstance(bound, cst.Name):
                    self._define(bound, bound.value, DefKind.IMPORT, None, self.stmt)

    def _del(self, target: cst.BaseExpression) -> None:
        key = dotted_name(target)
        if key is not None and (
            isinstance(target, cst.Name)
            or (isinstance(target, cst.Attribute) and key in self._tracked_attributes)
        ):
            if isinstance(target, cst.Attribute):
                self._expr(target.value)
            use = self._use(target, key)
            use.tape_role = "del"
            if self.state is not None:
                self.state.bind(key, frozenset())
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._del(element.value)
        else:
            self._expr(target)

    def _stmt_If(self, node: cst.If) -> None:
        self._control_expr(node.test)
        entry = self.state
        self.state = entry.copy() if entry else None
        self._block(statements(node.body), node)
        after_body = self.state
        self.state = entry.copy() if entry else None
        if isinstance(node.orelse, cst.If):
            self.stmt_parent[node.orelse] = (node, (node.orelse,), 0)
            self._stmt(node.orelse)
        elif isinstance(node.orelse, cst.Else):
            self._block(statements(node.orelse.body), node)
        self.state = join(after_body, self.state)

    def _stmt_For(self, node: cst.For) -> None:
        self._expr(node.iter)

        def bind() -> None:
            self._bind(node.target, node.iter, DefKind.FOR)

        self._loop(node, None, bind, statements(node.body), node.orelse)

    def _stmt_While(self, node: cst.While) -> None:
        forever = isinstance(node.test, cst.Name) and node.test.value == "True"
        self._loop(node, node.test, None, statements(node.body), node.orelse, forever=forever)

    def _loop(
        self,
        node: cst.CSTNode,
        test: cst.BaseExpression | None,
        bind: Callable[[], None] | None,
        body: Sequence[cst.CSTNode],
        orelse: cst.Else | None,
        *,
        forever: bool = False,
    ) -> None:
        head = self.state
        self.loop_stack.append(([], []))
        outer_ctx = self.ctx
        self.ctx = (*outer_ctx, Frame(FrameKind.LOOP, node))
        self.loop_depth += 1
        passes = 2 if self.loop_depth <= _MAX_LOOP_DEPTH_FOR_SECOND_PASS else 1
        for _ in range(passes):
            self.state = head.copy() if head else None
            self.stmt = node
            if test is not None:
                self._control_expr(test)
            if bind is not None:
                bind()
            self._block(body, node)
            continues = self.loop_stack[-1][1]
            head = join(head, self.state, *continues)
            continues.clear()
        self.loop_depth -= 1
        self.ctx = outer_ctx
        breaks = self.loop_stack.pop()[0]
        self.state = None if forever else head
        if orelse is not None and self.state is not None:
            self._block(statements(orelse.body), node)
        self.state = join(self.state, *breaks)

    def _stmt_Try(self, node: cst.Try | cst.TryStar) -> None:
        entry = self.state
        self.state = entry.copy() if entry else None
        self._block(statements(node.body), node)
        body_end = self.state
        handler_entry = join(entry, body_end)
        ends: list[State | None] = []
        for handler in node.handlers:
            self.state = handler_entry.copy() if handler_entry else None
            self.stmt = node
            if handler.type is not None:
                self._expr(handler.type)
            if handler.name is not None:
                self._bind(handler.name.name, None, DefKind.OTHER)
            self._block(statements(handler.body), node)
            ends.append(self.state)
        if node.orelse is not None:
            self.state = body_end
            self._block(statements(node.orelse.body), node)
            body_end = self.state
        normal = join(body_end, *ends)
        if node.finalbody is not None:
            self.state = join(normal, handler_entry)
            self._block(statements(node.finalbody.body), node)
            if normal is None:
                self.state = None
        else:
            self.state = normal

    _stmt_TryStar = _stmt_Try

    def _stmt_With(self, node: cst.With) -> None:
        frames: list[Frame] = []
        for item in node.items:
            expr = item.item
            self._expr(expr)
            frame = self._frame_entered_by(expr, node)
            if item.asname is not None:
                self._bind(item.asname.name, expr, DefKind.WITH)
            if frame is not None:
                frames.append(frame)
        self._restart_used_tapes(frames)
        outer_ctx = self.ctx
        self.ctx = (*outer_ctx, *frames)
        start = self._tick()
        self._block(statements(node.body), node)
        end = self._tick()
        self.ctx = outer_ctx
        for frame in frames:
            if frame.kind is FrameKind.TAPE and frame.tape is not None:
                frame.tape.blocks[node] = (start, end)

    def _restart_used_tapes(self, frames: list[Frame]) -> None:
        """Entering a non-persistent tape whose one gradient was taken records on a fresh
        tape (TensorFlow drops the used one at that call), so its call count starts over."""
        for frame in frames:
            tape = frame.tape
            if tape is None or frame.kind is not FrameKind.TAPE or tape.persistent is not Tri.NO:
                continue
            if self.state is not None:
                self.state.counts[tape] = 0

    def _frame_entered_by(self, expr: cst.BaseExpression, node: cst.With) -> Frame | None:
        tape: TapeInstance | None = None
        if isinstance(expr, cst.Call):
            tape = self._ctor_tapes.get(expr)
            call = self.tape_calls.get(expr)
            if tape is None and call is not None and call.method == "stop_recording":
                return Frame(FrameKind.STOP, node, call.tape)
        elif isinstance(expr, (cst.Name, cst.Attribute)):
            use = self.uses_by_node.get(expr)
            if use is not None:
                tape = self._tape_of(use)
                if tape is not None:
                    use.tape_role = "with"
        if tape is None:
            return None
        return Frame(FrameKind.TAPE, node, tape)

    def _stmt_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            self._expr(decorator.decorator)
        self._param_defaults(node.params)
        self._define(node.name, node.name.value, DefKind.DEFINITION, None, node)
        self._defer(node)

    def _stmt_ClassDef(self, node: cst.ClassDef) -> None:
        for decorator in node.decorators:
            self._expr(decorator.decorator)
        for arg in (*node.bases, *node.keywords):
            self._expr(arg.value)
        self._define(node.name, node.name.value, DefKind.DEFINITION, None, node)
        self._defer(node)

    def _param_defaults(self, params: cst.Parameters) -> None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                self._expr(param.default)

    def _stmt_Match(self, node: cst.Match) -> None:
        self._expr(node.subject)
        entry = self.state
        ends: list[State | None] = [entry]
        for case in node.cases:
            self.state = entry.copy() if entry else None
            self._block(statements(case.body), node)
            ends.append(self.state)
        self.state = join(*ends)

    # ------------------------------------------------------------------ expressions
    def _control_expr(self, node: cst.BaseExpression) -> None:
        """An expression whose value only steers control flow (a test)."""
        saved, self.feeds_value = self.feeds_value, False
        self._expr(node)
        self.feeds_value = saved

    def _expr(self, node: cst.CSTNode) -> None:
        self.stmt_of[node] = self.stmt
        if isinstance(node, cst.Name):
            self._use(node, node.value)
        elif isinstance(node, cst.Attribute):
            self._expr(node.value)
            if self._tracked_attributes:
                key = dotted_name(node)
                if key is not None and key in self._tracked_attributes:
                    self._use(node, key)
        elif isinstance(node, cst.Call):
            self._call(node)
        elif isinstance(node, (cst.BaseNumber, cst.SimpleString, cst.Ellipsis)):
            return
        elif isinstance(node, cst.BinaryOperation):
            self._expr(node.left)
            self._expr(node.right)
        elif isinstance(node, cst.Comparison):
            self._comparison(node)
        elif isinstance(node, cst.IfExp):
            self._control_expr(node.test)
            self._expr(node.body)
            self._expr(node.orelse)
        elif isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            self._comprehension(node)
        elif isinstance(node, cst.Lambda):
            self._param_defaults(node.params)
            self._defer(node)
        elif isinstance(node, cst.NamedExpr):
            self._expr(node.value)
            self._bind(node.target, node.value, DefKind.ASSIGN)
        elif isinstance(node, (cst.Arg, cst.Element, cst.StarredElement, cst.Index)):
            self._expr(node.value)
        elif isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            for element in node.elements:
                self._expr(element.value)
        elif isinstance(node, cst.Subscript):
            self._expr(node.value)
            # An index picks elements; no gradient flows through it (`losses[int(k)]`).
            saved, self.feeds_value = self.feeds_value, False
            for index in node.slice:
                self._expr(index.slice)
            self.feeds_value = saved
        elif isinstance(node, (cst.UnaryOperation, cst.Await)):
            self._expr(node.expression)
        elif isinstance(node, cst.BooleanOperation):
            self._expr(node.left)
            self._expr(node.right)
        else:
            for child in child_nodes(node):
                self._expr(child)

    def _comparison(self, node: cst.Comparison) -> None:
        saved, self.feeds_value = self.feeds_value, False
        self._expr(node.left)
        left = node.left
        for target in node.comparisons:
            self._expr(target.comparator)
            right = target.comparator
            op = target.operator
            subject: cst.BaseExpression | None = None
            if isinstance(op, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)):
                if is_none(right):
                    subject = left
                elif is_none(left):
                    subject = right
            elif isinstance(op, (cst.In, cst.NotIn)) and is_none(left):
                subject = right
            while isinstance(subject, cst.Subscript):
                subject = subject.value
            if isinstance(subject, cst.Name):
                self.none_checks.setdefault(subject, NoneCheck(subject, self.scope))
            left = right
        self.feeds_value = saved

    def _comprehension(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> None:
        outer_state, outer_ctx = self.state, self.ctx
        self.state = outer_state.copy() if outer_state else None
        self.ctx = (*outer_ctx, Frame(FrameKind.COMPREHENSION, node))
        clause: cst.CompFor | None = node.for_in
        first = True
        while clause is not None:
            if first:  # the first iterable is evaluated outside the comprehension
                saved_ctx, self.ctx = self.ctx, outer_ctx
                self._expr(clause.iter)
                self.ctx = saved_ctx
                first = False
            else:
                self._expr(clause.iter)
            self._bind(clause.target, clause.iter, DefKind.COMP)
            for condition in clause.ifs:
                self._control_expr(condition.test)
            clause = clause.inner_for_in
        if isinstance(node, cst.DictComp):
            self._expr(node.key)
            self._expr(node.value)
        else:
            self._expr(node.elt)
        self.state, self.ctx = outer_state, outer_ctx

    def _call(self, node: cst.Call) -> None:
        self._expr(node.func)
        for arg in node.args:
            self.stmt_of[arg] = self.stmt
            self._expr(arg.value)
        func = node.func
        qualified = self.imports.qualify(func)
        if node not in self.calls:
            self.calls[node] = CallSite(node, qualified, self.ctx, self.scope, self.stmt)
        if is_gradient_tape(qualified):
            self._tape_constructed(node)
            return
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            use = self.uses_by_node.get(func.value)
            if use is not None:
                tape = self._tape_of(use)
                if tape is not None:
                    use.tape_role = method
                    self._tape_method_called(node, method, tape)
                    return
            if method in ("apply_gradients", "apply"):
                self.apply_calls.setdefault(node, ApplyCall(node, method, self.scope, self.stmt))
                return
        self._maybe_numpy(node, qualified)

    def _tape_constructed(self, node: cst.Call) -> None:
        tape = self._ctor_tapes.get(node)
        if tape is None:
            persistent_arg = call_argument(node, 0, "persistent")
            watch_arg = call_argument(node, 1, "watch_accessed_variables")
            tape = TapeInstance(
                ctor=node,
                scope=self.scope,
                ctx=self.ctx,
                order=self._tick(),
                stmt=self.stmt,
                persistent=_literal_bool(persistent_arg.value) if persistent_arg else Tri.NO,
                persistent_arg=persistent_arg,
                watch_accessed_variables=(_literal_bool(watch_arg.value) if watch_arg else Tri.YES),
            )
            self._ctor_tapes[node] = tape
            self.tapes.append(tape)
        if self.state is not None:
            self.state.counts[tape] = 0

    def _tape_method_called(self, node: cst.Call, method: str, tape: TapeInstance) -> None:
        call = self.tape_calls.get(node)
        if call is None:
            call = TapeCall(node, method, tape, self.ctx, self._tick(), self.stmt, self.scope)
            self.tape_calls[node] = call
        if call.is_gradient and self.state is not None:
            repeats = any(f.kind is FrameKind.COMPREHENSION for f in self.ctx)
            count = min(2, self.state.counts.get(tape, 0) + (2 if repeats else 1))
            self.state.counts[tape] = count
            call.nth = max(call.nth, count)
            tape.max_calls = max(tape.max_calls, count)

    def _maybe_numpy(self, node: cst.Call, qualified: str | None) -> None:
        shadowed = isinstance(node.func, cst.Name) and bool(self.uses_by_node[node.func].defs)
        conversion = numpy_conversion(node, qualified, builtins_shadowed=shadowed)
        if conversion is not None and node not in self.numpy_calls:
            self.numpy_calls[node] = NumpyCall(
                node,
                conversion.description,
                conversion.operands,
                self.ctx,
                self.scope,
                self.stmt,
                self.feeds_value,
                conversion.function,
            )


class _ClosureNames(Mapping[str, frozenset[Def]]):
    """What a closure sees of its function: the definitions that reached the closure's own
    definition, joined with the ones the function makes after it."""

    def __init__(self, reaching: State, later: dict[str, frozenset[Def]]) -> None:
        self._reaching = reaching
        self._later = later

    def __getitem__(self, name: str) -> frozenset[Def]:
        found = self._reaching.lookup(name) | self._later.get(name, frozenset())
        if not found:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._reaching.local.keys() | self._reaching.outer.keys() | self._later.keys())

    def __len__(self) -> int:
        return sum(1 for _ in self)


def build_model(
    module: cst.Module,
    *,
    source_text: str | None = None,
    is_notebook: bool = False,
    is_test_file: bool = False,
    module_name: str = "__main__",
    is_package: bool = False,
    through_project: ProjectBinding | None = None,
    handed_back: Mapping[cst.Call, Mapping[str, HandedTape]] | None = None,
) -> FileModel:
    """The tape model of `module`; `source_text` is the whole file when `module` was parsed
    from a slice of it (defaults to the module's own code); `is_test_file` when its path
    says it is part of a test suite (see `test_code`); `through_project` says what the
    project's modules bind the names this one imports from them to (see `names`);
    `handed_back`, the calls of `module` that hand back a tape a helper created, by the part
    of their value that holds it (see `calls.handed_tapes`)."""
    text = source_text if source_text is not None else module.code
    imports = ImportTable(through_project, module=module_name, is_package=is_package)
    model = ModelBuilder(
        module,
        source_text=text,
        is_notebook=is_notebook,
        is_test_file=is_test_file,
        imports=imports,
        handed_back=handed_back,
    ).build()
    model.module_name = module_name
    model.is_package = is_package
    return model
