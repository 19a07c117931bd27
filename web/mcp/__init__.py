"""The MCP edge: the memory as Model Context Protocol tools and resources.

A second thin edge beside the GraphQL resolvers, over the same ``Memory`` facade (DESIGN.md,
"Growing past the seed"): neither calls the other; both share the token and space rules, the
limits, the error codes and the evidence sessions.

- ``arguments`` / ``results``: the tools' input and output models (their JSON schemas);
- ``tools``: each tool's description and its one ``Memory`` call; ``text``: compact text for the
  results GraphQL renders none for;
- ``server``: the SDK server with scopes, deadlines and coded errors;
- ``stdio``: ``mnemoql mcp``; ``http`` and ``mount``: ``/mcp`` in the running service.
"""
