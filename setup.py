"""The packages, found rather than listed: `tapelint/` as it is, and `rules/` (with its rule
families) installed as `tapelint.rules` (`[tool.setuptools.package-dir]` in pyproject.toml).
Everything else about the distribution is in pyproject.toml."""

from setuptools import find_packages, setup

RULES = ["tapelint.rules", *(f"tapelint.rules.{name}" for name in find_packages("rules"))]

setup(packages=[*find_packages(include=["tapelint", "tapelint.*"]), *RULES])
