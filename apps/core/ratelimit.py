"""Fixed-window rate limits: enrolments per client address, answers per rater, failed logins per
account and per address.

Counted in the cache: `cache.add` then `cache.incr` is atomic on Redis (production, REDIS_URL)
and within one process on the local-memory cache (the demo), so a burst cannot slip past the
limit by racing.

Raters never depend on Redis: when the cache cannot be reached, the counts move to a per-process
table (each web process then enforces the limit on its own share of the traffic, so the
deployment-wide limit is at most processes × limit) and the outage is logged. The cache is tried
again after a short pause, so one outage costs one connection timeout per pause, not one per
request.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext as _

from apps.core.errors import DomainError

logger = logging.getLogger(__name__)

_UNITS = {"s": 1, "m": 60, "h": 3600}
# Seconds the cache is left alone after it failed; requests meanwhile count in-process.
CACHE_RETRY_SECONDS = 5.0


class RateLimited(DomainError):
    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def parse_rate(rate: str) -> tuple[int, int]:
    """'20/m' -> (20, 60); '0' or '' disables (limit 0)."""
    rate = rate.strip()
    if rate in ("", "0"):
        return 0, 1
    try:
        count, unit = rate.split("/")
        limit = int(count)
        if limit < 0:
            raise ValueError(count)
        return limit, _UNITS[unit]
    except (ValueError, KeyError) as exc:
        raise ImproperlyConfigured(f"rate {rate!r} must look like 20/m (per s, m or h)") from exc


class _LocalCounts:
    """Per-process fixed-window counters, used while the shared cache is unreachable."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[float, int]] = {}  # key -> (expires at, count)

    def incr(self, key: str, timeout: int) -> int:
        now = time.monotonic()
        with self._lock:
            if len(self._counts) > 10_000:
                self._counts = {k: v for k, v in self._counts.items() if v[0] > now}
            expires, count = self._counts.get(key, (now + timeout, 0))
            if expires <= now:
                expires, count = now + timeout, 0
            self._counts[key] = (expires, count + 1)
            return count + 1

    def get(self, key: str) -> int:
        now = time.monotonic()
        with self._lock:
            expires, count = self._counts.get(key, (0.0, 0))
            return count if expires > now else 0

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


_local = _LocalCounts()
_cache_down_until = [0.0]


def _cache_failed(exc: Exception) -> None:
    if time.monotonic() >= _cache_down_until[0]:
        logger.warning(
            "rate-limit cache unavailable (%s: %s); counting per process for %.0f s",
            type(exc).__name__,
            exc,
            CACHE_RETRY_SECONDS,
        )
    _cache_down_until[0] = time.monotonic() + CACHE_RETRY_SECONDS


def _cache_usable() -> bool:
    return time.monotonic() >= _cache_down_until[0]


def _incr(key: str, timeout: int) -> int:
    if _cache_usable():
        try:
            cache.add(key, 0, timeout=timeout)
            try:
                return int(cache.incr(key))
            except ValueError:  # expired between add and incr
                cache.add(key, 1, timeout=timeout)
                return 1
        except Exception as exc:  # any cache failure must not fail the request
            _cache_failed(exc)
    return _local.incr(key, timeout)


def _get(key: str) -> int:
    if _cache_usable():
        try:
            return int(cache.get(key) or 0)
        except Exception as exc:  # any cache failure must not fail the request
            _cache_failed(exc)
    return _local.get(key)


def local_counts_clear() -> None:
    """Forget the per-process counts and retry the cache at once (tests, after an outage)."""
    _local.clear()
    _cache_down_until[0] = 0.0


def _bucket_key(scope: str, key: str, window: int) -> tuple[str, int]:
    now = int(time.time())
    bucket = now // window
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"ratelimit:{scope}:{digest}:{bucket}", (bucket + 1) * window - now


def _refuse(what: str, retry_after: int) -> RateLimited:
    return RateLimited(
        _("too many %(what)s; please wait %(seconds)s seconds and try again")
        % {"what": what, "seconds": retry_after},
        retry_after=retry_after,
    )


def rate_limit_check(*, scope: str, key: str, rate: str, what: str) -> None:
    """Count one request of `key` in `scope`; raise RateLimited past the limit."""
    limit, window = parse_rate(rate)
    if limit <= 0:
        return
    cache_key, retry_after = _bucket_key(scope, key, window)
    if _incr(cache_key, window + 1) > limit:
        raise _refuse(what, retry_after)


def rate_limit_reached(*, scope: str, key: str, rate: str) -> int | None:
    """Seconds until `key` may try again if its count in `scope` is at the limit, else None.

    Counts nothing: with `rate_limit_count` it limits failures only (failed logins)."""
    limit, window = parse_rate(rate)
    if limit <= 0:
        return None
    cache_key, retry_after = _bucket_key(scope, key, window)
    return retry_after if _get(cache_key) >= limit else None


def rate_limit_count(*, scope: str, key: str, rate: str) -> None:
    limit, window = parse_rate(rate)
    if limit > 0:
        _incr(_bucket_key(scope, key, window)[0], window + 1)


def client_address(meta: dict[str, object], *, hops: int | None = None) -> str:
    """The client's address, seen through `hops` trusted proxies (TRUSTED_PROXY_HOPS).

    Every proxy appends the address it received the request from to X-Forwarded-For, so with
    N trusted proxies the Nth entry from the right is the one the outermost trusted proxy saw:
    entries left of it were written by the client and are never believed. With no trusted
    proxy the header is ignored."""
    hops = settings.TRUSTED_PROXY_HOPS if hops is None else hops
    remote = str(meta.get("REMOTE_ADDR") or "unknown")
    if hops <= 0:
        return remote
    entries = [
        part.strip() for part in str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",") if part
    ]
    entries = [entry for entry in entries if entry]
    if not entries:
        return remote
    return entries[-hops] if len(entries) >= hops else entries[0]
