"""How values flow inside a tape's block: what the tape watches, what derives from it, and
does the target keep a differentiable path to its sources.

- `watching`: is a source a plain tensor, did the tape watch it, what does a `watch` call
  watch?
- `dataflow`: which values derive from what a tape watches, and which NumPy calls lie on
  the way to the target?
- `source_values`: is a gradient source one value (a variable made by `tf.Variable` or by
  a helper that only returns one, an attribute every assignment gives one)?
- `source_paths`: the other spellings of a gradient source (`parameters['W1']` for `W1`),
  and the functions and functional models it is handed to, renamed there.
- `container_writes`: what a name's list or dict receives without being rebound (`c[key] =
  v`, `c.append(v)`, `c.extend(vs)`), for value followers that read a container.
- `differentiability`: does the target keep a differentiable path to its sources?
"""
