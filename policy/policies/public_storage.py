"""Storage nobody outside reads: Object Storage buckets (canned ACL, grants, bucket policy) and Container
Registry namespaces are private unless the policy config allows one by name."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from . import definitions
from .inputs import as_list, config_list, config_value, known, physical_name, show

# Resource type tokens (each with the deprecated flat token of the same resource, in case a stack uses it).
BUCKET_TYPES = frozenset({"scaleway:object/bucket:Bucket", "scaleway:index/objectBucket:ObjectBucket"})
BUCKET_ACL_TYPES = frozenset({"scaleway:object/bucketAcl:BucketAcl", "scaleway:index/objectBucketAcl:ObjectBucketAcl"})
BUCKET_POLICY_TYPES = frozenset(
    {"scaleway:object/bucketPolicy:BucketPolicy", "scaleway:index/objectBucketPolicy:ObjectBucketPolicy"}
)
REGISTRY_NAMESPACE_TYPES = frozenset(
    {"scaleway:registry/namespace:Namespace", "scaleway:index/registryNamespace:RegistryNamespace"}
)

PUBLIC_CANNED_ACLS = frozenset({"public-read", "public-read-write", "authenticated-read"})
PUBLIC_GRANTEE_GROUPS = ("/global/AllUsers", "/global/AuthenticatedUsers")


def _public_grants(props: Mapping[str, Any]) -> list[str]:
    grants = as_list(known(props, "accessControlPolicy", "grants"))
    return [
        f"{known(g, 'grantee', 'uri')}:{known(g, 'permission')}"
        for g in grants
        if str(known(g, "grantee", "uri") or "").endswith(PUBLIC_GRANTEE_GROUPS)
    ]


def _public_statements(policy: Any) -> list[str]:
    """Sids (or indexes) of bucket-policy statements that allow anyone ("Principal": "*")."""
    try:
        document = json.loads(policy) if isinstance(policy, str) else policy
    except json.JSONDecodeError:
        return []
    statements = document.get("Statement") if isinstance(document, Mapping) else None
    if isinstance(statements, Mapping):
        statements = [statements]
    public = []
    for index, statement in enumerate(as_list(statements)):
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        principal = statement.get("Principal")
        principals = principal.values() if isinstance(principal, Mapping) else [principal]
        if any(p == "*" or (isinstance(p, list) and "*" in p) for p in principals):
            public.append(str(statement.get("Sid") or index))
    return public


def no_public_buckets(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No Object Storage bucket is readable by anyone: a canned public ACL, a grant to AllUsers or
    AuthenticatedUsers, or a bucket policy allowing Principal "*".

    Why: the runner cache and training artifacts hold code, data and checkpoints.
    """
    kind = args.resource_type
    if kind not in BUCKET_TYPES | BUCKET_ACL_TYPES | BUCKET_POLICY_TYPES:
        return
    bucket = known(args.props, "name" if kind in BUCKET_TYPES else "bucket") or args.name
    if bucket in as_list(config_value(args, "allowed_public_buckets", [])):
        return
    where = f"bucket '{bucket}'"
    why = "Object Storage buckets must stay private (or list the bucket in this policy's allowed_public_buckets)"
    if kind in BUCKET_POLICY_TYPES:
        for sid in _public_statements(args.props.get("policy")):
            report_violation(f"{where}: policy statement {sid!r} allows Principal '*': {why}", None)
        return
    acl = args.props.get("acl")
    if acl in PUBLIC_CANNED_ACLS:
        report_violation(f"{where}: acl={show(acl)}: {why}", None)
    if kind in BUCKET_ACL_TYPES:
        for grant in _public_grants(args.props):
            report_violation(f"{where}: grant {grant}: {why}", None)


def registry_namespace_private(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The Container Registry namespace is private unless explicitly allowed.

    Why: training images carry the code and, often, baked-in data or weights.
    """
    if args.resource_type not in REGISTRY_NAMESPACE_TYPES:
        return
    name = physical_name(args)
    if definitions.namespace_public(args.props.get("isPublic"), name, config_list(args, "allowed_public_namespaces")):
        report_violation(
            f"registry namespace '{name}': isPublic=True: anyone could pull the training images; keep it private "
            "(gpu-ci: platform.registry.is_public: false) or list it in this policy's allowed_public_namespaces",
            None,
        )
