"""Files tapelint cannot check become diagnostics, and the run goes on with the others."""

from __future__ import annotations

import ast

from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write

BROKEN = "import tensorflow as tf\n\nwith tf.GradientTape() as tape\n    y = model(x)\n"


def test_unparsable_file_is_tap001_with_the_parser_line_and_message(project):
    write(project, "broken.py", BROKEN)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check")
    assert result.exit_code == 1
    try:
        ast.parse(BROKEN)
    except SyntaxError as error:
        expected = f"broken.py:{error.lineno}:{error.offset}: TAP001 cannot parse: {error.msg}"
    broken, train = result.stdout.splitlines()
    assert broken == expected
    assert broken.startswith("broken.py:3:")
    assert train.startswith("train.py:8:12: TAP101 ")


def test_unparsable_file_is_reported_in_json_with_its_name(project):
    write(project, "broken.py", BROKEN)
    result = run_cli("check", "--output-format", "json")
    assert '"code": "TAP001"' in result.stdout
    assert '"name": "syntax-error"' in result.stdout


def test_undecodable_bytes_are_tap002(project):
    data = LOSS_OUTSIDE.replace("import tensorflow as tf", "import tensorflow as tf  # caf\xe9")
    (project / "latin.py").write_bytes(data.encode("latin-1"))
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check")
    assert result.exit_code == 1
    latin, train = result.stdout.splitlines()
    assert latin.startswith("latin.py:1:1: TAP002 cannot decode: ")
    assert train.startswith("train.py:8:12: TAP101 ")


def test_empty_file_is_fine(project):
    write(project, "empty.py", "")
    result = run_cli("check")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_file_with_a_bom_is_checked_with_unshifted_columns(project):
    (project / "bom.py").write_bytes(b"\xef\xbb\xbf" + LOSS_OUTSIDE.encode())
    result = run_cli("check")
    assert result.stdout.startswith("bom.py:8:12: TAP101 ")


def test_latin1_file_with_a_coding_cookie_is_checked(project):
    source = "# -*- coding: latin-1 -*-\n# café\n" + LOSS_OUTSIDE
    (project / "latin.py").write_bytes(source.encode("latin-1"))
    result = run_cli("check")
    assert result.codes() == [("latin.py", "TAP101")]
    assert result.stdout.startswith("latin.py:10:12: TAP101 ")


def test_crlf_line_ends_keep_positions(project):
    (project / "crlf.py").write_bytes(LOSS_OUTSIDE.replace("\n", "\r\n").encode())
    assert run_cli("check").stdout.startswith("crlf.py:8:12: TAP101 ")


def test_file_with_a_null_byte_is_tap001(project):
    (project / "nul.py").write_bytes(LOSS_OUTSIDE.encode() + b"x = 1\x00\n")
    write(project, "train.py", LOSS_OUTSIDE)
    assert run_cli("check").codes() == [("nul.py", "TAP001"), ("train.py", "TAP101")]


def test_unparsable_file_that_never_mentions_a_tape_is_skipped(project):
    write(project, "other.py", "def f(:\n")
    result = run_cli("check")
    assert (result.exit_code, result.stdout) == (0, "")
