"""The per-request context -- the memory of the caller's space, its scopes, fresh DataLoaders --
and the one check of those scopes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence

from graphql import ExecutionResult, FieldNode, GraphQLError, OperationDefinitionNode
from strawberry.dataloader import DataLoader
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext
from strawberry.types.graphql import OperationType

from mnemoql.engine.errors import Forbidden, MnemoError, Unauthorized
from mnemoql.engine.memory import Memory
from mnemoql.engine.messages import DEFAULT_LOCALE, Locale
from mnemoql.engine.models import Chunk, Direction, Neighbour, Node, RelType

_NGroup = tuple[RelType, Direction, int, str | None, str | None, bool]  # after, before, backward
_NKey = tuple[str, RelType, Direction, int, str | None, str | None, bool]


class RequestLoaders:
    """Batches node, relation and chunk reads made while resolving one request."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._nodes = DataLoader[str, Node | None](load_fn=self._load_nodes)
        self._rels = DataLoader[_NKey, list[Neighbour]](load_fn=self._load_neighbours)
        self._chunks = DataLoader[str, list[Chunk]](load_fn=self._load_chunks)

    async def node(self, node_id: str) -> Node | None:
        return await self._nodes.load(node_id)

    async def neighbours(
        self,
        node_id: str,
        rel_type: RelType,
        direction: Direction,
        limit: int,
        after: str | None,
        before: str | None = None,
        backward: bool = False,
    ) -> list[Neighbour]:
        return await self._rels.load(
            (node_id, rel_type, direction, limit, after, before, backward)
        )

    async def chunks(self, event_id: str) -> list[Chunk]:
        return await self._chunks.load(event_id)

    async def _load_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        nodes = await self.memory.nodes(list(ids))
        return list(nodes)

    async def _load_neighbours(self, keys: Sequence[_NKey]) -> list[list[Neighbour]]:
        groups: dict[_NGroup, list[str]] = defaultdict(list)
        for node_id, rel, direction, limit, after, before, backward in keys:
            groups[(rel, direction, limit, after, before, backward)].append(node_id)
        found: dict[_NKey, list[Neighbour]] = {}
        for group, ids in groups.items():
            rel, direction, limit, after, before, backward = group
            rows = await self.memory.neighbours(
                ids, rel, direction, limit, after, before, backward=backward
            )
            for node_id in ids:
                found[(node_id, *group)] = rows.get(node_id, [])
        return [found[k] for k in keys]

    async def _load_chunks(self, ids: Sequence[str]) -> list[list[Chunk]]:
        rows = await self.memory.store.get_chunks(list(ids))
        return [rows.get(i, []) for i in ids]


ALL_SCOPES: frozenset[str] = frozenset({"read", "write"})


class RequestContext:
    """What one request may use: the memory of its space, its scopes and its DataLoaders.

    A context can start unbound (a websocket before ``connection_init``, the GraphiQL page);
    ``bind`` attaches the memory once the caller is known. ``failure`` holds an error met while
    binding (a space whose store cannot be opened); ``ScopeGuard`` returns it instead of running
    the operation.
    """

    def __init__(
        self,
        memory: Memory | None,
        session: str | None = None,
        *,
        space: str = "default",
        scopes: frozenset[str] = ALL_SCOPES,
        failure: MnemoError | None = None,
        caller: str | None = None,
        client_session: str | None = None,
        locale: Locale = DEFAULT_LOCALE,
    ) -> None:
        self._memory = memory
        # the language of messages, texts and errors: Accept-Language, else MNEMOQL_LOCALE
        self.locale: Locale = locale
        self._explicit_session = session
        self._caller = caller
        self._client_session = client_session
        self.space = space
        self.scopes = scopes if memory is not None else frozenset()
        self.failure = failure
        # filled in by strawberry's websocket handlers from the connection_init payload
        self.connection_params: dict[str, object] | None = None
        self._loaders: RequestLoaders | None = None

    @property
    def session(self) -> str | None:
        """The session of calls that name none: the request's ``X-Memory-Session`` header,
        else the caller's default (``default_session``)."""
        return self._explicit_session or default_session(self._caller, self._client_session)

    @property
    def named_session(self) -> str | None:
        """The session the request names itself (``X-Memory-Session``), None when it names none."""
        return self._explicit_session

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            raise self.failure or _unauthenticated()
        return self._memory

    @property
    def loaders(self) -> RequestLoaders:
        if self._loaders is None:
            self._loaders = RequestLoaders(self.memory)
        return self._loaders

    def bind(
        self, memory: Memory, space: str, scopes: frozenset[str], caller: str | None = None
    ) -> None:
        self._memory, self.space, self.scopes = memory, space, scopes
        self.failure, self._loaders = None, None
        self._caller = caller or self._caller

    def refusal(self, operation: OperationType, *, reads: bool = False) -> MnemoError | None:
        """Why this context may not run ``operation`` (None when it may). ``reads``: the
        operation only reads (a query, or a subscription of read-only feeds)."""
        if self.failure is not None:
            return self.failure
        if self._memory is None or not self.scopes:
            return _unauthenticated()
        need = "read" if reads or operation is OperationType.QUERY else "write"
        if need in self.scopes:
            return None
        return Forbidden(
            f"this token may not run a {operation.value}: it needs the {need!r} scope",
            zh=f"令牌权限不足：需要 {need} 权限",
            required_scope=need,
        )


def default_session(caller: str | None, client_session: str | None) -> str | None:
    """Each caller's own evidence history when it names no session (two clients never hide
    each other's evidence): per token (``caller:<id>``, every connection of that token), or
    without tokens the session the client carries (``client:<id>``: the ``mnemoql_session``
    cookie the service sets, or one per websocket). Never the TCP peer: behind a proxy or a
    load balancer that is the proxy's pooled connection, shared by many clients and changing
    for one. None leaves it to the engine's ``default``."""
    return f"caller:{caller}" if caller else client_session


def _unauthenticated() -> Unauthorized:
    return Unauthorized(
        "missing or invalid bearer token: send 'Authorization: Bearer <token>'",
        zh="缺少或无效的访问令牌",
    )


# Subscriptions that only read (a feed): ``read`` runs them; any other needs ``write``.
READ_SUBSCRIPTIONS: frozenset[str] = frozenset({"memoryChanges"})


def _reads_only(execution: ExecutionContext) -> bool:
    """True for a subscription whose every root field is a read-only feed."""
    document = execution.graphql_document
    if document is None or execution.operation_type is not OperationType.SUBSCRIPTION:
        return False
    wanted = execution.operation_name
    for d in document.definitions:
        if isinstance(d, OperationDefinitionNode) and (
            wanted is None or (d.name is not None and d.name.value == wanted)
        ):
            fields = d.selection_set.selections
            return bool(fields) and all(
                isinstance(f, FieldNode) and f.name.value in READ_SUBSCRIPTIONS for f in fields
            )
    return False


class ScopeGuard(SchemaExtension):
    """Refuses an operation the request's token may not run, before any resolver runs.

    Queries and read-only feeds (``READ_SUBSCRIPTIONS``) need ``read``; mutations and other
    subscriptions need ``write``. The one place scopes are checked, so a new mutation is
    covered without touching its resolver.
    """

    def on_execute(self) -> Iterator[None]:
        execution = self.execution_context
        ctx = execution.context
        refusal = (
            ctx.refusal(execution.operation_type, reads=_reads_only(execution))
            if isinstance(ctx, RequestContext)
            else None
        )
        if refusal is not None:
            if self.execution_context.operation_type is OperationType.SUBSCRIPTION:
                raise refusal  # the streaming path reports errors raised here
            error = GraphQLError(refusal.message, original_error=refusal)
            self.execution_context.result = ExecutionResult(data=None, errors=[error])
        yield
