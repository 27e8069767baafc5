"""The project a file belongs to: module names, import resolution, and the index of
function summaries each file is checked with.

- `modules`: which module a file is, which file a module is (`ModuleLayout`);
- `imports`: the import bindings of a module that is not analysed;
- `views`: the index one file is checked with, built by following the names it asks;
- `builders`: which functions of another module build a Keras model, read on demand;
- `transformers`: what another module's function does to a gradient, read on demand.

The modules of one project, loaded on demand, are `tapelint.run.workspace.Project`.
"""
