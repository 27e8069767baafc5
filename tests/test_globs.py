"""Exclude and per-file-ignore patterns: gitignore syntax, with a fast path for plain names."""

import pytest

from tapelint.settings.globs import Globs


@pytest.mark.parametrize(
    ("patterns", "path", "is_dir", "matches"),
    [
        (["build"], "build", True, True),
        (["build"], "src/build/gen.py", False, True),
        (["build"], "src/builder.py", False, False),
        (["gen.py"], "pkg/gen.py", False, True),
        (["src/generated/"], "src/generated/a.py", False, True),
        (["src/generated/"], "lib/src/generated/a.py", False, False),
        (["tests/**/*.py"], "tests/unit/test_a.py", False, True),
        (["./scripts"], "scripts/run.py", False, True),
        (["./scripts"], "tools/scripts/run.py", False, False),
        (["build", "!build"], "build/a.py", False, False),
        ([], "anything.py", False, False),
    ],
)
def test_patterns(patterns, path, is_dir, matches):
    assert Globs(patterns).match(path, is_dir=is_dir) is matches
