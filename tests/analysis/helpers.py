from __future__ import annotations

import textwrap

import libcst as cst

from tapelint.semantic import FileModel, build_model


def model_of(source: str) -> FileModel:
    return build_model(cst.parse_module(textwrap.dedent(source)))


def code(model: FileModel, node: cst.CSTNode) -> str:
    return model.module.code_for_node(node)
