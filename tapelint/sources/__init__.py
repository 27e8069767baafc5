"""Which files, and what Python does each one run? Discovery, and the input kinds read
before parsing: notebooks' cells, IPython syntax, Colab exports, percent-cell scripts.

- `discovery`: the files a run checks (paths, excludes, `.gitignore`, vendored trees).
- `ipython_input`: a notebook cell as the Python IPython runs (magics, shell escapes).
- `cell_magics`: the cell magics a notebook registers, and which run Python.
- `cell_language`: whether a cell is in another language (R, SQL, shell).
- `colab_exports`: a `.py` file exported from Colab, read as the notebook it was.
- `percent_cells`: a `# %%` script that runs as cells.
"""
