"""An MkDocs hook (mkdocs.yml's `hooks:`) that generates pages at build time.

Each rule's page, `rules/CODE.md`, is the rule's own documentation, the text
`tapelint rule CODE` prints, so the site cannot drift from the code; `rules/index.md` lists
them all. The pages are added to the navigation under "Rules", in code order. The URL of a
page is what `Rule.docs_url()` links to (SARIF's `helpUri`, the language server's
`codeDescription`). `changelog.md` is the repository's CHANGELOG.md, which stays at the top
of the repository where people and tools look for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from tapelint.findings.rule import Rule
from tapelint.linter.registry import all_rules

RULES_SECTION = "Rules"


def rule_page(rule: type[Rule]) -> str:
    """The Markdown page of one rule: its identity, then its documentation."""
    default = "preview: runs only when selected" if rule.preview else "on by default"
    return (
        f"# {rule.code} {rule.name}\n\n"
        f"**{rule.severity.value}**, {default}. "
        f"`tapelint rule {rule.code}` prints this page.\n\n"
        f"{rule.documentation()}\n"
    )


def rules_index() -> str:
    """The table of every rule, each linking to its page."""
    rows = [
        f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.severity.value} | "
        f"{'preview' if rule.preview else 'yes'} | {rule.summary()} |"
        for rule in all_rules()
    ]
    return (
        "# Rules\n\n"
        "Each page is the rule's own documentation, as `tapelint rule CODE` prints it. "
        "Codes are public API: they never change meaning and are never reused.\n\n"
        "| code | name | severity | on by default | what it does |\n"
        "|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Fill the navigation's "Rules" section with the index and one entry per rule."""
    for entry in config.nav or []:
        if isinstance(entry, dict) and RULES_SECTION in entry:
            entry[RULES_SECTION] = ["rules/index.md"] + [
                {f"{rule.code} {rule.name}": f"rules/{rule.code}.md"} for rule in all_rules()
            ]
            return config
    raise ValueError(f"mkdocs.yml's nav has no {RULES_SECTION!r} section for the rule pages")


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    changelog = Path(config.config_file_path).parent / "CHANGELOG.md"
    files.append(File.generated(config, "changelog.md", abs_src_path=str(changelog)))
    files.append(File.generated(config, "rules/index.md", content=rules_index()))
    for rule in all_rules():
        files.append(File.generated(config, f"rules/{rule.code}.md", content=rule_page(rule)))
    return files
