"""How is a notebook linted? Its cells as one program, its fixes written back into the JSON,
and the files its cells read or run.

- `notebook`: a notebook's cells as one program, its diagnostics per cell, its fixes.
- `cell_files`: the files a cell loads or runs (`%run`, `%load`, `exec(open(...))`).
- `program_files`: a program file a cell runs, checked as part of the notebook.
"""
