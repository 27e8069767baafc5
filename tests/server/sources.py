"""Sources several server tests use (besides those of tests.cli_helpers)."""

from __future__ import annotations

from tests.cli_helpers import NOT_RELEASED, PERSISTENT_ONCE, UNFILTERED

# Two safe fixes (TAP102 in the function, TAP103 in the module's loop) and an unsafe one (TAP401).
TWO_SAFE_ONE_UNSAFE = "\n\n".join(
    [
        PERSISTENT_ONCE,
        NOT_RELEASED.replace("import tensorflow as tf\n", ""),
        UNFILTERED.replace("import tensorflow as tf\n", ""),
    ]
)
