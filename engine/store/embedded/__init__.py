"""SQLite + numpy behind the Store protocol: the default store (``store.py``) and its helpers."""

from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded.store import EmbeddedStore

__all__ = ["AnnSettings", "EmbeddedStore"]
