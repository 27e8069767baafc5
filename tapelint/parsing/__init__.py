"""How does text become trees, fast? The slicer that cuts what no rule needs before the
parse, the parse kept across edits, and positions.

- `slicer`: the part of a module the rules need (what mentions a trigger), with its line
  map; literals and the syntax problems that stop a parse.
- `incremental`: re-parsing an edited text by reusing the unchanged statements.
- `positions`: the positions of the nodes of a parse, kept across edits.
"""
