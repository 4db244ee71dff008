"""What the two GitLab clients (`review.gitlab_notes`, `workload.gitlab_jobs`) say about a refusal alike.

python-gitlab is imported for its types only: whoever calls this has imported it already.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitlab.exceptions import GitlabError


def gitlab_status(err: GitlabError) -> str:
    """`403 Forbidden`, `403 insufficient_scope`: the code once, then GitLab's message."""
    message = err.error_message
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
    code = str(err.response_code)
    return text if text.startswith(code) else f"{code} {text}".strip()
