"""Faults on cue: an HTTP endpoint on a second local port that applies the closed world's faults to a running
`groupspec serve` (`groupspec serve ctl ...`, or curl from any test suite).

    POST /hold[?ms=N]          hold appends (until /release, or for N ms)
    POST /release[?error=E]    complete the held appends with E (NONE) and stop holding
    POST /fail-next?error=E    the next append fails with E
    POST /move[?ms=N]          the coordinator moves away (until /load, or for N ms)
    POST /load                 it comes back, its groups loaded from the log
    POST /expire-offsets       the offset expiry sweep, now
    POST /drop[?client=ID]     close the connections of client id ID (every one)
    GET  /status               the coordinator, its groups, the held appends, the connections

Each answer is one JSON object; a request the server cannot apply gets 400 and {"error": what was wrong}.
The endpoint is the standard library's threaded HTTP server on its own thread; each fault runs on the
server's event loop (the coordinator is never touched from two threads).
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import parse_qs, urlsplit

from groupspec.spec.kafka import brief

from .server import Server

log = logging.getLogger("groupspec.serve")

MAX_MS = 24 * 3_600_000       # a day: a hold or a move longer than that is a typo
ANSWER_S = 10                 # how long a fault may take on the server's loop before the endpoint gives up


class BadRequest(ValueError):
    """A fault the server cannot apply as asked (one line: what was wrong, how to ask)."""


def _ms(args: dict) -> int | None:
    text = args.get("ms")
    if text is None:
        return None
    if not text.isdigit() or int(text) > MAX_MS:
        raise BadRequest(f"ms={brief(text)}: give a whole number of milliseconds from 0 to {MAX_MS}")
    return int(text)


def _error(args: dict, default: str | None = None) -> str:
    error = args.get("error", default)
    if error is None:
        raise BadRequest("give the error, e.g. ?error=NOT_ENOUGH_REPLICAS")
    return error


# path -> (method, what it does with the server and the query's arguments)
ROUTES: dict[str, tuple[str, Callable[[Server, dict], dict]]] = {
    "/hold": ("POST", lambda s, a: s.hold(_ms(a))),
    "/release": ("POST", lambda s, a: s.release(_error(a, "NONE"))),
    "/fail-next": ("POST", lambda s, a: s.fail_next(_error(a))),
    "/move": ("POST", lambda s, a: s.move(_ms(a))),
    "/load": ("POST", lambda s, a: s.load()),
    "/expire-offsets": ("POST", lambda s, a: s.expire_offsets()),
    "/drop": ("POST", lambda s, a: s.drop(a.get("client"))),
    "/status": ("GET", lambda s, a: s.status()),
}


def _apply(server: Server, path: str, method: str, query: str) -> tuple[int, dict]:
    """(HTTP status, JSON answer) of one admin request; runs on the server's loop."""
    route = ROUTES.get(path)
    if route is None:
        return 404, {"error": f"no {brief(path)} here; the admin endpoint has " + ", ".join(
            f"{m} {p}" for p, (m, _f) in ROUTES.items())}
    want, fault = route
    if method != want:
        return 405, {"error": f"{path} is {want}, not {method}"}
    args = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    try:
        return 200, fault(server, args)
    except ValueError as e:       # BadRequest, and the runtime's refusals (an error Kafka's storage never gives)
        return 400, {"error": str(e)}


class Admin:
    """The admin endpoint of `server`, whose event loop is `loop`, on 127.0.0.1:`port` (0: a free one)."""

    def __init__(self, server: Server, loop: asyncio.AbstractEventLoop, port: int):
        admin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):       # noqa: N802 - http.server's names
                admin._handle(self, "GET")

            def do_POST(self):      # noqa: N802
                admin._handle(self, "POST")

            def log_message(self, fmt, *args):       # one log line per fault, in the server's log
                log.info("admin: %s", fmt % args)

        self.server, self.loop = server, loop
        self.http = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.http.daemon_threads = True
        self.port = self.http.server_address[1]
        self._thread = threading.Thread(target=self.http.serve_forever, name="groupspec-serve-admin", daemon=True)

    def start(self) -> "Admin":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()

    def _handle(self, request: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(request.path)

        async def on_loop():
            return _apply(self.server, url.path, method, url.query)
        try:
            status, answer = asyncio.run_coroutine_threadsafe(on_loop(), self.loop).result(ANSWER_S)
        except Exception as e:      # noqa: BLE001 - the loop is gone or stuck: say so, never hang the caller
            status, answer = 503, {"error": f"the server did not apply it ({type(e).__name__}: {brief(str(e))})"}
        body = (json.dumps(answer, sort_keys=True) + "\n").encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)
