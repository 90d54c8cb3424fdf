#!/usr/bin/env python3
"""Serve moto's emulated AWS APIs on one port, one request at a time.

moto's own server (``moto_server``) handles requests on threads without a lock, so two
conditional writes can both pass their check before either stores its item: DynamoDB's
``attribute_not_exists`` and S3's ``If-None-Match: *`` are then not atomic. Strata's
sequencer depends on exactly that atomicity, so this launcher builds the same WSGI app
as ``moto.server`` and wraps it in a middleware that holds one lock for the whole
request, from reading its body to producing the last byte of its response.

The server stays threaded so slow or idle keep-alive connections never block others;
only the work inside moto is serialised. Do not enable moto features that make moto
call back into itself over HTTP (SNS to SQS, Lambda, ...): such a nested request would
wait for the lock its caller holds.
"""

import argparse
import functools
import os
import signal
import sys
import threading
from typing import Any, Callable, Iterable

from werkzeug.serving import make_server

import moto.core.responses
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

HEALTH_PATH = "/_strata/health"


class SerialisedApp:
    """WSGI middleware running the wrapped app under one lock, response included.

    The response is buffered while the lock is held, so the lock covers the app's
    lazy iterables and ``close`` as well, and no exception can leave it held.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == HEALTH_PATH:
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "3")])
            return [b"ok\n"]
        with self.lock:
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]


class CachingDispatcher(DomainDispatcherApplication):
    """moto's dispatcher with its host-to-backend lookup memoised.

    moto 5.2.5 lists its package directory on disk (twice) for every request to map a host
    name to a backend; the answer only depends on the host name, so it is cached. Callers
    hold the dispatcher's own lock, so the cache needs no other.
    """

    def __init__(self, create_app: Callable[..., Any]) -> None:
        super().__init__(create_app)
        self._backend_for_host: dict[str, Any] = {}

    def get_backend_for_host(self, host: str | None) -> Any:
        if host is None:
            return None
        if host not in self._backend_for_host:
            self._backend_for_host[host] = super().get_backend_for_host(host)
        return self._backend_for_host[host]


def cache_method_names() -> None:
    """Memoise moto's per-request reflection over a response class's methods.

    ``BaseResponse.call_action`` runs ``inspect.getmembers`` on its class for every request
    only to test ``action in method_names``; a class's methods never change, so the set is
    computed once per class. Without the hook (another moto version) nothing is changed.
    """
    original = getattr(moto.core.responses, "method_names_from_class", None)
    if original is None:
        return

    @functools.lru_cache(maxsize=None)
    def method_names_from_class(clazz: Any) -> frozenset[str]:
        return frozenset(original(clazz))

    moto.core.responses.method_names_from_class = method_names_from_class


class QuietHandler(MotoRequestHandler):
    """moto's request handler without the per-request access log line."""

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        pass


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=4566, help="port to bind (default 4566)")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument(
        "--no-lock",
        action="store_true",
        help="serve without the lock, like moto_server (only to demonstrate the race)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not memoise moto's per-request lookups (see CachingDispatcher)",
    )
    args = parser.parse_args(argv)

    app: Any
    if args.no_cache:
        app = DomainDispatcherApplication(create_backend_app)
    else:
        cache_method_names()
        app = CachingDispatcher(create_backend_app)
    if not args.no_lock:
        app = SerialisedApp(app)
    handler = MotoRequestHandler if args.verbose else QuietHandler
    server = make_server(args.host, args.port, app, threaded=True, request_handler=handler)

    def stop(signum: int, frame: Any) -> None:
        # shutdown blocks until serve_forever returns, so it must run on another thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"moto serving on http://{args.host}:{args.port} "
        f"({'unserialised' if args.no_lock else 'requests serialised'})",
        flush=True,
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()
        # Everything lives in memory and nothing needs flushing: skip the interpreter's
        # teardown, which takes seconds on a large heap.
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
