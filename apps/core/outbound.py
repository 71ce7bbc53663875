"""Outbound HTTP to model endpoints (generation, the LLM judge), only where it is allowed.

A researcher types the endpoint URL, and the worker connects to it: without a rule, that is a
way to make the worker talk to the metadata service (169.254.169.254), Redis (127.0.0.1:6379),
PostgreSQL or anything on the private network. So:

- only http:// and https:// URLs, without credentials in them;
- every address the host resolves to must be a public (global unicast) one, unless the
  deployment allows it in `OUTBOUND_ALLOWED_NETWORKS`: comma-separated CIDRs
  ("10.20.0.0/16", "127.0.0.1/32") or host:port pairs ("models.internal:8000",
  "127.0.0.1:8080") for a model served on the deployment's own network;
- the check runs when the URL is saved (on the addresses it resolves to then; a name that does
  not resolve yet is left to the call) and again when the worker connects, on the address it
  actually connects to, so a name that resolves to a public address when saved and to an
  internal one later (DNS rebinding) is refused at the call;
- redirects are never followed, and environment proxies are not used (a proxy would make the
  connection for us, past the check).

Refusals name the host and the rule, never anything the other side said.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class OutboundRefused(OSError):
    """The address is not one LaughLab may call; the message says which rule."""


@dataclass(frozen=True)
class Allowed:
    networks: tuple[Network, ...]
    # (host, port): a name or an address, lowercase, at that port only.
    endpoints: frozenset[tuple[str, int]]


def allowed_from_setting(value: str) -> Allowed:
    """Parse OUTBOUND_ALLOWED_NETWORKS; ValueError names the entry that is neither form."""
    networks: list[Network] = []
    endpoints: set[tuple[str, int]] = set()
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
            continue
        except ValueError:
            pass
        host, _, port = entry.rpartition(":")
        host = host.strip("[]").lower()
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(
                f"OUTBOUND_ALLOWED_NETWORKS: {entry!r} is neither a CIDR (10.0.0.0/8) nor a "
                "host:port (models.internal:8000)"
            )
        endpoints.add((host, int(port)))
    return Allowed(tuple(networks), frozenset(endpoints))


def _allowed() -> Allowed:
    return allowed_from_setting(str(getattr(settings, "OUTBOUND_ALLOWED_NETWORKS", "") or ""))


def _public(address: Address) -> bool:
    # is_global leaves out loopback, private, link-local, shared (100.64/10), reserved and
    # documentation ranges; multicast is global for some ranges, and never a model endpoint.
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        return _public(mapped)
    return address.is_global and not address.is_multicast


def address_problem(host: str, address: Address, port: int) -> str:
    """Why LaughLab may not connect to `address` (what `host` resolved to) at `port`; ""."""
    if _public(address):
        return ""
    allowed = _allowed()
    if any(address in network for network in allowed.networks):
        return ""
    if (host.lower(), port) in allowed.endpoints or (str(address), port) in allowed.endpoints:
        return ""
    kind = (
        "a loopback"
        if address.is_loopback
        else "a link-local"
        if address.is_link_local
        else "a private"
        if address.is_private
        else "a multicast"
        if address.is_multicast
        else "a reserved"
    )
    return (
        f"{host} is {kind} address ({address}); model endpoints must be public unless "
        "OUTBOUND_ALLOWED_NETWORKS allows it"
    )


def _resolve(host: str, port: int) -> list[Address]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def _port(scheme: str, port: int | None) -> int:
    return port if port is not None else (443 if scheme == "https" else 80)


def url_problem(url: str, *, keys_setting: str = "the API key setting") -> str:
    """Why `url` may not be called ("" when it may): the scheme, credentials, and the addresses
    the host resolves to now (a host that does not resolve now is checked when called)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return f"the URL must be an http:// or https:// address, not {url!r}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"the URL must be an http:// or https:// address, not {url!r}"
    if parts.username or parts.password:
        return f"the URL must not carry a user name or password; keys go in {keys_setting}"
    target = _port(parts.scheme, port)
    try:
        addresses = _resolve(parts.hostname, target)
    except (OSError, UnicodeError, ValueError):
        return ""
    for address in addresses:
        problem = address_problem(parts.hostname, address, target)
        if problem:
            return problem
    return ""


def _connect(host: str, port: int, timeout: Any, source_address: Any = None) -> socket.socket:
    """Resolve, check every address, and connect to the first that answers: the address
    connected to is the address checked."""
    addresses = _resolve(host, port)
    for address in addresses:
        problem = address_problem(host, address, port)
        if problem:
            raise OutboundRefused(problem)
    error: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((str(address), port), timeout, source_address)
        except OSError as exc:
            error = exc
    raise error or OSError(f"{host} resolved to no address")


class _Guarded:
    """Connects through _connect: the address rule on the address actually connected to."""

    def _guard(self) -> None:
        # http.client sets its socket factory per instance; replace it with the checked one.
        self._create_connection = self._guarded

    def _guarded(self, address: tuple[str, int], timeout: Any, source: Any = None) -> Any:
        return _connect(address[0], address[1], timeout, source)


class _GuardedHTTPConnection(_Guarded, http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard()


class _GuardedHTTPSConnection(_Guarded, http.client.HTTPSConnection):
    # TLS is set up on the checked socket with the URL's own host name (SNI and certificate).
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard()


class _GuardedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_GuardedHTTPConnection, req)


class _GuardedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_GuardedHTTPSConnection, req, context=self._context)  # type: ignore[attr-defined]


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: following it could leave the allowed set (and would send the
    API key to another address)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def opener() -> urllib.request.OpenerDirector:
    """urllib's opener for model endpoints: the address rule at connect time, no redirects, no
    environment proxies."""
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}),
        _GuardedHTTPHandler(),
        _GuardedHTTPSHandler(),
        _NoRedirects(),
    )


def refused(exc: BaseException) -> str:
    """The refusal's message when `exc` is (or wraps) an OutboundRefused, else ""."""
    reason = getattr(exc, "reason", None)
    for candidate in (exc, reason):
        if isinstance(candidate, OutboundRefused):
            return str(candidate)
    return ""
