"""The project a file belongs to: module names, import resolution, and the index of
function summaries each file is checked with.

- `modules`: which module a file is, which file a module is (`ModuleLayout`);
- `imports`: the import bindings of a module that is not analysed;
- `views`: the index one file is checked with, built by following the names it asks;
- `workspace`: `Project`, the modules of one project and their summaries, loaded on
  demand; what a run, or a long-lived process such as the language server, keeps.
"""
