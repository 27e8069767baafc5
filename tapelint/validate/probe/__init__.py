"""The child side of `tapelint validate`: instrumentation that runs inside the user's program.

`tapelint/validate/site/sitecustomize.py` loads this package by file path under the private
name `_tapelint_probe` before any user code runs, so it may import nothing from `tapelint`
(the program's interpreter need not have tapelint installed) and only the standard library
at start; TensorFlow and Keras are patched when the program itself imports them.
"""
