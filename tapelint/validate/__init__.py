"""`tapelint validate`: confirm or refute static findings by running the user's program.

The parent side (this package, minus `probe/` and `site/`) never imports TensorFlow: it
runs the program with `site/sitecustomize.py` on PYTHONPATH, which starts `probe/` inside
the program; the probe patches TensorFlow and Keras when the program imports them and
appends events to a file. Then `observations` reads the events, `checks` holds each rule's
runtime check (RULES.md's "runtime confirmation" column), `join` gives verdicts and finds
what only the run showed, and `report` prints them in `check`'s formats.
"""
