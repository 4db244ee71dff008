"""GitlabCi: the CI templates committed to the training project, and its CI/CD variables.

Fed by `platform.ci`, `platform.gitlab` and the profiles. The templates file is the text
`infra.render.ci_templates` renders (also written by `python -m infra plan --out`), committed with
`gitlab.RepositoryFile` to the path and branch the spec names; the training project's `.gitlab-ci.yml`
`include:`s it. A file already at that path is only taken over with `ci.adopt_existing_templates: true`
(`overwrite_on_create`); otherwise the create fails with GitLab's "file exists". Variables go to the
project or its group: `REGISTRY` (the registry namespace's endpoint; `ci.registry_variable` renames it)
and the spec's own, secret ones masked and protected with their value kept a Pulumi secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

import pulumi
import pulumi_gitlab as gitlab

from infra.cloud.names import CI_TOKEN, child_name
from infra.config.ci import CiSpec, CiVariableSpec
from infra.config.gitlab import GitlabSpec

COMMIT_AUTHOR = "gpu-ci (Pulumi)"


class _VariableArgs(TypedDict):
    key: str
    value: pulumi.Input[str]
    masked: bool
    protected: bool
    raw: bool
    description: str | None
    environment_scope: str
    opts: pulumi.ResourceOptions


@dataclass(frozen=True)
class GitlabCiArgs:
    """Where (GitLab), what (the CI section and the rendered templates file), the registry endpoint, and the
    stack secrets the variables read."""

    gitlab: GitlabSpec
    ci: CiSpec
    templates: str
    """The templates file's text (`infra.render.ci_templates`)."""
    registry_endpoint: pulumi.Input[str]
    secrets: Mapping[str, pulumi.Input[str]] | None = None


class GitlabCi(pulumi.ComponentResource):
    """Templates file and variables of the training project."""

    templates: pulumi.Output[str]
    """The committed templates text."""
    templates_commit: pulumi.Output[str]
    """Commit that last wrote the templates file."""
    variables: dict[str, pulumi.Output[str]]
    """Ids of the CI/CD variables it manages, by key."""

    def __init__(self, name: str, args: GitlabCiArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CI_TOKEN, name, {}, opts)
        secrets = args.secrets or {}
        text = args.templates
        branch: pulumi.Input[str] | None = args.ci.templates_branch
        if branch is None:
            branch = gitlab.get_project_output(
                path_with_namespace=args.gitlab.project, opts=pulumi.InvokeOutputOptions(parent=self)
            ).default_branch
        templates = gitlab.RepositoryFile(
            child_name("templates", name),
            project=args.gitlab.project,
            file_path=args.ci.templates_path,
            branch=branch,
            content=text,
            encoding="text",
            author_name=COMMIT_AUTHOR,
            commit_message="gpu-ci: update the CI templates (generated from the platform spec)",
            overwrite_on_create=args.ci.adopt_existing_templates,
            opts=pulumi.ResourceOptions(parent=self),
        )
        plain = CiVariableSpec(value="", description="Container registry of the training images (gpu-ci)")
        managed: dict[str, tuple[CiVariableSpec, pulumi.Input[str]]] = {
            args.ci.registry_variable: (plain, args.registry_endpoint)
        }
        for key, variable in sorted(args.ci.variables.items()):
            if variable.secret is not None:
                managed[key] = (variable, pulumi.Output.secret(secrets[variable.secret]))
            else:
                managed[key] = (variable, variable.value or "")  # a plain variable has a value (CiVariableSpec)
        self.variables = {
            key: self._variable(name, args, key, variable, value).id
            for key, (variable, value) in sorted(managed.items())
        }
        self.templates = pulumi.Output.from_input(text)
        self.templates_commit = templates.last_commit_id
        self.register_outputs(
            {"templates": self.templates, "templates_commit": self.templates_commit, "variables": self.variables}
        )

    def _variable(
        self, name: str, args: GitlabCiArgs, key: str, variable: CiVariableSpec, value: pulumi.Input[str]
    ) -> pulumi.CustomResource:
        resource_name = child_name(f"var-{key}", name)
        common: _VariableArgs = {
            "key": key,
            "value": value,
            "masked": variable.effective_masked,
            "protected": variable.effective_protected,
            "raw": variable.raw,
            "description": variable.description,
            "environment_scope": variable.environment_scope,
            "opts": pulumi.ResourceOptions(parent=self),
        }
        if args.ci.variables_scope == "group":
            # a group scope needs the group (gitlab_problems)
            return gitlab.GroupVariable(resource_name, group=args.gitlab.group or "", **common)
        return gitlab.ProjectVariable(resource_name, project=args.gitlab.project, **common)
