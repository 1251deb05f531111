"""An OTLP/HTTP collector for tests: what a process exports, decoded."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class Collector:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps what is posted to it, by path."""

    def __init__(self) -> None:
        self.posts: dict[str, list[bytes]] = {}
        self.url = ""

    @contextmanager
    def running(self) -> Iterator[Collector]:
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                posts.setdefault(self.path, []).append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()

    def span_names(self) -> dict[str, tuple[str, str]]:
        """Each exported span's name: its trace id and its parent's span id (hex)."""
        spans: dict[str, tuple[str, str]] = {}
        for body in self.posts.get("/v1/traces", []):
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        spans[span.name] = (span.trace_id.hex(), span.parent_span_id.hex())
        return spans
