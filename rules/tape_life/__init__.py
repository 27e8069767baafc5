"""A tape's life (TAP1xx): what is recorded, when a tape is asked, reused, released, and what
it costs. Each rule module holds its wording; the decisions only these rules ask for are the
private modules beside them.

- `loss_outside_tape`: TAP101; `unnecessary_persistent_tape`: TAP102;
  `persistent_tape_not_released`: TAP103; `gradient_inside_tape`: TAP104;
  `non_persistent_tape_reused`: TAP105; `unrelated_work_in_tape`: TAP106;
  `unused_tape`: TAP107.
- `_recording`: was a gradient target computed while its tape recorded? (TAP101)
- `_lifecycle`: how a tape is used, whether it escapes, whether it is released, counting
  the calls of the callers a tape is handed back to. (TAP102, TAP103, TAP104, TAP106)
- `_higher_order`: is a gradient taken inside its own block, differentiated again, and what
  does the call cost there? (TAP104)
- `_reuse`: which call asks a spent non-persistent tape a second time? (TAP104, TAP105)
- `_tape_handoffs`: which calls hand a tape to a helper that always asks it for gradients?
  (TAP104, TAP105)
- `_unrelated`: which work in a block depends on nothing the tape watches? (TAP106)
- `_unused`: which tapes record their block for nothing, never asked for a gradient nor
  handed on? (TAP107)
"""
