"""Django's database sessions, each read by a statement compiled once (apps/core/compiled.py).

Every rater request loads its session; building the ORM's query for it cost more CPU than the
database spent answering it. The row is read by its key alone and its expiry compared here, so
the statement does not carry the clock: an expired session is no session, as in Django's own.
"""

from __future__ import annotations

from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.utils import timezone

from apps.core.compiled import CompiledRead

_BY_KEY = CompiledRead(lambda key: Session.objects.filter(session_key=key))


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> Session | None:
        key = self.session_key
        found = _BY_KEY(key) if key else []
        if found and found[0].expire_date > timezone.now():
            return found[0]
        self._session_key = None
        return None
