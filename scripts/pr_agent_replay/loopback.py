"""Serving a fake on this machine's loopback interface."""

import threading
from http.server import ThreadingHTTPServer


def serve(handler, **attrs):
    """Starts `handler` (with `attrs` as class attributes) on a free loopback port in a daemon
    thread; returns (server, base URL)."""
    bound = type(handler.__name__, (handler,), attrs)
    server = ThreadingHTTPServer(("127.0.0.1", 0), bound)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
