"""SARIF of notebooks: each region is on the line (and column) of the `.ipynb` file's JSON
text that holds the finding's source, whatever wrote the JSON, the cell position is kept in
`properties`, and a fix's replacements, applied to the file's text, give the notebook that
`tapelint check --fix` writes. Every log is validated against the SARIF 2.1.0 schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from tapelint.cli import cli
from tests.cli_helpers import run_cli
from tests.fixture_markers import FIXTURES

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
NOTEBOOKS = sorted((FIXTURES / "notebooks").glob("flag_*.ipynb"))
WITH_FIXES = [
    "flag_persistent_tape_left_alive.ipynb",
    "flag_indented_cells.ipynb",
    "flag_magics_keep_lines.ipynb",
    "flag_step_spread_over_cells.ipynb",
    "flag_keras_optimizer_in_eager_notebook.ipynb",
    "flag_repackaged_gradients.ipynb",
    "flag_helper_gradients_applied_in_later_cell.ipynb",
]


def _sarif(*args: str) -> dict[str, Any]:
    result = run_cli("check", "--output-format", "sarif", "--select", "ALL", "--preview", *args)
    assert result.exit_code in (0, 1), result.stderr
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log


def _results(log: dict[str, Any]) -> list[dict[str, Any]]:
    return log["runs"][0]["results"]


def _cell_source(document: dict[str, Any], cell: int) -> str:
    source = document["cells"][cell - 1]["source"]
    return source if isinstance(source, str) else "".join(source)


def _cell_text_at(document: dict[str, Any], cell: int, line: int, column: int) -> str:
    """The rest of the cell's line `line` from `column` (both 1-based)."""
    return _cell_source(document, cell).splitlines()[line - 1][column - 1 :]


def _escaped(text: str, *, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


def _assert_on_its_json_line(path: Path, place: dict[str, Any], ascii_only: bool) -> None:
    """The file's line `startLine`, from `startColumn`, is the finding's source text."""
    region, in_cell = place["region"], place["region"]["properties"]
    text_lines = path.read_text(encoding="utf-8").split("\n")
    json_line = text_lines[region["startLine"] - 1]
    document = json.loads(path.read_text(encoding="utf-8"))
    source = _cell_text_at(document, in_cell["cell"], in_cell["cellLine"], in_cell["cellColumn"])
    expected = _escaped(source[:12], ascii_only=ascii_only)
    assert json_line[region["startColumn"] - 1 :].startswith(expected), (json_line, source)


def _variants(original: Path, directory: Path) -> list[tuple[Path, bool]]:
    """The notebook as written, and rewritten: minified on one line, each cell's source as
    one string, and ASCII-only (every non-ASCII character a \\u escape)."""
    document = json.loads(original.read_text(encoding="utf-8"))
    as_string = json.loads(json.dumps(document))
    for cell in as_string["cells"]:
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
    ascii_document = json.loads(json.dumps(document))
    ascii_document["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": ["é\n"]})
    variants = {
        "as_written.ipynb": (original.read_text(encoding="utf-8"), False),
        "one_line.ipynb": (json.dumps(document, ensure_ascii=False), False),
        "string_sources.ipynb": (json.dumps(as_string, indent=1, ensure_ascii=False), False),
        "ascii.ipynb": (json.dumps(ascii_document, indent=2, ensure_ascii=True), True),
    }
    paths = []
    for name, (text, ascii_only) in variants.items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        paths.append((path, ascii_only))
    return paths


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_each_region_is_on_the_json_line_that_holds_its_source(project: Path, notebook) -> None:
    for path, ascii_only in _variants(notebook, project):
        results = _results(_sarif(path.name))
        assert results, path.name
        for result in results:
            location = result["locations"][0]["physicalLocation"]
            if result["ruleId"] in {"TAP001", "TAP002"}:
                continue  # the cell's own parser message: placed as the other findings
            _assert_on_its_json_line(path, location, ascii_only)
            for related in result.get("relatedLocations", []):
                if related["physicalLocation"]["artifactLocation"]["uri"] == path.name:
                    _assert_on_its_json_line(path, related["physicalLocation"], ascii_only)


def test_a_span_ends_on_the_json_line_of_its_last_character(project: Path) -> None:
    shutil.copy(FIXTURES / "notebooks" / "flag_persistent_tape_left_alive.ipynb", "nb.ipynb")
    [result] = _results(_sarif("nb.ipynb"))
    region = result["locations"][0]["physicalLocation"]["region"]
    in_cell = region["properties"]
    assert in_cell["cell"] == 2 and in_cell["cellEndLine"] > in_cell["cellLine"]
    document = json.loads(Path("nb.ipynb").read_text())
    lines = Path("nb.ipynb").read_text().split("\n")
    last = _cell_source(document, 2).splitlines()[in_cell["cellEndLine"] - 1]
    before_end = last[: in_cell["cellEndColumn"] - 1]
    json_line = lines[region["endLine"] - 1]
    assert json_line[: region["endColumn"] - 1].endswith(_escaped(before_end, ascii_only=False))


def _apply(text: str, replacements: list[dict[str, Any]]) -> str:
    """Apply SARIF replacements (1-based lines and columns, ends exclusive) to `text`."""
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    edits = []
    for replacement in replacements:
        deleted = replacement["deletedRegion"]
        start = offset(deleted["startLine"], deleted["startColumn"])
        end = offset(deleted["endLine"], deleted["endColumn"])
        edits.append((start, end, replacement.get("insertedContent", {}).get("text", "")))
    for start, end, content in sorted(edits, reverse=True):
        text = text[:start] + content + text[end:]
    return text


@pytest.mark.parametrize("name", WITH_FIXES)
def test_fixes_applied_to_the_file_give_what_fix_writes(project: Path, name: str) -> None:
    for path, _ in _variants(FIXTURES / "notebooks" / name, project):
        fixed_by_tapelint = project / f"fixed_{path.name}"
        shutil.copy(path, fixed_by_tapelint)
        results = _results(_sarif("--unsafe-fixes", path.name))
        replacements = [
            replacement
            for result in results
            for fix in result.get("fixes", [])
            for change in fix["artifactChanges"]
            for replacement in change["replacements"]
        ]
        assert replacements, path.name
        applied = json.loads(_apply(path.read_text(encoding="utf-8"), replacements))
        run_cli(
            "check",
            "--fix",
            "--unsafe-fixes",
            "--select",
            "ALL",
            "--preview",
            fixed_by_tapelint.name,
        )
        expected = json.loads(fixed_by_tapelint.read_text(encoding="utf-8"))
        cells = range(1, len(expected["cells"]) + 1)
        assert [_cell_source(applied, c) for c in cells] == [
            _cell_source(expected, c) for c in cells
        ]
        assert any(
            _cell_source(applied, c) != _cell_source(json.loads(path.read_text()), c) for c in cells
        )


def test_standard_input_is_placed_in_the_bytes_read_not_in_the_file(project: Path) -> None:
    notebook = FIXTURES / "notebooks" / "flag_persistent_tape_left_alive.ipynb"
    given = json.dumps(json.loads(notebook.read_text(encoding="utf-8")))  # on one line
    Path("nb.ipynb").write_text("{}", encoding="utf-8")  # the file holds something else
    result = CliRunner().invoke(
        cli, ["check", "--output-format", "sarif", "--stdin-filename", "nb.ipynb"], input=given
    )
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    [found] = _results(log)
    region = found["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 1  # the one line of what was read
    assert given[region["startColumn"] - 1 :].startswith("with tf.GradientTape(persistent=True)")
    assert found["fixes"]


def test_a_position_that_cannot_be_placed_has_no_region_and_no_fix(project: Path) -> None:
    """A notebook with a byte-order mark: tapelint reads it, but its JSON text's columns
    are not placed (documented in tapelint.output.sarif); the cell position stays."""
    notebook = FIXTURES / "notebooks" / "flag_persistent_tape_left_alive.ipynb"
    Path("bom.ipynb").write_bytes(b"\xef\xbb\xbf" + notebook.read_bytes())
    [found] = _results(_sarif("bom.ipynb"))
    location = found["locations"][0]["physicalLocation"]
    assert "region" not in location
    assert location["properties"] == {
        "cell": 2,
        "cellLine": 1,
        "cellColumn": 1,
        "cellEndLine": 4,
        "cellEndColumn": 42,
    }
    assert "fixes" not in found
