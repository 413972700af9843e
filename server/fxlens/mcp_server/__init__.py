"""`fxlens mcp`: the Model Context Protocol server for coding agents, a thin client of the engine like the
language server and the CLI (the same supervisor, worker and trace children; it never imports torch).
`server.py` wires the SDK's server and its tools, `tools.py` holds the handlers, `results.py` shapes their
answers, `workspace.py` the roots, the execution policy and the warm worker every call goes through."""
