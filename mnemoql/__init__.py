"""mnemoql: a GraphQL graph memory for LLM agents.

The repository keeps the design card's folders (``engine/``, ``schema/``, ``resolvers/``,
``prompts/``, ``web/``) at its top; they install as ``mnemoql.engine``, ``mnemoql.schema`` and so
on, so nothing but ``mnemoql`` lands at the top of site-packages (pyproject's
``[tool.setuptools.package-dir]``). The symlinks beside this file give tools that read the tree
(mypy, pytest from a checkout, editors) the same module names.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mnemoql")
except PackageNotFoundError:  # a checkout on sys.path without an install
    __version__ = "0+unknown"

__all__ = ["__version__"]
