"""The images and services a runner admits, checked as gitlab-runner checks them (pure: no Pulumi import).

The Kubernetes executor expands a job's `image:` (or the `default:` one) and each of its `services:` with the
job's variables, then refuses the job unless the name matches one of `allowed_images` (`allowed_services` for a
service) with `doublestar.Match`, or is the runner's own default image. A job without an image runs the default
one. The platform gives every runner the same list (`Platform.allowed_images`): its registry's images, the
default image and `platform.runner.allowed_images`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from infra.pipeline.globs import GlobError, RunnerGlob
from infra.pipeline.jobs import image_name
from infra.pipeline.resolved import ResolvedJob
from infra.pipeline.variables import KNOWN_SHAPES, expand_text

Report = Callable[[str], None]
MAX_IMAGE_NAME = 4096
"""Characters of an image name worth matching: a registry's repository name has at most 255 (the matching is
linear, but the name comes from the pipeline)."""


class AllowedImages:
    """One runner's `allowed_images` (or `allowed_services`) and its default image."""

    def __init__(self, patterns: Sequence[str], default_image: str) -> None:
        self.patterns = tuple(patterns)
        self.default_image = default_image
        self.globs: list[RunnerGlob] = []
        self.unmodelled: list[str] = []
        for pattern in self.patterns:
            try:
                self.globs.append(RunnerGlob(pattern))
            except GlobError:
                self.unmodelled.append(pattern)

    def admits(self, image: str) -> bool | None:
        if image == self.default_image or any(glob.matches(image) for glob in self.globs):
            return True
        return None if self.unmodelled else False

    def __str__(self) -> str:
        return ", ".join(self.patterns)


def check_images(
    job: ResolvedJob,
    variables: dict[str, Any],
    allowed: AllowedImages,
    runner: str,
    *,
    violation: Report,
    warning: Report,
) -> None:
    """The job's image and services against what runner `runner` admits; `variables`: the job's, the project's
    CI/CD variables over them."""
    check = _Check({**KNOWN_SHAPES, **variables}, allowed, runner, violation, warning)
    image = job.keys.get("image")
    name = image_name(image) if image is not None else None
    if name:  # none, or empty: the runner's default image
        check.name(name, "image", "allowed_images")
    services = job.keys.get("services")
    for service in services if isinstance(services, list) else []:
        service_name = image_name(service)
        if service_name is not None:
            check.name(service_name, "service", "allowed_services")


@dataclass(frozen=True)
class _Check:
    variables: dict[str, Any]
    allowed: AllowedImages
    runner: str
    violation: Report
    warning: Report

    def name(self, name: str, what: str, setting: str) -> None:
        expanded = expand_text(name, self.variables)
        if len(expanded) > MAX_IMAGE_NAME:
            self.violation(
                f"{what} {name[:80]}… is longer than {MAX_IMAGE_NAME} characters: not an image reference (a "
                "repository name has at most 255), the job fails"
            )
            return
        if "$" in expanded:
            self.warning(f"{what} {name} is only known to GitLab: not checked against {setting}")
            return
        verdict = self.allowed.admits(expanded)
        if verdict is None:
            self.warning(
                f"{what} {expanded}: {setting} holds patterns check-ci does not model ({self.allowed.unmodelled[0]})"
            )
        elif not verdict:
            shown = expanded if expanded == name else f"{name} ({expanded})"
            self.violation(
                f"{what} {shown} is not in runner {self.runner}'s {setting} [{self.allowed}]: the runner refuses "
                "it, the job fails"
            )
