"""Keeping passwords out of the evidence: a URL is stored and shown without its password.

The password travels only in memory and, to a driver that needs it, in its
environment (PGPASSWORD, which libpq and psycopg read); never in a file of
the run directory, a log line, the history or a report.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit


def split_password(url: str | None) -> tuple[str | None, str | None]:
    """(the URL without its password, the password, decoded) - or (url, None) when it has none."""
    if url is None:
        return None, None
    parts = urlsplit(url)
    if parts.password is None:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}@{host}")), unquote(parts.password)


def redacted(url: str) -> str:
    """The URL as it may be shown or stored: its password replaced by ***."""
    bare, password = split_password(url)
    if password is None:
        return url
    parts = urlsplit(bare)
    user, host = parts.netloc.rsplit("@", 1)
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
