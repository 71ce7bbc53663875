"""Django's PostgreSQL backend, whose health check of a kept connection looks at its socket
before it asks the server.

With persistent connections (`DB_CONN_MAX_AGE`) and health checks on, Django checks a kept
connection at its first use in each request, by running `SELECT 1`: one round trip on every
request, before its own first statement, and not among the statements a request is counted by.
In the load benchmark's capacity run it was about a tenth of the web workers' wall time
(benchmarks/load/README.md).

An idle connection outside a transaction has nothing to read unless the server sent something
of its own accord. A server that ends the connection (a restart, `pg_terminate_backend`, an
idle timeout) sends its error and closes the socket, so the socket turns readable. So: nothing
to read means usable, without a statement; anything to read (that error, or a notice, which is
harmless) is settled by the server, with Django's own `SELECT 1`. A peer that vanished without a
word (a host powered off) is not seen either way until a statement times out; Django's check
could not see it sooner.

`DB_HEALTH_CHECK_QUERY=1` asks the server on every request, as Django does.
"""

from __future__ import annotations

import select

from django.conf import settings
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper


class DatabaseWrapper(PostgresDatabaseWrapper):
    def is_usable(self) -> bool:
        if self.connection is None or self.connection.closed:
            return False
        if getattr(settings, "DB_HEALTH_CHECK_QUERY", False):
            return bool(super().is_usable())
        try:
            readable, _, _ = select.select([self.connection.fileno()], [], [], 0)
        except (OSError, ValueError):  # the socket is gone already
            return False
        return not readable or bool(super().is_usable())
