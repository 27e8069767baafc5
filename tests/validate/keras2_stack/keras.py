"""`import keras` gives Keras 2 (`tf_keras`), as it did up to TensorFlow 2.15: with
`TF_USE_LEGACY_KERAS=1` for `tf.keras`, the runtime fixtures run on a Keras 2 stack
(tests/validate/test_runtime_fixtures.py puts this directory first on PYTHONPATH)."""

import sys

import tf_keras

sys.modules[__name__] = tf_keras
