"""mnemoql: a GraphQL graph memory for LLM agents.

The Python API::

    from mnemoql import Memory          # the embedded memory, in this process (async)
    from mnemoql import SyncMemory      # the same, blocking
    from mnemoql import Client          # a served memory over GraphQL (AsyncClient: async)

Results are the dataclasses of ``mnemoql.types``; failures raise the classes of
``mnemoql.errors``, each with its stable ``.code``. ``import mnemoql`` stays cheap: the engine
loads when a memory opens, httpx when a client is first named.

The repository keeps the design card's folders (``engine/``, ``schema/``, ``resolvers/``,
``prompts/``, ``web/``) at its top; they install as ``mnemoql.engine``, ``mnemoql.schema`` and so
on, so nothing but ``mnemoql`` lands at the top of site-packages (the symlinks beside this file;
pyproject's ``[tool.setuptools.packages.find]``). The symlinks also give tools that read the tree
(mypy, pytest from a checkout, editors) the same module names.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from mnemoql.errors import (
    ClientError,
    Conflict,
    CursorError,
    Forbidden,
    InvalidInput,
    MnemoError,
    NotFound,
    ServerError,
    StoreUnavailable,
    Unauthorized,
    Unreachable,
)
from mnemoql.types import EvidenceItem, EvidencePage, ForgetResult, SaveResult, TextRange

if TYPE_CHECKING:
    from mnemoql.client import AsyncClient, Client
    from mnemoql.memory import Memory
    from mnemoql.sync import SyncMemory

try:
    __version__ = version("mnemoql")
except PackageNotFoundError:  # a checkout on sys.path without an install
    __version__ = "0+unknown"

_LAZY = {
    "Memory": "mnemoql.memory",
    "SyncMemory": "mnemoql.sync",
    "Client": "mnemoql.client",
    "AsyncClient": "mnemoql.client",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mnemoql' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AsyncClient",
    "Client",
    "ClientError",
    "Conflict",
    "CursorError",
    "EvidenceItem",
    "EvidencePage",
    "Forbidden",
    "ForgetResult",
    "InvalidInput",
    "Memory",
    "MnemoError",
    "NotFound",
    "SaveResult",
    "ServerError",
    "StoreUnavailable",
    "SyncMemory",
    "TextRange",
    "Unauthorized",
    "Unreachable",
    "__version__",
]
