"""A module's facts for its callers: each function's summary, built from the questions
of the packages below, and which functions build Keras models.

- `function_summaries`: a module's summaries, from its tape model alone.
- `keras_builders`: which functions build a Keras model or layer, and what it holds, as a
  fact of their summaries for callers in other modules.
"""
