"""How values flow inside a tape's block: what the tape watches, what derives from it, was
the target recorded, and does it keep a differentiable path to its sources.

- `watching`: is a source a plain tensor, did the tape watch it, what does a `watch` call
  watch? (TAP201, TAP202, TAP204)
- `dataflow`: which values derive from what a tape watches, and which NumPy calls lie on
  the way to the target? (TAP301, TAP303)
- `recording`: was a gradient target computed while its tape recorded? (TAP101)
- `differentiability`: does the target keep a differentiable path to its sources? (TAP302)
"""
