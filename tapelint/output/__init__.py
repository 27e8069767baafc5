"""Output formats, one module per format; each renders diagnostics (already sorted) to text."""

from collections.abc import Callable, Sequence

from tapelint.diagnostics import Diagnostic
from tapelint.output import github, json, sarif, text

FORMATS: dict[str, Callable[[Sequence[Diagnostic]], str]] = {
    "text": text.render,
    "json": json.render,
    "sarif": sarif.render,
    "github": github.render,
}
