"""Exceptions named after the API's error codes.

Every non-2xx answer carries {"error": {"code": ..., "message": ...}}; the
client raises the class of that code, so callers branch with except
clauses rather than on strings. A code this client does not know yet
raises EbbError itself, with the code kept.
"""

from __future__ import annotations

from typing import Optional


class EbbError(Exception):
    """An error answered by the server.

    code is the API's error code ("not_found"), message the server's text
    for people (its wording may change), status the HTTP status.
    retry_after is the seconds the server asked to wait (its Retry-After
    header), or None.
    """

    code: str = ""

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: int = 0,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"{self.code or 'error'} ({self.status}): {self.message}"


class InvalidArgument(EbbError):
    """400: malformed JSON, a bad field, name, time, duration, limit or page token."""

    code = "invalid_argument"


class Unauthenticated(EbbError):
    """401: the server has an auth file and the request has no known token."""

    code = "unauthenticated"


class PermissionDenied(EbbError):
    """403: the token has no scope for this resource."""

    code = "permission_denied"


class NotFound(EbbError):
    """404: no such index, feature, table, item or route."""

    code = "not_found"


class MethodNotAllowed(EbbError):
    """405: the route exists, but not with this method."""

    code = "method_not_allowed"


class Conflict(EbbError):
    """409: the resource exists with another configuration, or a refused change."""

    code = "conflict"


class FailedPrecondition(EbbError):
    """412: a conditional write's if_absent or if_version did not hold; nothing was written."""

    code = "failed_precondition"


class TooLarge(EbbError):
    """413: the body, a key, a value or a batch is over a limit."""

    code = "too_large"


class Expired(EbbError):
    """422: the data is already past its retention; nothing was written."""

    code = "expired"


class NoShard(EbbError):
    """422: no shard table exists for that time; nothing was written."""

    code = "no_shard"


class Internal(EbbError):
    """500: a bug or an unexpected backend failure (the detail is in the server's log)."""

    code = "internal"


class BadGateway(EbbError):
    """502: a migration's legacy table refused the server's credentials."""

    code = "bad_gateway"


class Unavailable(EbbError):
    """503: the backend is down or throttled, or the server sheds load.

    Every write is an idempotent upsert or delete, so retrying is safe;
    retry_after, when set, is how many seconds the server asked to wait.
    """

    code = "unavailable"


class InsufficientStorage(EbbError):
    """507: the server's disk is full; nothing was written."""

    code = "insufficient_storage"


ERRORS: dict[str, type[EbbError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        Unauthenticated,
        PermissionDenied,
        NotFound,
        MethodNotAllowed,
        Conflict,
        FailedPrecondition,
        TooLarge,
        Expired,
        NoShard,
        Internal,
        BadGateway,
        Unavailable,
        InsufficientStorage,
    )
}
"""The exception class of each error code."""
