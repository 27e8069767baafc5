"""One module's tape model: the single walk over a parsed module and the data it builds
(scopes, definitions, tapes, tape calls, call sites), with the small syntactic questions
everything else asks.

- `children`: a node's children read from its fields, in libcst's order (libcst's own
  `children` rebuilds the node to find them).
- `expressions`: small syntactic questions (names an expression reads, arguments, blocks,
  is a node inside another).
- `model`: the model's data (`FileModel`, `Def`, `Use`, `TapeInstance`, `HandedTape`,
  `TapeCall`, `CallSite`, `Tri`) and its indexes (calls on a tape, calls a statement
  makes).
- `state`: the bindings carried along one path while the model is built.
- `conversions`: which calls convert a value to NumPy, leaving TensorFlow (asked by
  `builder`, which records them as NumPy calls).
- `builder`: the one walk that builds the `FileModel` (scopes, definitions, uses, tapes,
  tape calls, apply calls, NumPy calls, None checks, every call site).
- `class_facts`: the module's classes (bases, what their bodies bind) and attribute stores,
  from its whole text (the parse may have left out methods that name no trigger).
- `ast_statements`: the whole file's `ast` statements that the model's nodes stand for
  (a statement's own lines, for questions the cut-down libcst tree cannot answer).
- `call_starts`: where each call of the model starts in the whole file's text.
- `test_code`: is a file or a function part of a test suite?
"""
