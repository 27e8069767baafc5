"""`--output-format sarif` (validated against the official SARIF 2.1.0 schema), `github`
workflow annotations, and `--statistics`."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from tapelint.findings.diagnostics import Diagnostic, Position, Severity
from tapelint.linter.registry import all_rules
from tapelint.output import github
from tests.cli_helpers import (
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE,
    UNFILTERED,
    run_cli,
    write,
)
from tests.fixture_markers import FIXTURES

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture
def mixed(project: Path) -> Path:
    """TAP101 at 8:12, TAP102 at 5:26 (safe fix), TAP103 at 4:5 (safe fix), TAP401 at 8:5
    (unsafe fix), a notebook with TAP101 in cell 4 at 2:9, and a TAP002 notebook."""
    write(project, "a_loss.py", LOSS_OUTSIDE)
    write(project, "b_persistent.py", PERSISTENT_ONCE)
    write(project, "c_release.py", NOT_RELEASED)
    write(project, "d_apply.py", UNFILTERED)
    shutil.copy(FIXTURES / "notebooks" / "flag_loss_in_next_cell.ipynb", project / "e_nb.ipynb")
    write(project, "f_broken.ipynb", '{"cells": "GradientTape"}')
    return project


def sarif(*args: str) -> dict:
    result = run_cli("check", "--output-format", "sarif", *args)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_sarif_is_valid_against_the_official_schema(mixed: Path) -> None:
    log = sarif()
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert len(log["runs"][0]["results"]) == 6


def test_the_schema_check_is_real(mixed: Path) -> None:
    """A log the schema must refuse is refused: the validation above can fail."""
    broken = copy.deepcopy(sarif())
    broken["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(SCHEMA).validate(broken)


def test_sarif_rules_describe_every_rule(mixed: Path) -> None:
    driver = sarif()["runs"][0]["tool"]["driver"]
    assert driver["name"] == "tapelint"
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [r.code for r in all_rules()]
    for descriptor, rule in zip(rules, all_rules(), strict=True):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary()
        assert descriptor["fullDescription"]["text"]
        assert "## Why is this bad?" in descriptor["help"]["markdown"]
        assert descriptor["defaultConfiguration"]["level"] == rule.severity.value
        # The rule's page on the documentation site (tests/test_docs_site.py builds it there).
        assert descriptor["helpUri"] == f"https://tapelint.readthedocs.io/rules/{rule.code}/"


def test_sarif_results_locations_and_fixes(mixed: Path) -> None:
    run = sarif()["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == mixed.resolve().as_uri() + "/"
    by_file = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r for r in run["results"]
    }
    assert sorted(by_file) == [
        "a_loss.py",
        "b_persistent.py",
        "c_release.py",
        "d_apply.py",
        "e_nb.ipynb",
        "f_broken.ipynb",
    ]
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    loss = by_file["a_loss.py"]
    assert (loss["ruleId"], loss["level"]) == ("TAP101", "error")
    region = loss["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (8, 12)
    assert "fixes" not in loss
    persistent = by_file["b_persistent.py"]
    assert persistent["level"] == "warning"
    [fix] = persistent["fixes"]
    assert "safe fix" in fix["description"]["text"]
    [replacement] = fix["artifactChanges"][0]["replacements"]
    assert replacement["deletedRegion"]["startLine"] == 5
    assert "unsafe fix" in by_file["d_apply.py"]["fixes"][0]["description"]["text"]
    notebook = by_file["e_nb.ipynb"]["locations"][0]["physicalLocation"]["region"]
    in_cell = notebook["properties"]
    assert (in_cell["cell"], in_cell["cellLine"], in_cell["cellColumn"]) == (4, 2, 9)
    # The line of the notebook's JSON text that holds that source line (see
    # tests/test_cli_sarif_notebooks.py for every notebook fixture).
    json_line = (mixed / "e_nb.ipynb").read_text().split("\n")[notebook["startLine"] - 1]
    assert json_line.strip().startswith('"grads = tape.gradient(loss, ')
    assert by_file["f_broken.ipynb"]["ruleId"] == "TAP002"


def test_sarif_of_a_clean_run_has_no_results_and_still_validates(project: Path) -> None:
    log = sarif()
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert log["runs"][0]["results"] == []


def test_sarif_uses_a_file_uri_for_paths_outside_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = write(tmp_path / "elsewhere", "train step.py", LOSS_OUTSIDE)
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    [result] = sarif(str(target))["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": target.as_uri()}
    assert "%20" in location["uri"]


def test_github_annotations(mixed: Path) -> None:
    result = run_cli("check", "--output-format", "github")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "::error file=a_loss.py,line=8,col=12,endLine=8,endColumn=58,title=TAP101::`loss` is"
    )
    assert lines[1].startswith("::warning file=b_persistent.py,line=5,col=26,")
    assert ",title=TAP102::" in lines[1]
    # A notebook's annotation is on the line and column of its JSON text that hold the code.
    notebook = re.match(
        r"::error file=e_nb\.ipynb,line=(\d+),col=(\d+),endLine=\d+,endColumn=\d+,"
        r"title=TAP101::cell 4, line 2, column 9: ",
        lines[4],
    )
    assert notebook, lines[4]
    json_line = (mixed / "e_nb.ipynb").read_text().split("\n")[int(notebook[1]) - 1]
    assert json_line[int(notebook[2]) - 1 :].startswith("tape.gradient(loss, ")
    assert lines[5].startswith("::error file=f_broken.ipynb,line=1,col=1,title=TAP002::")
    assert len(lines) == 6
    assert result.stderr == ""  # no summary line in a machine format


def test_github_names_only_the_file_of_a_notebook_position_it_cannot_place(project) -> None:
    notebook = FIXTURES / "notebooks" / "flag_loss_in_next_cell.ipynb"
    (project / "bom.ipynb").write_bytes(b"\xef\xbb\xbf" + notebook.read_bytes())
    [line] = run_cli("check", "--output-format", "github").stdout.splitlines()
    assert line.startswith("::error file=bom.ipynb,title=TAP101::cell 4, line 2, column 9: ")


def test_github_escapes_what_would_end_a_property_or_a_line() -> None:
    diagnostic = Diagnostic(
        path="dir,a:b%.py",
        start=Position(3, 4),
        end=Position(3, 4),
        code="TAP001",
        name="syntax-error",
        severity=Severity.ERROR,
        message="100% broken\nhere: yes, really",
    )
    assert github.render([diagnostic]) == (
        "::error file=dir%2Ca%3Ab%25.py,line=3,col=4,title=TAP001::"
        "100%25 broken%0Ahere: yes, really\n"
    )


def test_statistics_count_per_code_most_frequent_first(mixed: Path) -> None:
    write(mixed, "g_loss.py", LOSS_OUTSIDE)
    result = run_cli("check", "--statistics")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "3  TAP101      loss-outside-tape",
        "1  TAP002      unreadable-file",
        "1  TAP102  [*] unnecessary-persistent-tape",
        "1  TAP103  [*] persistent-tape-not-released",
        "1  TAP401      unfiltered-apply-gradients",
    ]
    assert result.stderr.startswith("Found 7 problems in 7 files")
    unsafe = run_cli("check", "--statistics", "--unsafe-fixes").stdout
    assert "1  TAP401  [*] unfiltered-apply-gradients" in unsafe


def test_statistics_as_json(mixed: Path) -> None:
    result = run_cli("check", "--statistics", "--output-format", "json", "--select", "TAP1")
    assert json.loads(result.stdout) == [
        {"code": "TAP101", "name": "loss-outside-tape", "count": 2, "fixable": 0},
        {"code": "TAP102", "name": "unnecessary-persistent-tape", "count": 1, "fixable": 1},
        {"code": "TAP103", "name": "persistent-tape-not-released", "count": 1, "fixable": 1},
    ]


def test_statistics_of_a_clean_run_print_nothing(project: Path) -> None:
    assert run_cli("check", "--statistics").stdout == ""


def test_sarif_fix_of_a_notebook_names_the_cell_of_each_edit(project: Path) -> None:
    notebook = FIXTURES / "notebooks" / "flag_persistent_tape_left_alive.ipynb"
    shutil.copy(notebook, project / "nb.ipynb")
    log = sarif()
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    [result] = log["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    in_cell = region["properties"]
    assert (result["ruleId"], in_cell["cell"], in_cell["cellLine"]) == ("TAP103", 2, 1)
    [replacement] = result["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["deletedRegion"]["properties"]["cell"] == 4
    # Appended after the cell's last line, which has no line end, as JSON string text.
    assert replacement["insertedContent"] == {"text": "\\ndel tape"}
