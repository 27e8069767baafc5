"""tapelint: find misuse of TensorFlow's tf.GradientTape in training code."""

from pathlib import Path

# The rules live in the repository's top-level `rules/` and install as `tapelint.rules`.
# When this package is imported straight from a source checkout (`python3 -m tapelint` in the
# repository root, which puts the checkout first on sys.path), there is no `tapelint/rules/`
# beside this file: let `tapelint.rules` resolve to the checkout's `rules/` instead.
_here = Path(__file__).resolve().parent
if not (_here / "rules").is_dir() and (_here.parent / "rules" / "__init__.py").is_file():
    __path__.append(str(_here.parent))


def version() -> str:
    """The installed distribution's version; `0+unknown` when imported from a source
    checkout that was never installed."""
    from importlib import metadata

    try:
        return metadata.version("tapelint")
    except metadata.PackageNotFoundError:
        return "0+unknown"
