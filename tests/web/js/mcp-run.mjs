// Drives a mnemoql MCP server with the TypeScript SDK's own client, as most desktop and IDE
// agents (and the MCP Inspector) do: list the tools, then make each call of a plan.
//
//   node mcp-run.mjs '<plan json>'
//
// plan: {"transport": "stdio", "command": "...", "args": [...], "env": {...}, "cwd": "..."}
//    or {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "token": "..."}
//    plus "calls": [{"name": "memory_search", "arguments": {...}}, ...]
//
// Prints one JSON object: the listed tools (name, inputSchema) and, per call, either the
// result (isError, text, structuredContent) or what the client threw (code, message). The
// client checks every structuredContent against the tool's outputSchema (it throws -32602 when
// it does not match), so a result here has passed that check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(process.argv[2]);

function transport() {
  if (plan.transport === "stdio") {
    return new StdioClientTransport({
      command: plan.command,
      args: plan.args,
      env: plan.env,
      cwd: plan.cwd,
      stderr: "inherit",
    });
  }
  const headers = plan.token ? { Authorization: `Bearer ${plan.token}` } : {};
  return new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers } });
}

const client = new Client({ name: "mnemoql-test-host", version: "0.0.0" });
await client.connect(transport());
const listed = await client.listTools(); // caches each tool's outputSchema validator
const out = {
  protocolVersion: client.transport?.protocolVersion ?? null,
  tools: listed.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })),
  results: [],
};
for (const call of plan.calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments });
    out.results.push({
      isError: result.isError === true,
      text: result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n"),
      structuredContent: result.structuredContent ?? null,
    });
  } catch (error) {
    out.results.push({ thrown: { code: error.code ?? null, message: String(error.message) } });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out));
