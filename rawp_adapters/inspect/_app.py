"""The inspector's web app (Starlette): the page, the adapters it can start, and per
feed its frames as server-sent events, its control frames, replay and download."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from importlib.resources import files
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from rawp_adapters._errors import RawpError
from rawp_adapters._session import open_session
from rawp_adapters.inspect._controls import BadControl
from rawp_adapters.inspect._feed import Feed
from rawp_adapters.inspect._forms import adapter_forms, start_request
from rawp_adapters.inspect._recordings import Line
from rawp_adapters.inspect._security import TokenGuard
from rawp_adapters.inspect._sources import Live, Replay, open_recording

BATCH = 5000
"""Most records in one server-sent event."""

STOP_CHECK_S = 0.5
"""How often a page's stream, waiting for frames, looks whether the server is stopping."""

STATIC = {
    "inspector.js": "text/javascript; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
}


@dataclass
class Inspector:
    """The server's feeds and what drives them."""

    feeds: dict[str, Feed] = field(default_factory=dict)
    lives: dict[str, Live] = field(default_factory=dict)
    replays: dict[str, Replay] = field(default_factory=dict)
    task_group: TaskGroup | None = None
    record_dir: Path | None = None
    """Where each session's frames are written as they come, if anywhere."""
    stopping: bool = False
    """Set when the server is asked to stop (from a signal handler: a plain flag)."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def new_feed(self, kind: str, title: str, *, checked: bool = True) -> Feed:
        feed = Feed(f"f{next(self._ids)}", kind, title, checked=checked)
        self.feeds[feed.feed_id] = feed
        return feed

    def live(self, feed: Feed) -> Live:
        record_to = None
        if self.record_dir is not None:
            name = "".join(c if c.isalnum() or c in "-_." else "-" for c in feed.title)[:60]
            record_to = self.record_dir / f"{feed.feed_id}-{name}.jsonl"
        live = self.lives[feed.feed_id] = Live(feed, record_to=record_to)
        return live

    def start_soon(self, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        assert self.task_group is not None, "the app is not running"
        self.task_group.start_soon(run)

    def open_text(self, title: str, text: str) -> Feed:
        feed = self.new_feed("recording", title)
        self.start_soon(partial(open_recording, feed, text))
        return feed


def create_app(
    token: str, *, recordings: Sequence[tuple[str, str]] = (), record_dir: Path | None = None
) -> Starlette:
    """The app, guarded by ``token``; ``recordings`` (title, text) are open from the
    start; each session's frames go to a JSONL file in ``record_dir`` as they come."""
    inspector = Inspector(record_dir=record_dir)
    page = _asset("index.html").replace("__TOKEN__", token)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            inspector.task_group = tg
            for title, text in recordings:
                inspector.open_text(title, text)
            yield
            tg.cancel_scope.cancel()

    async def index(request: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found\n", status_code=404, media_type="text/plain")
        return Response(_asset(name), media_type=STATIC[name])

    async def adapters(request: Request) -> Response:
        forms = await anyio.to_thread.run_sync(adapter_forms)
        return JSONResponse({"adapters": forms, "workspace": str(Path.cwd())})

    async def feeds(request: Request) -> Response:
        return JSONResponse([feed.summary() for feed in inspector.feeds.values()])

    async def start(request: Request) -> Response:
        try:
            wanted = start_request(await _json(request))
        except (ValueError, RawpError) as exc:
            return _problem(str(exc))
        feed = inspector.new_feed("session", wanted.title)
        live = inspector.live(feed)
        opened = open_session(wanted.adapter, workspace=wanted.workspace, options=wanted.options)
        inspector.start_soon(partial(live.run, opened))
        return JSONResponse(feed.summary())

    async def attach(request: Request) -> Response:
        body = await _json(request)
        url, session_id = body.get("nats_url"), body.get("session_id")
        from_seq = body.get("from_seq") or 0
        prefix = body.get("prefix") or "rawp"
        if not isinstance(url, str) or not isinstance(session_id, str) or not session_id:
            return _problem("nats_url and session_id are required")
        if not isinstance(prefix, str):
            return _problem("prefix must be a string")
        if not isinstance(from_seq, int) or from_seq < 0:
            return _problem("from_seq must be a whole number, 0 or more")
        try:
            from rawp_adapters.inspect._remote import attached
        except ImportError:
            return _problem("attaching needs nats-py: pip install 'rawp-adapters[nats]'")
        # The rules judge a whole stream; one joined after its start cannot be judged.
        feed = inspector.new_feed("remote", session_id, checked=from_seq == 0)
        live = inspector.live(feed)
        inspector.start_soon(partial(live.run, attached(url, session_id, from_seq, prefix)))
        return JSONResponse(feed.summary())

    async def upload(request: Request) -> Response:
        text = (await request.body()).decode("utf-8", errors="replace")
        title = request.query_params.get("name") or "recording"
        feed = inspector.open_text(title, text)
        return JSONResponse(feed.summary())

    async def replay(request: Request) -> Response:
        source = _feed(inspector, request)
        if source is None:
            return _problem("no such feed", 404)
        lines = [Line(r.n + 1, r.raw) for r in source.records]
        feed = inspector.new_feed("replay", f"replay of {source.title}")
        player = inspector.replays[feed.feed_id] = Replay(feed, lines)
        inspector.start_soon(player.run)
        return JSONResponse(feed.summary())

    async def play(request: Request) -> Response:
        player = inspector.replays.get(request.path_params["feed_id"])
        if player is None:
            return _problem("no such replay", 404)
        body = await _json(request)
        action = body.get("action")
        if action == "step":
            player.step(int(body.get("frames") or 1))
        elif action == "play":
            speed = body.get("speed")
            if speed == "max":
                player.play(math.inf)
            elif isinstance(speed, int | float) and speed > 0:
                player.play(float(speed))
            else:
                return _problem("speed must be a number more than 0 or 'max'")
        elif action == "pause":
            player.pause()
        else:
            return _problem("action must be step, play or pause")
        return JSONResponse({"position": player.position})

    async def control(request: Request) -> Response:
        live = inspector.lives.get(request.path_params["feed_id"])
        if live is None:
            return _problem("no such session", 404)
        try:
            frame = await live.send(await _json(request))
        except BadControl as exc:
            return _problem(str(exc))
        except RawpError as exc:
            return _problem(str(exc), 409)
        return JSONResponse({"type": frame.type, "seq": frame.seq})

    async def events(request: Request) -> Response:
        feed = _feed(inspector, request)
        if feed is None:
            return _problem("no such feed", 404)
        start = request.headers.get("last-event-id") or request.query_params.get("from") or "0"
        try:
            first = max(int(start), 0)
        except ValueError:
            return _problem("from must be a whole number")
        return StreamingResponse(
            _stream(inspector, feed, first),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    async def download(request: Request) -> Response:
        feed = _feed(inspector, request)
        if feed is None:
            return _problem("no such feed", 404)
        body = "".join(record.raw + "\n" for record in feed.records)
        name = "".join(c if c.isalnum() or c in "-_." else "-" for c in feed.title)[:60]
        return Response(
            body,
            media_type="application/x-ndjson",
            headers={"content-disposition": f'attachment; filename="{name or "feed"}.jsonl"'},
        )

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/static/{name}", static),
            Route("/api/adapters", adapters),
            Route("/api/feeds", feeds),
            Route("/api/sessions", start, methods=["POST"]),
            Route("/api/remote", attach, methods=["POST"]),
            Route("/api/recordings", upload, methods=["POST"]),
            Route("/api/feeds/{feed_id}/events", events),
            Route("/api/feeds/{feed_id}/control", control, methods=["POST"]),
            Route("/api/feeds/{feed_id}/replay", replay, methods=["POST"]),
            Route("/api/feeds/{feed_id}/play", play, methods=["POST"]),
            Route("/api/feeds/{feed_id}/recording.jsonl", download),
        ],
        lifespan=lifespan,
    )
    app.add_middleware(TokenGuard, token=token)
    app.state.inspector = inspector
    return app


async def _stream(inspector: Inspector, feed: Feed, first: int) -> AsyncIterator[str]:
    """The feed from record ``first`` on, in batches. An event's first data line is
    JSON: the batch's first record number ``n0``, who sent each record (``dirs``: ``a``
    agent, ``m`` Master), when each came (``times``), every mark from index ``m0`` on,
    and the feed's state; each further data line is one record's frame as it came
    (frames are single lines, so they go as they are, not re-encoded). The last event
    is the one whose feed state says it ended."""
    sent, marks_sent, greeted, ended_sent = first, 0, False, False
    while not ended_sent:
        records = feed.records[sent : sent + BATCH]
        marks = feed.marks[marks_sent:]
        ended = feed.state == "ended" and sent + len(records) == len(feed.records)
        if records or marks or ended or not greeted:
            greeted = True
            meta = {
                "n0": sent,
                "dirs": "".join("m" if r.direction == "master" else "a" for r in records),
                "times": [r.received_ms for r in records],
                "m0": marks_sent,
                "marks": [[m.n, m.rule, m.detail] for m in marks],
                "feed": feed.summary(),
            }
            sent += len(records)
            marks_sent += len(marks)
            ended_sent = ended
            data = "".join(f"\ndata: {_one_line(r.raw)}" for r in records)
            yield f"id: {sent}\nevent: batch\ndata: {json.dumps(meta)}{data}\n\n"
            if sent < len(feed.records):
                continue
        if not ended_sent:
            with anyio.move_on_after(STOP_CHECK_S):
                await feed.wait_for_change()
            if inspector.stopping:
                return


def _one_line(raw: str) -> str:
    """A carriage return would end an event's data line; JSON never has a raw one."""
    return raw.replace("\r", "\ufffd")


def _feed(inspector: Inspector, request: Request) -> Feed | None:
    return inspector.feeds.get(request.path_params["feed_id"])


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _problem(message: str, status: int = 400) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _asset(name: str) -> str:
    return files("rawp_adapters.inspect").joinpath("static", name).read_text(encoding="utf-8")
