"""JUnit XML, the test report that CI servers (Jenkins, GitLab, Azure Pipelines, CircleCI)
show as failed tests.

One `testsuite` per file with findings, named by its path; one `testcase` per finding, named
by its code and position (`TAP101 at line 8, column 12`; in a notebook `TAP101 at cell 4,
line 2, column 9`), its `classname` the path; its `failure` has the message as `message`,
the code as `type`, and the `text` format's line as text. A run with no findings is one
passing test case (`no findings`), since some CI servers fail a job whose report has no
tests. The report is valid against the JUnit schema Jenkins' xUnit plugin validates with
(tests/data/junit-10.xsd). Written with the standard library's ElementTree, which escapes
the XML; characters XML cannot hold at all (most control characters) become U+FFFD.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from itertools import groupby

from tapelint.findings.diagnostics import Diagnostic
from tapelint.output.text import line

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render(diagnostics: Sequence[Diagnostic]) -> str:
    count = str(len(diagnostics))
    suites = ElementTree.Element(
        "testsuites", name="tapelint", tests=count, failures=count, errors="0"
    )
    for path, group in groupby(diagnostics, key=lambda d: d.path):
        found = list(group)
        number = str(len(found))
        suite = ElementTree.SubElement(
            suites, "testsuite", name=_xml(path), tests=number, failures=number, errors="0"
        )
        suite.set("file", _xml(path))
        for diagnostic in found:
            case = ElementTree.SubElement(
                suite, "testcase", name=_case_name(diagnostic), classname=_xml(path)
            )
            failure = ElementTree.SubElement(
                case, "failure", message=_xml(diagnostic.message), type=diagnostic.code
            )
            failure.text = _xml(line(diagnostic))
    if not diagnostics:
        suites.set("tests", "1")
        suite = ElementTree.SubElement(
            suites, "testsuite", name="tapelint", tests="1", failures="0", errors="0"
        )
        ElementTree.SubElement(suite, "testcase", name="no findings", classname="tapelint")
    ElementTree.indent(suites)
    text = ElementTree.tostring(suites, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{text}\n'


def _case_name(diagnostic: Diagnostic) -> str:
    start = diagnostic.start
    cell = f"cell {diagnostic.cell}, " if diagnostic.cell is not None else ""
    return f"{diagnostic.code} at {cell}line {start.line}, column {start.column}"


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
