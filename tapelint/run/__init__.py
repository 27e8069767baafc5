"""How is a whole run scheduled? Discovery to report: the two passes over a project, one file
in a worker, processes, the result cache, and what a run writes back.

- `runner`: a whole run: first pass, project views, second passes, fixes, the report.
- `per_file`: one file in a worker: read, lint (or fix, or add `noqa`), cache.
- `parallel`: the worker processes, and what happens when one dies or hangs.
- `cache`: results kept per file content and settings between runs.
- `workspace`: `Project`, the modules of one project and their summaries, loaded on
  demand; what a run, or a long-lived process such as the language server, keeps.
- `add_noqa`: writing `# noqa` comments for what is found (`--add-noqa`).
"""
