"""What a rule is: identity, documentation, and a `check` that queries the tape model."""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from tapelint.findings.diagnostics import Applicability, Severity
from tapelint.semantic import FileModel, TapeInstance
from tapelint.semantic.project_model.summaries import Site

# The documentation site (mkdocs.yml's `site_url`, with no version path so that `mkdocs serve`
# serves the same `rules/CODE/` addresses at http://127.0.0.1:8000/). Each rule's page there is
# generated from the rule's docstring at build time (docs/gen_pages.py), so the page a link
# opens says what `tapelint rule CODE` prints. SARIF's `helpUri`, JSON's `url` and the language
# server's `codeDescription` link to it. The site is not published yet: TAPELINT_DOCS_URL
# points the links at a copy you serve or host (CONTRIBUTING.md, "The documentation site").
DOCS_URL = os.environ.get("TAPELINT_DOCS_URL", "https://tapelint.readthedocs.io/").rstrip("/") + "/"


@dataclass(frozen=True)
class NodeEdit:
    """A source change expressed on the tree; the engine turns it into a text edit.

    `replace`: replace `node`'s text with `text`.
    `insert_after` / `insert_before`: add the lines of `text` after / before statement
    `node`, each indented like the statement.
    """

    kind: str
    node: cst.CSTNode
    text: str


@dataclass(frozen=True)
class FixIntent:
    title: str
    applicability: Applicability
    edits: tuple[NodeEdit, ...]


@dataclass(frozen=True)
class Finding:
    node: cst.CSTNode
    # `problem; advice`: what is wrong, then what to do (`tapelint.linter.messages` splits them).
    message: str
    fix: FixIntent | None = None
    # Places in this or other files the finding rests on (from the project's summaries).
    related: tuple[Site, ...] = ()
    # A part of a rule still in preview: a shape the rule has learnt but whose first-look
    # precision is not measured yet. The engine reports it only in preview mode
    # (`--preview`, `preview = true`), so a default rule can grow without its new findings
    # reaching users before they are shown to be right.
    preview: bool = False


class Rule:
    """Subclasses set the class attributes and implement `check`; the docstring is the
    rule's documentation (What it does / Why is this bad? / Example / Use instead)."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    preview: ClassVar[bool] = False
    # Some findings come with a fix (`tapelint rules` says so; tests/test_cli_formats.py
    # checks it against the fixes the rule gives on the fixtures).
    fixable: ClassVar[bool] = False
    # The file must contain one of these strings for the rule to have anything to say;
    # files (and top-level definitions) without them are never parsed for this rule.
    triggers: ClassVar[tuple[str, ...]] = ("GradientTape",)
    # Reported by the engine itself (files that cannot be read or parsed), not by `check`.
    engine_reported: ClassVar[bool] = False

    def check(self, model: FileModel) -> Iterator[Finding]:
        raise NotImplementedError

    def findings(self, model: FileModel) -> Iterator[Finding]:
        """What `check` finds, one finding per node: an op that several questions lead to
        (it lies on the path of two gradient calls) is reported once, by its first finding."""
        reported: set[cst.CSTNode] = set()
        for finding in self.check(model):
            if finding.node not in reported:
                reported.add(finding.node)
                yield finding

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def docs_url(cls) -> str:
        """The rule's page on the documentation site."""
        return f"{DOCS_URL}rules/{cls.code}/"

    @classmethod
    def summary(cls) -> str:
        """The first sentence of the documentation's "What it does" section."""
        _, _, rest = cls.documentation().partition("## What it does")
        paragraph = " ".join(rest.strip().split("\n\n", 1)[0].split())
        return re.split(r"(?<=\.)\s", paragraph, maxsplit=1)[0]


def source_of(model: FileModel, node: cst.CSTNode, limit: int = 48) -> str:
    """The code of a small node for a message, shortened to one line of at most `limit`."""
    text = " ".join(model.module.code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tape_label(tape: TapeInstance, unnamed: str = "the tape") -> str:
    """How a message names a tape: the name it is bound to, or `unnamed` for one that has
    none (`with tf.GradientTape():` inside a helper, `self.tapes[0]`). Messages that spell
    a call on the tape (`tape.gradient`) pass "tape"."""
    return tape.name or unnamed
