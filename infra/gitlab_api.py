"""What the three GitLab clients (`review.gitlab_notes`, `workload.gitlab_jobs`, check-ci `--online`) share: a
python-gitlab client whose token goes to the configured host only, and a refusal's status in one line.

Why a pinned session: python-gitlab follows what GitLab answers. A redirect to another host, or a `Link:
rel="next"` page on another host, is fetched with the same `PRIVATE-TOKEN` header (requests strips only
`Authorization` when a redirect leaves the host, and python-gitlab only warns about a foreign next page). The
session here refuses to send any request, first or followed, to an origin (scheme, host, port) other than the
configured URL's: `OffHostRequest`, before a byte leaves. python-gitlab is imported by whoever calls `connect`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

if TYPE_CHECKING:
    import gitlab
    from gitlab.exceptions import GitlabError

_DEFAULT_PORTS = {"http": 80, "https": 443}


class OffHostRequest(requests.RequestException):
    """GitLab sent the client to another host (a redirect, a next page): nothing was sent there."""


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port made explicit: `https://gitlab.com` = `https://gitlab.com:443/x`."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a port that is no number: no origin a request may go to
        port = -1
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def shown_origin(url: str) -> str:
    """The URL's origin for a message, without userinfo, path or query (never a credential)."""
    scheme, host, port = origin(url)
    default = _DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{host}" + ("" if port == default else f":{port}")


class PinnedSession(requests.Session):
    """A requests session that sends nothing to an origin other than `url`'s (redirect hops included)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.pinned = origin(url)
        self.pinned_text = shown_origin(url)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        target = request.url or ""
        if origin(target) != self.pinned:
            raise OffHostRequest(
                f"GitLab at {self.pinned_text} sent the client on to {shown_origin(target)} (a redirect or a next "
                f"page on another host): the token is sent to {self.pinned_text} only; check the URL given, or "
                "GitLab's external_url"
            )
        return super().send(request, **kwargs)


def connect(
    url: str,
    *,
    private_token: str | None = None,
    job_token: str | None = None,
    hooks: Sequence[Callable[..., Any]] = (),
    **kwargs: Any,
) -> gitlab.Gitlab:
    """A python-gitlab client on `url` whose requests never leave its origin (`PinnedSession`); `hooks` are
    requests response hooks (the workload's rate-limit notice).

    `keep_base_url`: a next-page link GitLab builds from another external_url is rewritten onto `url`, so a
    GitLab behind a proxy still pages; a link to another host that is not GitLab's API is refused."""
    import gitlab  # noqa: PLC0415 - slow to import: only the commands that talk to GitLab pay for it

    session = PinnedSession(url)
    session.hooks["response"].extend(hooks)
    return gitlab.Gitlab(
        url,
        private_token=private_token,
        job_token=job_token,
        session=session,
        keep_base_url=True,
        timeout=30,
        **kwargs,
    )


def gitlab_status(err: GitlabError) -> str:
    """`403 Forbidden`, `403 insufficient_scope`: the code once, then GitLab's message."""
    message = err.error_message
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
    code = str(err.response_code)
    return text if text.startswith(code) else f"{code} {text}".strip()
