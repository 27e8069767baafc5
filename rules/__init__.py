"""tapelint's rules, one module per rule (installed as `tapelint.rules`).

Each module defines one `Rule` subclass; `tapelint.linter.registry` finds them, so there is no
list to maintain here.
"""
