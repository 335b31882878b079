"""The MCP server (Model Context Protocol, the official `mcp` SDK): the platform's retrieval, findings and answers
as tools for agents, under the same API keys and the same access path as the REST API.

- `tools`: the tool registry (one `McpTool` per tool; `tool_register` adds one) and the tools themselves, each a
  thin adapter over the service or selector its REST endpoint calls.
- `server`: the SDK's low-level server built for one caller's Authority.
- `http`: `/mcp`, Streamable HTTP in stateless JSON-response mode, driven from a Django view.
- `manage.py mcp_stdio`: the same server over stdio for local clients (key from GROUNDWORK_API_KEY).
"""
