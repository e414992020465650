"""The Agent Client Protocol: JSON-RPC with one client (``jsonrpc``), the
methods it calls (``server``), the sessions clients share (``sessions``),
agentrio's events as ACP updates (``updates``) and file tools through the
client's editor (``files``)."""
