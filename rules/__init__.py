"""tapelint's rules (installed as `tapelint.rules`), one package per family of codes, one
module per rule.

Each rule module defines one `Rule` subclass; `tapelint.linter.registry` finds them, so there
is no list to maintain here. A family's private modules (`_*.py`) hold the decisions that
only its rules ask for; the questions several families ask are in `tapelint.semantic`.

- `file_level`: TAP0xx, files that cannot be read or parsed.
- `tape_life`: TAP1xx, a tape's life: recorded, asked, reused, released, its cost.
- `watching`: TAP2xx, what a tape watches.
- `differentiable_path`: TAP3xx, what cuts or changes the path from sources to target.
- `updates`: TAP4xx, how gradients reach the variables.
- `compiled_steps`: TAP5xx, compiled steps traced again, state rebuilt per step.
"""
