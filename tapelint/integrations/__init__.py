"""What do other tools see of tapelint?

- `flake8_plugin`: the flake8 plugin (entry point `TAP`).
"""
