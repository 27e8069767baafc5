"""What a name is across the project: qualified names, what each module binds for
the modules importing it, and what functions do with gradients as plain data (summaries,
the library table) with the index that resolves them across modules and cells.

- `names`: import aliases; the canonical qualified name of an expression (a name imported
  from the project's modules is the TensorFlow or Keras name they bind it to, if any).
- `summaries`: what a function does with gradients (returns them raw, passes a parameter
  through, applies a parameter unfiltered, always asks a tape parameter for gradients,
  hands back a tape it created), as plain data, and the project index that resolves those
  facts across modules.
- `library`: the summaries of well-known functions of other packages, as data.
- `module_bindings`: what a module's top-level statements bind, for other modules that
  import from it (aliases, star imports, `try`/`except ImportError` alternatives,
  `__all__`).
"""
