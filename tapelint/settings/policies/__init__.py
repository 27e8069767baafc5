"""Which code is not the user's own work, and what tapelint does with it: one owner per
policy.

- `test_code`: test files and the rules that stay quiet in test code.
- `vendored_frameworks`: a copy of TensorFlow's or Keras's source tree is skipped.
- `stale_copies`: an older copy of a file that is still there is skipped while walking.
- `lab_solutions`: a course lab notebook is checked with its solution's cells.
- `exercise_cells`: a notebook cell left for the student to fill in is not their code.
"""
