"""The inspector's guard, as ASGI middleware: every request must carry the session's
token (``?token=`` or the ``X-Inspector-Token`` header), and every response forbids
what the page never needs (scripts or styles from anywhere but the server, inline
script, framing, sending the token on in a Referer)."""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_HEADER = "x-inspector-token"
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class TokenGuard:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._allowed(scope):
            await _refuse(send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _allowed(self, scope: Scope) -> bool:
        given = dict(scope.get("headers", [])).get(TOKEN_HEADER.encode())
        if given is None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0].encode()
        return hmac.compare_digest(given, self.token)


async def _refuse(send: Send) -> None:
    body = b"forbidden: open the URL rawp-adapters inspect printed (it carries the token)\n"
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
