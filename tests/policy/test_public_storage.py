"""Buckets and registry namespaces (policy/policies/public_storage.py): each rule called directly."""

from __future__ import annotations

from typing import Any

import pytest
from support.policy import BUCKET, BUCKET_ACL, BUCKET_POLICY, NAMESPACE, resource_args, violations

from policy.policies import public_storage as pol

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


@pytest.mark.parametrize(
    ("type_token", "props"),
    [
        (BUCKET, {"name": "gpu-ci-runner-cache", "region": "fr-par"}),
        (BUCKET, {"name": "gpu-ci-runner-cache", "acl": "private"}),
        (BUCKET_ACL, {"bucket": "gpu-ci-runner-cache", "acl": "private"}),
        (
            BUCKET_POLICY,
            {
                "bucket": "gpu-ci-runner-cache",
                "policy": '{"Version": "2023-04-17", "Statement": [{"Sid": "ci", "Effect": "Allow", '
                '"Principal": {"SCW": "application_id:1234"}, "Action": "s3:*"}]}',
            },
        ),
    ],
    ids=["bucket", "private-acl", "acl-resource", "policy-for-one-app"],
)
def test_private_buckets_pass(type_token: str, props: dict[str, Any]) -> None:
    assert violations(pol.no_public_buckets, resource_args(type_token, props)) == []


@pytest.mark.parametrize(
    ("type_token", "props", "expected"),
    [
        (BUCKET, {"name": "cache", "acl": "public-read"}, "bucket 'cache': acl='public-read'"),
        (
            BUCKET_ACL,
            {
                "bucket": "cache",
                "accessControlPolicy": {
                    "grants": [{"grantee": {"type": "Group", "uri": ALL_USERS}, "permission": "READ"}]
                },
            },
            f"bucket 'cache': grant {ALL_USERS}:READ",
        ),
        (
            BUCKET_POLICY,
            {
                "bucket": "cache",
                "policy": '{"Statement": [{"Sid": "anyone", "Effect": "Allow", "Principal": "*", '
                '"Action": "s3:GetObject"}]}',
            },
            "bucket 'cache': policy statement 'anyone' allows Principal '*'",
        ),
    ],
    ids=["canned-acl", "grant-all-users", "policy-for-anyone"],
)
def test_public_buckets_fail(type_token: str, props: dict[str, Any], expected: str) -> None:
    (found,) = violations(pol.no_public_buckets, resource_args(type_token, props))
    assert found == (
        f"{expected}: Object Storage buckets must stay private (or list the bucket in this policy's "
        "allowed_public_buckets)"
    )
    config = {"allowed_public_buckets": ["cache"]}
    assert violations(pol.no_public_buckets, resource_args(type_token, props, config=config)) == []


def test_a_public_registry_namespace_fails_unless_allowed() -> None:
    private = {"name": "gpu-ci", "region": "fr-par", "isPublic": False}
    assert violations(pol.registry_namespace_private, resource_args(NAMESPACE, private)) == []
    public = {**private, "isPublic": True}
    assert violations(pol.registry_namespace_private, resource_args(NAMESPACE, public)) == [
        "registry namespace 'gpu-ci': isPublic=True: anyone could pull the training images; keep it private "
        "(gpu-ci: platform.registry.is_public: false) or list it in this policy's allowed_public_namespaces"
    ]
    config = {"allowed_public_namespaces": ["gpu-ci"]}
    assert violations(pol.registry_namespace_private, resource_args(NAMESPACE, public, config=config)) == []
