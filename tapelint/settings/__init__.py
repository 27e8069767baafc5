"""With which settings? `[tool.tapelint]`, rule selectors, path globs, and the default
policies for code that is not the user's own training code.

- `config`: the settings of a run, read from `pyproject.toml` or `tapelint.toml`.
- `resolution`: which settings check each file (its closest configuration).
- `bounded_read`: reading a config file or a cache entry without hanging or filling memory.
- `selection`: which rules a selector (`TAP1`, `loss-outside-tape`, `ALL`) stands for.
- `globs`: path patterns (`exclude`, `per-file-ignores`), matched as ruff matches them.
- `policies`: one module per default policy (test code, vendored framework trees, stale
  copies, lab notebooks, exercise cells).
"""
