"""`tapelint validate`: confirm or refute static findings by running the user's program, and
measure what each confirmed one cost.

The parent side (this package, minus `probe/` and `site/`) never imports TensorFlow: it
checks the files the program will most likely run (`watched` names their diagnosed lines),
runs the program with `site/sitecustomize.py` on PYTHONPATH, which starts `probe/` inside
the program, and keeps TensorFlow's start-up log out of its output (`tflog`); the probe
watches the diagnosed lines for exceptions, patches TensorFlow and Keras when the program
imports them, and appends events to a file. Then `observations` reads the events, `checks`
holds each rule's runtime check (RULES.md's "runtime confirmation" column), `costs` what a
confirmed problem cost, `join` gives verdicts and finds what only the run showed, and
`report` prints them in `check`'s formats.
"""
