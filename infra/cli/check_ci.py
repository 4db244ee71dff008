"""`python -m infra check-ci PATH`: check a training repository's .gitlab-ci.yml against the platform spec.

The pipeline is resolved the way GitLab resolves it (`infra.pipeline.resolve`), offline by default;
`--online` asks GitLab's CI Lint API for the merged YAML instead. Then the platform's rules run
(`infra.pipeline.rules`). Prints one line per violation (`file: job: what is wrong`) on stdout; notes
on what is not checked go to stderr as `warning:` lines. Exit 0: no violation; 1: violations; 2: the
pipeline cannot be resolved or is over a budget (one `error:` line), or the stack config, the file or GitLab
is unusable.

Every line it prints names what the pipeline names (jobs, files, tags, values): each is one line whatever they
hold (control characters, newlines and terminal escapes are escaped), credentials are redacted, and a line
longer than `MAX_LINE` characters is cut in its middle.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.cli import fail, fail_spec
from infra.config.errors import SpecError
from infra.documents import PIPELINE_FILE as PIPELINE_BUDGET
from infra.documents import DocumentError, printable, read_text
from infra.model.platform import Platform, load_platform
from infra.offline.stack_config import StackFileError, load_stack_config
from infra.pipeline.resolve import ResolveError, resolve_file, resolve_text
from infra.pipeline.rules import DEFAULT_BRANCH, CheckResult, check_resolved, platform_templates

PIPELINE_FILE = ".gitlab-ci.yml"
MAX_LINE = 400
"""Characters of one printed line: a 100 KiB job name is shown by its ends."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check-ci", help="check a training repo's .gitlab-ci.yml against the spec (routing, templates, maxima)"
    )
    parser.add_argument("path", type=Path, help=f"the pipeline file, or a repository directory holding {PIPELINE_FILE}")
    parser.add_argument("--root", type=Path, help="repository root for local includes (default: the file's directory)")
    parser.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml holds the spec (default: dev)")
    parser.add_argument("--config", type=Path, help="use this stack file instead of Pulumi.<stack>.yaml")
    parser.add_argument(
        "--default-branch",
        help="the training project's default branch, where the platform commits its templates unless "
        f"platform.ci.templates_branch says otherwise (default: $CI_DEFAULT_BRANCH, else {DEFAULT_BRANCH})",
    )
    online = parser.add_argument_group(
        "--online: GitLab merges the pipeline (token: $GITLAB_TOKEN, else $CI_JOB_TOKEN)"
    )
    online.add_argument("--online", action="store_true", help="ask GitLab's CI Lint API for the merged YAML")
    online.add_argument("--gitlab-url", help="GitLab instance (default: platform.gitlab.url)")
    online.add_argument("--project", help="project id or path (default: platform.gitlab.project)")
    online.add_argument("--ref", help="branch or tag whose files GitLab reads local includes from (default branch)")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    path: Path = args.path / PIPELINE_FILE if _is_folder(args.path) else args.path
    if not os.path.lexists(path):
        return fail(line(f"no pipeline file {path}"))
    try:
        platform = load_platform(load_stack_config(args.stack, path=args.config).get("platform"))
    except SpecError as err:
        return fail_spec(err, args.stack, args.config)
    except (FileNotFoundError, StackFileError) as err:
        return fail(str(err))
    try:
        if args.online:
            result = _check_online(args, path, platform, env)
        else:
            branch = args.default_branch or env.get("CI_DEFAULT_BRANCH") or DEFAULT_BRANCH
            pipeline = resolve_file(path, args.root, platform_templates(platform, branch))
            result = check_resolved(pipeline, platform)
    except ResolveError as err:
        return fail(line(str(err) or "unknown error"))
    except _OnlineError as err:
        return fail("\n".join(line(message) for message in err.args))
    return _report(result)


def _is_folder(path: Path) -> bool:
    """Whether `path` is a folder; a path that cannot be looked at is not (reading it then says why)."""
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def line(text: str) -> str:
    """`text` as one printable line: credentials redacted, every control or format character escaped (a job
    name holding a newline cannot forge a second line, an escape sequence cannot repaint the terminal), and cut
    in its middle past `MAX_LINE` characters."""
    text = printable(text, None)
    if len(text) > MAX_LINE:
        head = MAX_LINE * 5 // 8
        text = f"{text[:head]} … {text[head - MAX_LINE + 3 :]}"
    return text


def _report(result: CheckResult) -> int:
    for warning in result.warnings:
        print(f"warning: {line(warning)}", file=sys.stderr)
    for violation in result.violations:
        print(line(str(violation)))
    if result.violations:
        print(f"{len(result.violations)} violation(s) in {result.jobs_checked} jobs", file=sys.stderr)
        return 1
    print(f"{result.jobs_checked} jobs checked: no violation", file=sys.stderr)
    return 0


class _OnlineError(Exception):
    """GitLab could not be asked, or refused the configuration; one line per argument."""


def _check_online(args: argparse.Namespace, path: Path, platform: Platform, env: Mapping[str, str]) -> CheckResult:
    """GitLab merges the pipeline (includes, extends, references); the same rules check the result."""
    from infra.gitlab_api import connection_problem, messages  # noqa: PLC0415 - requests: offline pays nothing

    token, job_token = env.get("GITLAB_TOKEN"), env.get("CI_JOB_TOKEN")
    if not (token or job_token):
        raise _OnlineError("--online needs a GitLab token: set GITLAB_TOKEN (CI_JOB_TOKEN inside a CI job)")
    url = args.gitlab_url or platform.spec.gitlab.url
    project = args.project or platform.spec.gitlab.project
    url_from = "--gitlab-url" if args.gitlab_url else "platform.gitlab.url"
    if problem := connection_problem(
        url, token or job_token or "", url_from, "$GITLAB_TOKEN" if token else "$CI_JOB_TOKEN"
    ):
        raise _OnlineError(problem)
    try:
        content = read_text(path, PIPELINE_BUDGET, root=args.root or path.parent, name=path.name)
    except DocumentError as err:
        raise _OnlineError(str(err)) from None
    lint = _ci_lint(url, project, content, args.ref, token=token, job_token=None if token else job_token)
    errors = messages(lint.get("errors"))
    if errors or lint.get("valid") is not True:  # `"false"`, `1` or no `valid` at all is no verdict of valid
        raise _OnlineError(
            *(errors or [f"GitLab does not say {path.name} is valid (valid: {printable(repr(lint.get('valid')), 40)})"])
        )
    merged = lint.get("merged_yaml")
    if not isinstance(merged, str):
        raise _OnlineError(f"GitLab's CI Lint answer for {project} holds no merged_yaml")
    pipeline = resolve_text(merged, f"{path.name} (merged by GitLab)")
    pipeline.warnings[:0] = [f"GitLab: {w}" for w in messages(lint.get("warnings"))]
    return check_resolved(pipeline, platform)


def _ci_lint(
    url: str, project: str, content: str, ref: str | None, *, token: str | None, job_token: str | None
) -> dict[str, Any]:
    """`POST /projects/:id/ci/lint` with `dry_run` (a pipeline creation simulation): GitLab's answer."""
    # python-gitlab is imported here: the offline check must not pay for it.
    import gitlab  # noqa: PLC0415
    import requests  # noqa: PLC0415

    from infra.gitlab_api import RefusedAnswer, connect  # noqa: PLC0415

    client = connect(url, private_token=token, job_token=job_token)
    data: dict[str, Any] = {"content": content, "dry_run": True, "include_jobs": True}
    if ref:
        data["ref"] = ref
    try:
        result = client.projects.get(project, lazy=True).ci_lint.create(data)
    except gitlab.exceptions.GitlabAuthenticationError as err:
        raise _OnlineError(f"GitLab at {url} refused the token (401: {printable(str(err.error_message))})") from None
    except gitlab.exceptions.GitlabError as err:
        code = err.response_code
        reasons = {
            403: f"the token may not use the CI Lint API of {project} (403: it needs the api scope and "
            "Developer access)",
            404: f"GitLab at {url} has no project {project}, or the token cannot see it (404)",
        }
        said = printable(str(err.error_message))
        raise _OnlineError(reasons.get(code or 0, f"GitLab at {url} answered {code}: {said}")) from None
    except RefusedAnswer as err:  # another host, an answer over budget, a lasting 429
        raise _OnlineError(str(err)) from None
    except requests.exceptions.RequestException as err:
        reason = err.__class__.__name__
        raise _OnlineError(f"cannot reach GitLab at {url} ({reason})") from None
    return dict(result.attributes)
