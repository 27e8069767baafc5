"""The packages, found rather than listed: `tapelint/` as it is, `rules/` (with its rule
families) installed as `tapelint.rules` (`[tool.setuptools.package-dir]` in pyproject.toml),
and `tapelint/validate/site/`, a folder with no `__init__.py` on purpose (the validator puts
it on the child's `sys.path` for its `sitecustomize`). Everything else about the
distribution is in pyproject.toml."""

from setuptools import find_packages, setup

RULES = ["tapelint.rules", *(f"tapelint.rules.{name}" for name in find_packages("rules"))]
SITE = ["tapelint.validate.site"]

setup(packages=[*find_packages(include=["tapelint", "tapelint.*"]), *RULES, *SITE])
