"""The tape model's data: scopes, definitions, tapes and the calls made on them.

`builder.py` fills these in one pass over a module; the query modules (`recording`,
`dataflow`, `lifecycle`, `gradients`) answer the rules' questions from them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

from tapelint.semantic.project_model.names import ImportTable
from tapelint.semantic.project_model.summaries import HandedBack, ProjectIndex

# The comment line a notebook's program has in place of a Python cell that was left out
# because it does not parse (a syntax error, an exercise blank, a Python 2 cell): what it
# does with the names of the other cells is not known.
UNREAD_CELL = "# tapelint: cell not read"


class Tri(Enum):
    """A three-valued answer: rules report only on a definite YES."""

    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


class DefKind(Enum):
    ASSIGN = "assign"  # name = value
    UNPACK = "unpack"  # a, b = value   (index into the value in Def.unpack_index)
    AUG = "aug"  # name += value
    FOR = "for"  # for name in value
    COMP = "comp"  # comprehension target
    WITH = "with"  # with value as name
    PARAM = "param"
    IMPORT = "import"
    DEFINITION = "definition"  # def / class
    OTHER = "other"  # except-as, match captures, walrus in odd places, global writes


class FrameKind(Enum):
    TAPE = "tape"  # inside the `with` block that enters a tape
    STOP = "stop"  # inside `with tape.stop_recording():`
    LOOP = "loop"  # for / while body
    COMPREHENSION = "comprehension"


@dataclass(frozen=True, eq=False)
class Frame:
    kind: FrameKind
    node: cst.CSTNode
    tape: TapeInstance | None = None


Context = tuple[Frame, ...]


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode  # Module, FunctionDef, Lambda or ClassDef
    parent: Scope | None
    # Runs as a traced graph: decorated with `tf.function`, or a Keras `train_step` /
    # `test_step` / `predict_step` override (Keras compiles these unless `run_eagerly=True`).
    # Python objects such as tapes then live only while the function is traced.
    is_compiled: bool = False
    # For a function: whether some path runs off the end of its body (returning None).
    falls_off_end: bool = True

    @property
    def is_module(self) -> bool:
        return isinstance(self.node, cst.Module)


@dataclass(eq=False)
class Def:
    name: str
    kind: DefKind
    target: cst.CSTNode  # the bound Name node (or the statement for params/imports)
    stmt: cst.CSTNode  # the statement that binds it
    value: cst.BaseExpression | None  # what is bound (for ASSIGN/AUG/UNPACK/FOR/WITH)
    ctx: Context
    order: int
    scope: Scope
    unpack_index: tuple[int, ...] = ()
    tape: TapeInstance | None = None  # set when the name is bound to a tape

    def bound_value(self) -> cst.BaseExpression | None:
        """What a plain assignment binds the name to: the value, or for unpacking a literal
        tuple (`student, teacher = make_net(), make_net()`) the element at the name's place;
        None for any other binding."""
        if self.kind is DefKind.ASSIGN:
            return self.value
        if self.kind is not DefKind.UNPACK or not self.unpack_index:
            return None
        value = self.value
        for index in self.unpack_index:
            if not isinstance(value, (cst.Tuple, cst.List)) or index >= len(value.elements):
                return None
            element = value.elements[index]
            if isinstance(element, cst.StarredElement):
                return None
            value = element.value
        return value

    def annotation(self) -> cst.BaseExpression | None:
        """A parameter's annotation (`model: keras.Model`), as written."""
        function = self.stmt
        if self.kind is not DefKind.PARAM or not isinstance(
            function, (cst.FunctionDef, cst.Lambda)
        ):
            return None
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name is self.target and param.annotation is not None:
                return param.annotation.annotation
        return None


@dataclass(eq=False)
class Use:
    node: cst.Name | cst.Attribute  # an attribute when it is a tracked one (`self.tape`)
    defs: frozenset[Def]
    ctx: Context
    order: int
    scope: Scope
    stmt: cst.CSTNode
    # How the name is used when it holds a tape: a method name ("gradient"), "with", "del",
    # or None for anything else (passed, returned, stored: the tape escapes).
    tape_role: str | None = None


@dataclass(frozen=True)
class HandedTape:
    """What a call hands back: the tape that `helper` (its qualified name) creates and
    returns as part `fact.part` of its value, with what the helper's summary says of it."""

    helper: str
    fact: HandedBack


@dataclass(eq=False)
class TapeInstance:
    """One `tf.GradientTape(...)` construction site, or a call that hands back a tape a
    helper created (`out, tape = self._forward(x)`: then `ctor` is that call, and
    `handed_back` says where the tape comes from)."""

    ctor: cst.Call
    scope: Scope
    ctx: Context
    order: int
    stmt: cst.CSTNode
    persistent: Tri
    persistent_arg: cst.Arg | None
    watch_accessed_variables: Tri
    name: str | None = None  # the local name it is bound to, if any
    # Each `with` block that enters the tape, with the traversal order of its first and last
    # event: a definition ordered before every block was computed before the tape recorded.
    blocks: dict[cst.With, tuple[int, int]] = field(default_factory=dict)
    # Most gradient/jacobian/batch_jacobian calls this tape can answer on one path (capped at 2).
    max_calls: int = 0
    # Set for a tape a helper handed back: what it recorded there is not seen here, so a
    # question about its recording (what ran inside its blocks, what it watched) is unknown.
    handed_back: HandedTape | None = None


@dataclass(eq=False)
class TapeCall:
    """A method call on a known tape: gradient, jacobian, batch_jacobian, watch, ..."""

    node: cst.Call
    method: str
    tape: TapeInstance
    ctx: Context
    order: int
    stmt: cst.CSTNode
    scope: Scope
    # For gradient-like calls: the most calls this tape had answered on some path once this
    # one returned (1 = first call on every path, 2 = a repeat on some path).
    nth: int = 0

    GRADIENT_METHODS = frozenset({"gradient", "jacobian", "batch_jacobian"})

    @property
    def is_gradient(self) -> bool:
        return self.method in self.GRADIENT_METHODS


@dataclass(eq=False)
class ApplyCall:
    """`optimizer.apply_gradients(...)` or `optimizer.apply(...)`."""

    node: cst.Call
    method: str
    scope: Scope
    stmt: cst.CSTNode


@dataclass(eq=False)
class NumpyCall:
    """A conversion of a value to NumPy (`np.*`, `.numpy()`, `float()`, `tf.py_function`...)."""

    node: cst.Call
    description: str  # how it is spelled, for messages
    operands: tuple[cst.BaseExpression, ...]
    ctx: Context
    scope: Scope
    stmt: cst.CSTNode
    # False when the call only steers control flow (an `if` test, a comparison operand).
    feeds_value: bool = True
    # For `tf.py_function`, the Python function it runs: py_function is differentiable when
    # that function uses TensorFlow ops, so it only leaves TensorFlow if the function does.
    function: cst.BaseExpression | None = None


@dataclass(eq=False)
class CallSite:
    """Any call the walk met, with where it runs. The rules about compiled steps ask about
    calls that are not tape calls: `tf.function(...)`, constructors, step functions."""

    node: cst.Call
    qualified: str | None  # the callee's canonical imported name, if it has one
    ctx: Context
    scope: Scope
    stmt: cst.CSTNode


@dataclass(eq=False)
class NoneCheck:
    """`x is None`, `x is not None`, `x == None`, `None in x` and the like."""

    subject: cst.Name
    scope: Scope


@dataclass(eq=False)
class FileModel:
    module: cst.Module
    imports: ImportTable
    scopes: list[Scope]
    tapes: list[TapeInstance]
    tape_calls: list[TapeCall]
    apply_calls: list[ApplyCall]
    numpy_calls: list[NumpyCall]
    none_checks: list[NoneCheck]
    defs_by_stmt: dict[cst.CSTNode, list[Def]]
    uses_by_node: dict[cst.CSTNode, Use]
    # statement -> (owning compound statement or scope node, the block it sits in, its index)
    stmt_parent: dict[cst.CSTNode, tuple[cst.CSTNode, tuple[cst.CSTNode, ...], int]]
    scope_defs: dict[Scope, dict[str, list[Def]]]
    # expression or small statement -> the statement the walk was in when it met it
    stmt_of: dict[cst.CSTNode, cst.CSTNode]
    # The file's whole text: the parsed module may leave out definitions that cannot matter,
    # and a few questions (is this attribute used anywhere else?) need all of it.
    source_text: str = ""
    is_notebook: bool = False
    is_test_file: bool = False  # named like a test module, or in a test directory
    # Whether test code gets the test policy (`test_code.is_test_code`): off when the
    # configuration replaced the default per-file-ignores (`per-file-ignores = {}`).
    tests_relaxed: bool = True
    # The module's dotted name in its project (`__main__` for a script's or notebook's own
    # code that nothing imports), and whether it is a package's `__init__`.
    module_name: str = "__main__"
    is_package: bool = False
    # The project's summaries with this module's own (set by the engine before the rules
    # run; None: nothing outside a function is known, as when a module is summarised).
    index: ProjectIndex | None = None
    path: str = ""  # the file as reported (set by the engine)
    calls: list[CallSite] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Indexes, so that rules asking per tape or per scope stay linear in the file's size.
        self._calls_by_node = {call.node: call for call in self.tape_calls}
        self._calls_by_tape: dict[TapeInstance, list[TapeCall]] = {}
        for call in self.tape_calls:
            self._calls_by_tape.setdefault(call.tape, []).append(call)
        self._uses_by_tape: dict[TapeInstance, list[Use]] = {}
        for use in self.uses_by_node.values():
            for tape in {d.tape for d in use.defs if d.tape is not None}:
                self._uses_by_tape.setdefault(tape, []).append(use)
        for uses in self._uses_by_tape.values():
            uses.sort(key=lambda u: u.order)
        self._numpy_by_scope: dict[Scope, list[NumpyCall]] = {}
        for numpy_call in self.numpy_calls:
            self._numpy_by_scope.setdefault(numpy_call.scope, []).append(numpy_call)
        self._calls_by_stmt: dict[cst.CSTNode, list[CallSite]] | None = None  # on first use
        self._none_checks_by_scope: dict[Scope, list[NoneCheck]] = {}
        for check in self.none_checks:
            self._none_checks_by_scope.setdefault(check.scope, []).append(check)

    def text_tree(self) -> ast.Module | None:
        """The whole file's text parsed with Python's `ast` (the parsed module may leave
        out definitions that cannot matter, and a few questions need all of them), once
        per file; None when it does not parse (a notebook's IPython lines)."""
        if not hasattr(self, "_text_tree"):
            try:
                self._text_tree: ast.Module | None = ast.parse(self.source_text)
            except (SyntaxError, ValueError):
                self._text_tree = None
        return self._text_tree

    def parsed_text(self) -> str:
        """The code of the parsed module (the file's text less what was cut before the
        parse): the text the parser was given when whoever parsed it says so, else
        generated once per model. Questions about names mentioned outside the parsed code
        ask it per name, and a notebook's code is all at its module's level."""
        if not hasattr(self, "_parsed_text"):
            self._parsed_text = self.module.code
        return self._parsed_text

    def set_parsed_text(self, text: str) -> None:
        """The text `module` was parsed from (libcst's code of it is that text, exactly)."""
        self._parsed_text = text

    def set_text_tree(self, tree: ast.Module) -> None:
        """The whole text's `ast`, when whoever parsed the file has it already."""
        self._text_tree = tree

    def calls_in(self, stmt: cst.CSTNode) -> list[CallSite]:
        """The calls a statement makes itself, in the order the walk met them (inner calls
        first): a compound statement's header, not its body; not the bodies of nested
        definitions and lambdas, whose calls belong to their own statements."""
        if self._calls_by_stmt is None:
            self._calls_by_stmt = {}
            for site in self.calls:
                self._calls_by_stmt.setdefault(site.stmt, []).append(site)
        return self._calls_by_stmt.get(stmt, [])

    def tape_call_at(self, node: cst.Call) -> TapeCall | None:
        return self._calls_by_node.get(node)

    @property
    def gradient_calls(self) -> list[TapeCall]:
        return [c for c in self.tape_calls if c.is_gradient]

    def calls_on(self, tape: TapeInstance) -> list[TapeCall]:
        return self._calls_by_tape.get(tape, [])

    def defs_of(self, name: cst.CSTNode) -> frozenset[Def]:
        use = self.uses_by_node.get(name)
        return use.defs if use is not None else frozenset()

    def uses_of_tape(self, tape: TapeInstance) -> list[Use]:
        """Every load of a name that may hold `tape`, in traversal (source) order."""
        return self._uses_by_tape.get(tape, [])

    def numpy_calls_in(self, scope: Scope) -> list[NumpyCall]:
        return self._numpy_by_scope.get(scope, [])

    def none_checks_in(self, scope: Scope) -> list[NoneCheck]:
        return self._none_checks_by_scope.get(scope, [])

    def statement_path(self, node: cst.CSTNode) -> list[cst.CSTNode] | None:
        """The statements that hold `node`, from one of the module's body down to the
        innermost (`node` itself if it is a statement), each in a block of the one before;
        None for a node the walk never met."""
        path: list[cst.CSTNode] = []
        current: cst.CSTNode | None = node
        while current is not None:
            parent = self.stmt_parent.get(current)
            if parent is None:
                current = self.stmt_of.get(current)
                continue
            path.append(current)
            if parent[0] is self.module:
                return path[::-1]
            current = parent[0]
        return None

    def written_before(self, stmt: cst.CSTNode, other: cst.CSTNode) -> bool:
        """Whether statement `stmt` is written before statement `other` in one block of
        statements they share, neither inside the other (`stmt` in an `if` before a `with`:
        yes; the two branches of one `if`: no). In a loop this is the order of the code,
        which the walk's traversal order is not: loop bodies are walked twice."""
        first, second = self.statement_path(stmt), self.statement_path(other)
        if not first or not second:
            return False
        for a, b in zip(first, second, strict=False):
            if a is not b:
                _, block_a, index_a = self.stmt_parent[a]
                _, block_b, index_b = self.stmt_parent[b]
                return block_a is block_b and index_a < index_b
        return False


def is_recording(ctx: Context, tape: TapeInstance) -> bool:
    """Whether `tape` records at a point with this context (inside its block, not stopped)."""
    recording = False
    for frame in ctx:
        if frame.tape is tape:
            recording = frame.kind is FrameKind.TAPE
    return recording
