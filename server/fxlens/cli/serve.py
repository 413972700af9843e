"""`fxlens serve`: the language server, over stdio or TCP."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="run the language server")
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdio (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead, for debugging")
    serve.set_defaults(run=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from fxlens.lsp.server import serve

    return serve(tcp=args.tcp)
