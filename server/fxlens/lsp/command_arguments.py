"""workspace/executeCommand: each command's arguments as a typed object, and the function pygls calls.

Clients send a command's arguments as a positional JSON list (the VS Code client, editors/neovim, the
lenses and code actions this server makes); that wire format stays. Each command declares a frozen
dataclass of its arguments with one parser that reads the list and returns the object, or an
`ArgumentError` that the command's answer carries to the user: a handler only ever sees the typed object,
and bad arguments never raise out of it. A `Command` (or `AsyncCommand`) ties a name, the parser, the
handler and the answer to bad arguments together; `server.py` registers them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer

Payload = dict[str, Any]  # a command's JSON answer
Parsed = TypeVar("Parsed")


@dataclass(frozen=True)
class ArgumentError:
    """The arguments could not be read: `expected` says what the command takes."""

    expected: str  # e.g. "[uri of an open document, className?]"

    def message(self, command: str) -> str:
        return f"{command} needs {self.expected}"


Parser = Callable[[Sequence[Any]], Parsed | ArgumentError]


def text_at(arguments: Sequence[Any], index: int) -> str | None:
    """Argument `index` if it is a non-empty string (clients send null, numbers, nothing), else None."""
    value = arguments[index] if len(arguments) > index else None
    return value if isinstance(value, str) and value else None


def flag_at(arguments: Sequence[Any], index: int) -> bool:
    """Whether argument `index` is JSON `true` (anything else, or nothing, is false)."""
    return len(arguments) > index and arguments[index] is True


def refused(message: str) -> Payload:
    """The answer to bad arguments of a command with no answer of its own to carry a message."""
    return {"ok": False, "message": message}


@dataclass(frozen=True)
class NoArguments:
    """A command that reads no arguments: any a client sends are ignored."""

    @classmethod
    def parse(cls, arguments: Sequence[Any]) -> NoArguments:
        return cls()


@dataclass(frozen=True)
class DocumentArguments:
    """`[uri]`: an open document."""

    uri: str

    @classmethod
    def parse(cls, arguments: Sequence[Any]) -> DocumentArguments | ArgumentError:
        uri = text_at(arguments, 0)
        return cls(uri) if uri is not None else ArgumentError("[uri of an open document]")


@dataclass(frozen=True)
class Command(Generic[Parsed]):
    """A command answered at once."""

    name: str
    parse: Parser[Parsed]
    run: Callable[[FxlensServer, Parsed], Payload]
    refuse: Callable[[str], Payload] = refused  # the command's answer carrying why its arguments were refused

    def handler(self) -> Callable[..., Payload]:
        """What pygls calls: the server (a first parameter named `ls`), then the arguments as sent."""

        # (pygls reads these annotations at run time, where the server's class cannot be imported: Any)
        def handle(ls: Any, *arguments: Any) -> Payload:
            parsed = self.parse(arguments)
            if isinstance(parsed, ArgumentError):
                return self.refuse(parsed.message(self.name))
            return self.run(ls, parsed)

        return handle


@dataclass(frozen=True)
class AsyncCommand(Generic[Parsed]):
    """A command whose handler waits (for a trace, the worker, the client)."""

    name: str
    parse: Parser[Parsed]
    run: Callable[[FxlensServer, Parsed], Awaitable[Payload]]
    refuse: Callable[[str], Payload] = refused

    def handler(self) -> Callable[..., Awaitable[Payload]]:
        """What pygls calls; like `Command.handler`, as a coroutine function."""

        async def handle(ls: Any, *arguments: Any) -> Payload:
            parsed = self.parse(arguments)
            if isinstance(parsed, ArgumentError):
                return self.refuse(parsed.message(self.name))
            return await self.run(ls, parsed)

        return handle
