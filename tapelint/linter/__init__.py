"""Given a file's text and the rules selected, which diagnostics? The engine that builds a
file's model and asks the rules, the registry of rules, `noqa` comments, and fixes.

- `engine`: one text to diagnostics: slice, parse, model, rules, suppression.
- `registry`: the rules in `tapelint.rules`, by code or name.
- `suppression`: what `# noqa` and `# tapelint: noqa` comments silence.
- `fixer`: applying fixes: edit, re-lint, repeat, verify.
- `messages`: a diagnostic's message split into problem and advice.
- `notebooks`: a notebook linted as one program, with the files its cells read or run.
"""
