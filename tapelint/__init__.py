"""tapelint: find misuse of TensorFlow's tf.GradientTape. Never imports TensorFlow."""
