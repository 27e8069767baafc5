"""What a tape watches (TAP2xx): sources it never watched, watching turned off, all
variables asked for, Keras variables watched by hand.

- `unwatched_source`: TAP201; `watch_accessed_variables_off`: TAP202;
  `gradient_wrt_all_variables`: TAP203; `watch_keras_variables`: TAP204.
- `_late_watch`: does the target depend on a source only through values computed from it
  before the tape watched it? (TAP201)
"""
