"""Files tapelint cannot check become diagnostics, and the run goes on with the others."""

from __future__ import annotations

import ast
import ctypes
import json
import os
import subprocess
import sys

import pytest

from tapelint.linter.engine import Linter
from tapelint.linter.registry import all_rules
from tapelint.sources.colab_exports import as_ipython, is_colab_export
from tests.cli_helpers import LOSS_OUTSIDE, UNFILTERED, run_cli, write

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
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "All checks passed!\n")


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


LINE_ENDS = {"LF": "\n", "CRLF": "\r\n", "CR": "\r"}


def _with_line_ends(text: str, end: str) -> bytes:
    return text.replace("\n", end).encode()


@pytest.mark.parametrize("snippet", [LOSS_OUTSIDE, UNFILTERED], ids=["tape", "apply-only"])
@pytest.mark.parametrize("header", ["", "# a comment first\n"], ids=["code-first", "comment-first"])
def test_lone_cr_crlf_and_lf_line_ends_give_the_same_findings_at_the_same_positions(
    project, snippet, header
):
    for name, end in LINE_ENDS.items():
        (project / f"{name}.py").write_bytes(_with_line_ends(header + snippet, end))
    result = run_cli("check", "--no-cache", "--output-format", "json")
    assert result.exit_code == 1, result.stderr
    found = json.loads(result.stdout)
    by_file = {name: [] for name in LINE_ENDS}
    for d in found:
        where = (d["code"], d["line"], d["column"], d["end_line"], d["end_column"])
        by_file[d["path"].removesuffix(".py")].append(where)
    assert by_file["LF"], result.stdout
    assert by_file["CR"] == by_file["LF"] == by_file["CRLF"]


def test_a_noqa_comment_silences_a_finding_in_a_file_with_lone_cr_line_ends(project):
    lines = LOSS_OUTSIDE.splitlines()
    lines[7] += "  # noqa: TAP101"
    (project / "cr.py").write_bytes("\r".join(lines).encode() + b"\r")
    result = run_cli("check", "--no-cache")
    assert (result.exit_code, result.stdout) == (0, ""), result.stderr


def test_a_package_with_lone_cr_line_ends_re_exports_as_with_newlines(project):
    helper = "import tensorflow as tf\n\n\ndef grads(model, x):\n    with tf.GradientTape() as t:\n"
    helper += (
        "        loss = tf.reduce_mean(model(x))\n    return t.gradient(loss, model.weights)\n"
    )
    write(project, "pkg/helpers.py", helper)
    step = "from pkg import grads\n\n\ndef step(model, opt, x):\n    g = grads(model, x)\n"
    step += "    opt.apply_gradients(zip(g, model.trainable_variables))\n"
    write(project, "train.py", step)
    init = "# the package\nfrom .helpers import grads\n"
    outputs = []
    for end in LINE_ENDS.values():
        (project / "pkg" / "__init__.py").write_bytes(_with_line_ends(init, end))
        outputs.append(run_cli("check", "--no-cache").stdout)
    assert outputs[0].startswith("train.py:6:5: TAP401 ")
    assert outputs == [outputs[0]] * 3


@pytest.fixture
def default_recursion_limit():
    """Python's default stack depth (a test run may have raised it), which the nesting
    limits below are relative to."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(limit)


TAPE_FIRST = "import tensorflow as tf\n\nwith tf.GradientTape() as tape:\n    y = 1\n"

DEEP = {
    "20000-chained-plus": "x = " + " + ".join(["a"] * 20_000) + "\n",
    "50000-chained-attributes": "x = a" + ".b" * 50_000 + "\n",
    "50000-unary-minus": "x = " + "-" * 50_000 + "a\n",
    "20000-chained-calls": "x = f" + "()" * 20_000 + "\n",
}


@pytest.mark.parametrize("code", DEEP.values(), ids=DEEP.keys())
def test_nesting_that_python_rejects_is_tap001_and_the_run_goes_on(
    project, code, default_recursion_limit
):
    write(project, "deep.py", TAPE_FIRST + code)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache")
    assert "internal error" not in result.stderr
    assert result.exit_code == 1
    deep, train = result.stdout.splitlines()
    assert deep == "deep.py:1:1: TAP001 cannot parse: nested too deeply for Python's parser"
    assert train.startswith("train.py:8:12: TAP101 ")


def test_nesting_python_takes_but_too_deep_for_libcst_is_tap001_at_its_deepest_line(
    project, default_recursion_limit
):
    code = "x = " + " + ".join(["a"] * 1000) + "\n"
    ast.parse(code)  # Python's parser takes it
    write(project, "deep.py", TAPE_FIRST + code)
    result = run_cli("check", "--no-cache")
    assert "internal error" not in result.stderr
    assert result.stdout.startswith("deep.py:5:")
    assert "TAP001 cannot parse: nested too deeply for libcst (1001 levels)" in result.stdout


def test_a_deeply_nested_module_read_for_its_imports_is_unknown_not_an_error(
    project, default_recursion_limit
):
    init = "try:\n    from .helpers import grads\nexcept ImportError:\n    pass\n"
    write(project, "pkg/__init__.py", init + "x = a" + ".b" * 50_000 + "\n")
    step = "from pkg import grads\n\n\ndef step(model, opt, x):\n    g = grads(model, x)\n"
    step += "    opt.apply_gradients(zip(g, model.trainable_variables))\n"
    write(project, "train.py", step)
    write(project, "loose.py", LOSS_OUTSIDE)
    result = run_cli("check", "--no-cache")
    assert "error" not in result.stderr
    assert result.exit_code == 1
    assert result.codes() == [("loose.py", "TAP101")]  # what `grads` does is unknown


def _without_root_privileges() -> None:
    """In the child, before it runs tapelint: as root, give up overriding file permissions
    (dropped from the capability bounding set, so the exec'd interpreter never has them)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _check_unprivileged(project, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--no-cache", *paths],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=_without_root_privileges,
    )


def test_an_unreadable_file_named_on_the_command_line_is_tap002_like_one_found_by_walking(
    project,
):
    write(project, "a.py", LOSS_OUTSIDE)
    write(project, "b.py", LOSS_OUTSIDE).chmod(0)
    write(project, "closed/c.py", LOSS_OUTSIDE)
    (project / "closed").chmod(0)
    try:
        named = _check_unprivileged(project, "b.py", "a.py", "closed/c.py")
        walked = _check_unprivileged(project, ".")
    finally:
        (project / "closed").chmod(0o755)
    assert named.returncode == 1, named.stderr
    assert named.stdout.splitlines() == [
        walked.stdout.splitlines()[0],
        "b.py:1:1: TAP002 cannot read: Permission denied",
        "closed/c.py:1:1: TAP002 cannot read: Permission denied",
    ]
    assert walked.stdout.splitlines()[:2] == named.stdout.splitlines()[:2]
    assert walked.stdout.startswith("a.py:8:12: TAP101 ")


def test_a_colab_export_is_read_as_ipython_and_a_plain_script_is_not():
    """`colab_exports`: Colab's `.py` export keeps `!pip` lines and is read as IPython reads
    its notebook; the same lines in a file without Colab's header are a TAP001."""
    body = "!pip install dgl\nimport tensorflow as tf\nwith tf.GradientTape() as tape:\n    pass\n"
    export = '"""nb.ipynb\n\nAutomatically generated by Colab.\n"""\n' + body
    assert is_colab_export(export) and not is_colab_export(body)
    assert as_ipython(export).count("\n") == export.count("\n")  # line for line
    linter = Linter([r for r in all_rules() if not r.preview])
    assert [d.code for d in linter.check_text(export, "nb.py")] == []
    assert [d.code for d in linter.check_text(body, "script.py")] == ["TAP001"]
