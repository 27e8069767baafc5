"""The formats for CI services, each checked against what its consumer publishes: `gitlab`
(GitLab's documented Code Quality fields, as a JSON schema), `junit` (the JUnit XSD of
Jenkins' xUnit plugin, with xmlschema), `rdjson` (reviewdog's own JSON schema), `azure`
(read back as the Azure Pipelines agent reads logging commands), `pylint` (its
`path:line: [CODE] message` lines), and `json-lines`; and the documentation URL of each JSON
finding. tests/data/README.md says where each schema comes from."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
import xmlschema

from tapelint.findings.diagnostics import Diagnostic, Position, Severity
from tapelint.findings.rule import DOCS_URL
from tapelint.output import azure, junit, pylint
from tests.cli_helpers import (
    CLEAN,
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE,
    UNFILTERED,
    run_cli,
    write,
)
from tests.fixture_markers import FIXTURES

DATA = Path(__file__).parent / "data"
GITLAB = json.loads((DATA / "gitlab-code-quality.schema.json").read_text())
RDJSON = json.loads((DATA / "rdjson-DiagnosticResult.json").read_text())
JUNIT = xmlschema.XMLSchema(DATA / "junit-10.xsd")
# Where the notebook fixture's TAP101 is: cell 4, line 2, column 9.
IN_CELL = "cell 4, line 2, column 9: "


@pytest.fixture
def mixed(project: Path) -> Path:
    """TAP101 at 8:12 (a_loss.py), TAP102 at 5:26 (safe fix), TAP103 at 4:5 (safe fix),
    TAP401 at 8:5 (unsafe fix), a notebook with TAP101 in cell 4 at 2:9."""
    write(project, "a_loss.py", LOSS_OUTSIDE)
    write(project, "b_persistent.py", PERSISTENT_ONCE)
    write(project, "c_release.py", NOT_RELEASED)
    write(project, "d_apply.py", UNFILTERED)
    shutil.copy(FIXTURES / "notebooks" / "flag_loss_in_next_cell.ipynb", project / "e_nb.ipynb")
    return project


def output(output_format: str, *args: str) -> str:
    result = run_cli("check", "--output-format", output_format, *args)
    assert result.exit_code in (0, 1), result.stderr
    assert result.stderr == ""  # no summary line after a format for programs
    return result.stdout


def notebook_json_line(project: Path, line: int) -> str:
    return (project / "e_nb.ipynb").read_text().split("\n")[line - 1]


def diagnostic(path: str = "a.py", message: str = "problem; advice", **given) -> Diagnostic:
    fields = {
        "start": Position(3, 4),
        "end": Position(3, 9),
        "code": "TAP101",
        "name": "loss-outside-tape",
        "severity": Severity.ERROR,
    }
    return Diagnostic(path=path, message=message, **{**fields, **given})


# gitlab


def test_gitlab_report_has_the_fields_gitlab_documents(mixed: Path) -> None:
    report = json.loads(output("gitlab"))
    jsonschema.Draft7Validator(GITLAB).validate(report)
    by_path = {issue["location"]["path"]: issue for issue in report}
    assert sorted(by_path) == [
        "a_loss.py",
        "b_persistent.py",
        "c_release.py",
        "d_apply.py",
        "e_nb.ipynb",
    ]
    loss = by_path["a_loss.py"]
    assert (loss["check_name"], loss["severity"]) == ("TAP101", "major")
    assert loss["description"].startswith("TAP101 `loss` is computed after")
    assert loss["location"]["lines"] == {"begin": 8, "end": 8}
    assert by_path["b_persistent.py"]["severity"] == "minor"  # a warning-severity rule
    assert len({issue["fingerprint"] for issue in report}) == len(report)
    # A notebook finding is on the line of the .ipynb's JSON text that holds its source.
    notebook = by_path["e_nb.ipynb"]
    assert notebook["description"].startswith(f"TAP101 {IN_CELL}")
    line = notebook_json_line(mixed, notebook["location"]["lines"]["begin"])
    assert line.strip().startswith('"grads = tape.gradient(loss, ')


def test_the_gitlab_schema_check_is_real(mixed: Path) -> None:
    report = json.loads(output("gitlab"))
    report[0]["severity"] = "error"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(GITLAB).validate(report)
    del report[1]["location"]["lines"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(GITLAB).validate(report[1:])


def test_gitlab_fingerprints_survive_edits_above_and_tell_twins_apart(project: Path) -> None:
    twice = LOSS_OUTSIDE + "\n\n" + LOSS_OUTSIDE.replace("import tensorflow as tf\n", "")
    write(project, "a.py", twice)
    before = [issue["fingerprint"] for issue in json.loads(output("gitlab"))]
    assert len(before) == 2 and len(set(before)) == 2
    write(project, "a.py", "# a comment\n# and another\n" + twice)
    after = json.loads(output("gitlab"))
    assert [issue["fingerprint"] for issue in after] == before
    assert after[0]["location"]["lines"]["begin"] == 10


def test_gitlab_paths_are_relative_to_the_current_directory(mixed: Path) -> None:
    report = json.loads(output("gitlab", str(mixed / "a_loss.py")))
    assert [issue["location"]["path"] for issue in report] == ["a_loss.py"]


def test_gitlab_report_of_a_clean_run_is_an_empty_array(project: Path) -> None:
    write(project, "clean.py", CLEAN)
    assert json.loads(output("gitlab")) == []


# junit


def test_junit_is_valid_against_the_jenkins_schema(mixed: Path) -> None:
    report = output("junit")
    JUNIT.validate(report)
    root = xmlschema.XMLResource(report).root
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "5", "5")
    suites = {suite.get("name"): suite for suite in root}
    assert sorted(suites) == [
        "a_loss.py",
        "b_persistent.py",
        "c_release.py",
        "d_apply.py",
        "e_nb.ipynb",
    ]
    [case] = suites["a_loss.py"]
    assert case.get("name") == "TAP101 at line 8, column 12"
    assert case.get("classname") == "a_loss.py"
    [failure] = case
    assert failure.get("type") == "TAP101"
    assert failure.get("message").startswith("`loss` is computed after")
    assert failure.text.startswith("a_loss.py:8:12: TAP101 `loss` is computed")
    [notebook_case] = suites["e_nb.ipynb"]
    assert notebook_case.get("name") == "TAP101 at cell 4, line 2, column 9"


def test_the_junit_schema_check_is_real(mixed: Path) -> None:
    broken = output("junit").replace('<testsuite name="a_loss.py"', "<testsuite")
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        JUNIT.validate(broken)


def test_junit_of_a_clean_run_is_one_passing_test(project: Path) -> None:
    write(project, "clean.py", CLEAN)
    report = output("junit")
    JUNIT.validate(report)
    root = xmlschema.XMLResource(report).root
    assert (root.get("tests"), root.get("failures")) == ("1", "0")
    [suite] = root
    [case] = suite
    assert case.get("name") == "no findings" and list(case) == []


def test_junit_replaces_what_xml_cannot_hold() -> None:
    report = junit.render([diagnostic(message="a \x01 b & <c>")])
    JUNIT.validate(report)
    [failure] = xmlschema.XMLResource(report).root.iter("failure")
    assert failure.get("message") == "a \ufffd b & <c>"


# rdjson


def test_rdjson_is_valid_against_reviewdogs_schema(mixed: Path) -> None:
    result = json.loads(output("rdjson"))
    jsonschema.Draft4Validator(RDJSON).validate(result)
    assert result["source"]["name"] == "tapelint"
    by_path = {d["location"]["path"]: d for d in result["diagnostics"]}
    loss = by_path["a_loss.py"]
    assert loss["severity"] == "ERROR"
    assert loss["code"] == {"value": "TAP101", "url": f"{DOCS_URL}rules/TAP101/"}
    assert loss["location"]["range"] == {
        "start": {"line": 8, "column": 12},
        "end": {"line": 8, "column": 58},
    }
    assert "suggestions" not in loss
    assert by_path["b_persistent.py"]["severity"] == "WARNING"
    [suggestion] = by_path["b_persistent.py"]["suggestions"]
    assert suggestion["range"]["start"]["line"] == 5
    notebook = by_path["e_nb.ipynb"]
    assert notebook["message"].startswith(IN_CELL)
    start = notebook["location"]["range"]["start"]
    line = notebook_json_line(mixed, start["line"])
    assert line.encode()[start["column"] - 1 :].startswith(b"tape.gradient(loss, ")
    assert "suggestions" not in notebook


def test_the_rdjson_schema_check_is_real(mixed: Path) -> None:
    result = json.loads(output("rdjson"))
    result["diagnostics"][0]["severity"] = "FATAL"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(RDJSON).validate(result)


def test_rdjson_columns_count_utf8_bytes(project: Path) -> None:
    write(project, "a.py", LOSS_OUTSIDE.replace("return tape.gradient(", "ŷ = tape.gradient("))
    [found] = json.loads(output("json"))
    [reviewed] = json.loads(output("rdjson"))["diagnostics"]
    assert (found["line"], found["column"]) == (8, 9)  # characters
    assert reviewed["location"]["range"]["start"] == {"line": 8, "column": 10}  # bytes: ŷ is 2


# azure


def _read_logging_command(line: str) -> tuple[str, dict[str, str], str]:
    """A line read as the Azure Pipelines agent reads a logging command: the first `##vso[`,
    the first `]` after it, `area.event` and `key=value;` properties split at `;` and their
    first `=`, then each value and the message unescaped (`%AZP25`, `%0D`, `%0A`, `%3B`,
    `%5D`)."""
    start = line.index("##vso[") + len("##vso[")
    end = line.index("]", start)
    command, _, properties = line[start:end].partition(" ")
    unescape = {"%3B": ";", "%0D": "\r", "%0A": "\n", "%5D": "]", "%AZP25": "%"}

    def decoded(value: str) -> str:
        return re.sub("|".join(map(re.escape, unescape)), lambda m: unescape[m[0]], value)

    pairs = {}
    for pair in filter(None, properties.split(";")):
        key, _, value = pair.partition("=")
        pairs[key] = decoded(value)
    return command, pairs, decoded(line[end + 1 :])


def test_azure_logging_commands(mixed: Path) -> None:
    lines = output("azure").splitlines()
    assert len(lines) == 5
    command, properties, message = _read_logging_command(lines[0])
    assert command == "task.logissue"
    assert properties == {
        "type": "error",
        "sourcepath": str(mixed / "a_loss.py"),
        "linenumber": "8",
        "columnnumber": "12",
        "code": "TAP101",
    }
    assert message.startswith("`loss` is computed after")
    assert _read_logging_command(lines[1])[1]["type"] == "warning"
    _, notebook, notebook_message = _read_logging_command(lines[4])
    assert notebook_message.startswith(IN_CELL)
    line = notebook_json_line(mixed, int(notebook["linenumber"]))
    assert line[int(notebook["columnnumber"]) - 1 :].startswith("tape.gradient(loss, ")


def test_azure_escapes_what_would_end_a_property_or_the_command() -> None:
    given = diagnostic(path="/w/we;ird]%.py", message="100% broken]; yes\nreally\r")
    [line] = azure.render([given]).splitlines()
    _, properties, message = _read_logging_command(line)
    assert properties["sourcepath"] == "/w/we;ird]%.py"
    assert message == "100% broken]; yes\nreally\r"


# pylint

PYLINT_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): \[(?P<code>TAP\d{3})\] (?P<message>.+)$")


def test_pylint_lines(mixed: Path) -> None:
    lines = output("pylint").splitlines()
    parsed = [PYLINT_LINE.match(line) for line in lines]
    assert all(parsed), lines
    assert lines[0].startswith("a_loss.py:8: [TAP101] `loss` is computed after")
    notebook = parsed[4]
    assert notebook["path"] == "e_nb.ipynb"
    assert notebook["message"].startswith(IN_CELL)
    assert notebook_json_line(mixed, int(notebook["line"])).strip().startswith('"grads = ')


def test_pylint_keeps_each_finding_on_its_line() -> None:
    [line] = pylint.render([diagnostic(message="two\nlines")]).splitlines()
    assert line == "a.py:3: [TAP101] two lines"


# json and json-lines


def test_json_findings_link_their_rule_and_keep_every_key(mixed: Path) -> None:
    found = json.loads(output("json"))
    keys = {"path", "line", "column", "end_line", "end_column", "code", "name", "severity"}
    keys |= {"message", "fix", "related", "url"}
    for item in found:
        assert keys <= set(item), item
        assert item["url"] == f"{DOCS_URL}rules/{item['code']}/"


def test_json_lines_is_one_json_object_a_line(mixed: Path) -> None:
    lines = output("json-lines").splitlines()
    assert [json.loads(line) for line in lines] == json.loads(output("json"))
    assert len(lines) == 5
