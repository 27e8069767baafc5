"""Finds the rules in `tapelint.rules` (one module per rule, in one package per family) and
looks them up by code or name."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from functools import cache

from tapelint import rules as rules_package  # type: ignore[attr-defined]  # mypy: `rules`
from tapelint.findings.rule import Rule

_CODE = re.compile(r"^TAP\d{3}$")
_NAME = re.compile(r"^[a-z]+(-[a-z]+)*$")


@cache
def all_rules() -> tuple[type[Rule], ...]:
    found: dict[str, type[Rule]] = {}
    names: set[str] = set()
    for info in pkgutil.walk_packages(rules_package.__path__, f"{rules_package.__name__}."):
        if info.ispkg or info.name.rpartition(".")[2].startswith("_"):
            continue  # a family's package, or the private analysis of its rules
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if not issubclass(obj, Rule) or obj is Rule or obj.__module__ != module.__name__:
                continue
            if not _CODE.match(obj.code) or not _NAME.match(obj.name):
                raise RuntimeError(f"malformed rule identity: {obj.code} {obj.name}")
            if obj.code in found or obj.name in names:
                raise RuntimeError(f"duplicate rule: {obj.code} {obj.name}")
            found[obj.code] = obj
            names.add(obj.name)
    return tuple(found[code] for code in sorted(found))


def rule_by_code_or_name(key: str) -> type[Rule] | None:
    for rule in all_rules():
        if key.upper() == rule.code or key.lower() == rule.name:
            return rule
    return None
