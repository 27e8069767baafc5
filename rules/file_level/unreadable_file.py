from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Rule


class UnreadableFile(Rule):
    """## What it does
    Reports a file that cannot be read or decoded: no permission, bytes that are not UTF-8
    (and no coding cookie says otherwise), or a notebook that is not valid notebook JSON.

    ## Why is this bad?
    tapelint cannot check what it cannot read. The run goes on with the other files.

    Like TAP001, this applies to the files tapelint needs to read: a file whose raw bytes never
    mention a gradient tape is skipped before it is decoded (a UTF-16 file, for instance).

    ## Example
    A `train.py` saved as Latin-1 with a `é` in a comment and no `# -*- coding: latin-1 -*-`.

    Use instead:
    Save the file as UTF-8, or declare its encoding with a coding cookie on line 1 or 2.
    """

    code = "TAP002"
    name = "unreadable-file"
    severity = Severity.ERROR
    engine_reported = True
