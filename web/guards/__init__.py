"""Guards at the edge of the service, one module per mechanism:

- ``hosts``: which ``Host`` names and ``Origin`` values may reach the service (DNS rebinding),
  and CORS for the listed origins;
- ``limits``: fair limits per client (refused requests, busy time, requests in flight) and
  ``subscriptions``: the caps on websocket operations;
- ``sizes``: the request body's size and the time it may take to arrive, and a client that
  leaves mid-body;
- ``deadlines``: per-operation time limits (``TIMEOUT``);
- ``inputs``: variables and ``where`` trees checked before they are converted;
- ``pacing`` and ``heap``: the event loop kept for everyone (large bodies take turns, repeated
  refusals pause, the garbage collector kept out of large parses and the start-up heap);
- ``replies``: how a guard refuses, in the shape of the route.

The middleware order (outermost first) is set in ``web.app``: ``HostGuard``, CORS,
``RateLimit``, ``BearerAuth``, ``BodyLimit``.
"""

from mnemoql.web.guards.deadlines import (
    MutationDeadline,
    timeout_message,
    timeout_result,
    within_deadline,
)
from mnemoql.web.guards.heap import GC_FREE_PARSE_BYTES, collector_paused, freeze_heap, thaw_heap
from mnemoql.web.guards.hosts import HostGuard, HostRule, cors
from mnemoql.web.guards.inputs import (
    check_inputs,
    input_guard,
    may_hold_lone_surrogates,
    note_body,
    where_size,
)
from mnemoql.web.guards.limits import ClientLimits, RateLimit
from mnemoql.web.guards.pacing import ParseBudget, RefusalPause
from mnemoql.web.guards.sizes import BodyLimit

__all__ = [
    "GC_FREE_PARSE_BYTES",
    "BodyLimit",
    "ClientLimits",
    "HostGuard",
    "HostRule",
    "MutationDeadline",
    "ParseBudget",
    "RateLimit",
    "RefusalPause",
    "check_inputs",
    "collector_paused",
    "cors",
    "freeze_heap",
    "input_guard",
    "may_hold_lone_surrogates",
    "note_body",
    "thaw_heap",
    "timeout_message",
    "timeout_result",
    "where_size",
    "within_deadline",
]
