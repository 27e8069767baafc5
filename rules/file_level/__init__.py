"""File-level problems (TAP0xx): a file tapelint cannot read or parse.

- `syntax_error`: TAP001, a file that does not parse.
- `unreadable_file`: TAP002, a file that cannot be read or decoded.
"""
