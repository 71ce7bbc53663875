"""The demo's web server: Django's development server with a fixed pool of request threads.

`runserver` starts a thread per request and closes that thread's database connection when the
request ends. On SQLite that runs the process out of file descriptors under load: SQLite cannot
close a database file while another connection in the process holds a lock on it (POSIX locks
belong to the process, and closing any descriptor of the file would drop them all), so each
close that overlaps another request leaves its descriptor open until no connection holds a lock
— a moment a busy server never reaches. After about a thousand, every request fails with
"unable to open database file".

Here a fixed pool of threads serves the requests and each keeps its connection (Django still
closes it at CONN_MAX_AGE or after an error, in `close_old_connections`), so the process holds
at most one connection per thread. A flood waits in the listen backlog instead of opening
connections. Responses say `Connection: close` (Django's server does so when it is not a
ThreadingMixIn server), so an idle keep-alive socket never holds a pool thread.
"""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.core.management.commands.runserver import Command as RunserverCommand
from django.core.servers.basehttp import WSGIServer

# Request threads: enough for a handful of raters and a researcher on a laptop; each holds one
# database connection for the life of the server.
REQUEST_THREADS = 8


class PooledWSGIServer(WSGIServer):
    # A burst of raters queues here rather than being refused.
    request_queue_size = 128

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pool = ThreadPoolExecutor(REQUEST_THREADS, thread_name_prefix="web")

    def process_request(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        self._pool.submit(self._serve, request, client_address)

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)


class PooledRunserver(RunserverCommand):
    """`runserver` serving through `PooledWSGIServer`; run it with use_threading=False, or
    Django wraps the server class in its thread-per-request mixin again."""

    server_cls = PooledWSGIServer
