"""Day expressions in conversation lines, resolved to calendar days (offline date cues, SPEC §2.8).

Partner's cue model outputs a date "only when it is resolvable to a concrete day"; this is the
offline stand-in. The forms are ``engine.dates``' day expressions, the grammar time hints and
``recallByDate`` read too: absolute days (``2026-03-01``, ``3月1日``, ``March 1``), relative ones
(yesterday, 前天, ``3 days ago``, 三天前, ``a month ago``) and weekdays (``last Friday``,
上周五, 周一). Ranges ("last week", 上个月) are not days and give nothing. Each hit is
``(position, day)``; impossible days are skipped.
"""

from __future__ import annotations

from mnemoql.engine.dates import find_days

__all__ = ["find_days"]
