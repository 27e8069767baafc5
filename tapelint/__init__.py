"""tapelint: find misuse of TensorFlow's tf.GradientTape in training code."""

from pathlib import Path

# The rules live in the repository's top-level `rules/` and install as `tapelint.rules`.
# When this package is imported straight from a source checkout (`python3 -m tapelint` in the
# repository root, which puts the checkout first on sys.path), there is no `tapelint/rules/`
# beside this file: let `tapelint.rules` resolve to the checkout's `rules/` instead.
_here = Path(__file__).resolve().parent
if not (_here / "rules").is_dir() and (_here.parent / "rules" / "__init__.py").is_file():
    __path__.append(str(_here.parent))


# The one place the version is written besides pyproject.toml (a test holds them equal): read
# from here, `tapelint --version` need not import importlib.metadata, which alone took about
# as long as the rest of the command's start-up.
__version__ = "0.1.0"


def version() -> str:
    """tapelint's version."""
    return __version__
