"""Fixed-window rate limits on the cache: enrolments per client address, answers per rater.

`cache.add` then `cache.incr` is atomic on Redis (production, REDIS_URL) and within one process
on the local-memory cache (the demo), so a burst cannot slip past the limit by racing.
"""

from __future__ import annotations

import time

from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured

from apps.core.errors import DomainError

_UNITS = {"s": 1, "m": 60, "h": 3600}


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
        return int(count), _UNITS[unit]
    except (ValueError, KeyError) as exc:
        raise ImproperlyConfigured(f"rate {rate!r} must look like 20/m (per s, m or h)") from exc


def rate_limit_check(*, scope: str, key: str, rate: str, what: str) -> None:
    """Count one request of `key` in `scope`; raise RateLimited past the limit."""
    limit, window = parse_rate(rate)
    if limit <= 0:
        return
    now = int(time.time())
    bucket = now // window
    cache_key = f"ratelimit:{scope}:{key}:{bucket}"
    cache.add(cache_key, 0, timeout=window + 1)
    try:
        count = cache.incr(cache_key)
    except ValueError:  # expired between add and incr
        cache.add(cache_key, 1, timeout=window + 1)
        count = 1
    if count > limit:
        retry_after = (bucket + 1) * window - now
        raise RateLimited(
            f"too many {what}; please wait {retry_after} seconds and try again",
            retry_after=retry_after,
        )


def client_address(meta: dict[str, object], *, behind_proxy: bool) -> str:
    """The client's address: the first X-Forwarded-For entry when a trusted proxy adds it."""
    if behind_proxy:
        forwarded = str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",")[0].strip()
        if forwarded:
            return forwarded
    return str(meta.get("REMOTE_ADDR", "unknown"))
