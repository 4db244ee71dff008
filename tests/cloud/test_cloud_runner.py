"""RunnerFleet under mocks: per GPU pool a registration, a token Secret and a Helm release; the namespace's
admission labels and NetworkPolicies; what the engine would receive for each."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from infra.cloud.names import T
from infra.cloud.runner import RunnerFleet, RunnerFleetArgs, RunnerRelease
from infra.config.runner import CACHE_ACCESS_KEY_CONFIG, CACHE_SECRET_KEY_CONFIG
from infra.model.platform import load_platform
from infra.offline.mocks import (
    MOCK_GROUP_ID,
    MOCK_PROJECT_ID,
    MOCK_RUNNER_TOKEN_PREFIX,
    RecordedResource,
    RecordingMonitor,
    is_secret,
)
from infra.render.runner import runner_helm_values

DOCKER_CONFIG = '{"auths": {"rg.fr-par.scw.cloud": {"username": "nologin", "password": "pull-key"}}}'


def _by_name(monitor: RecordingMonitor) -> dict[str, RecordedResource]:
    return {r.name: r for r in monitor.recorded}


def _runner(config: dict[str, Any], **extra: Any) -> RunnerFleet:
    provider = k8s.Provider("k8s", kubeconfig="apiVersion: v1\nkind: Config\n")
    platform = load_platform(config)
    spec = platform.spec
    extra.setdefault("registry_docker_config", pulumi.Output.secret(DOCKER_CONFIG))
    extra.setdefault("pull_secret_required", spec.registry.needs_pull_secret)
    runners = [RunnerRelease(r, runner_helm_values(platform, r)) for r in platform.runners.values()]
    args = RunnerFleetArgs(
        runners=runners, settings=spec.runner, gitlab=spec.gitlab, region=spec.region, provider=provider, **extra
    )
    return RunnerFleet("runner", args)


def _settled(runner: RunnerFleet) -> pulumi.Output[Any]:
    return pulumi.Output.all(runner.runner_ids, runner.namespace, runner.release_statuses)


@pulumi.runtime.test
def test_registration_is_a_tagged_project_runner(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    runner = _runner(dev_platform)

    def check(values: list[Any]) -> None:
        registration = _by_name(pulumi_mocks)["runner-registration"]
        assert registration.type == T.USER_RUNNER
        assert registration.plain_inputs == {
            "runnerType": "project_type",
            "projectId": MOCK_PROJECT_ID,
            "description": "gpu-ci: Kapsule GPU runner (managed by Pulumi) - pool ci-compile",
            "tagLists": ["kapsule", "gpu", "ci-compile"],
            "untagged": False,
            "locked": True,
            "accessLevel": "not_protected",
            "maximumTimeout": 3 * 3600 + 30 * 60,  # 3h30m: the 147-min hyperopt trial and a 49-min wait
        }
        assert "token" in registration.options["additional_secret_outputs"]
        assert values[0]["ci-compile"] == registration.id
        # The other GPU pool's runner: its own registration, holding its pool's tags only.
        training = _by_name(pulumi_mocks)["runner-ci-training-registration"]
        assert training.plain_inputs["tagLists"] == ["kapsule", "ci-training"]
        assert values[0]["ci-training"] == training.id != registration.id
        assert (
            pulumi_mocks.mocks.invokes
            == [("gitlab:index/getProject:getProject", {"pathWithNamespace": "ml-team/training"})] * 2
        )

    return _settled(runner).apply(check)


@pulumi.runtime.test
def test_group_scope_registers_on_the_group(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    dev_platform["gitlab"]["runner_scope"] = "group"
    runner = _runner(dev_platform)

    def check(_: Any) -> None:
        for name in ("runner-registration", "runner-ci-training-registration"):
            inputs = _by_name(pulumi_mocks)[name].plain_inputs
            assert (inputs["runnerType"], inputs["groupId"]) == ("group_type", MOCK_GROUP_ID)
            assert "projectId" not in inputs and "locked" not in inputs

    return _settled(runner).apply(check)


@pulumi.runtime.test
def test_token_reaches_only_the_secret_and_as_a_secret(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    runner = _runner(dev_platform)

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        tokens = set()
        for name, secret_name in (
            ("runner-token", "gitlab-runner-token"),
            ("runner-ci-training-token", "gitlab-runner-ci-training-token"),
        ):
            secret = res[name]
            assert secret.type == T.SECRET
            assert secret.plain_inputs["metadata"]["name"] == secret_name
            assert secret.plain_inputs["metadata"]["namespace"] == "gitlab-runner"
            data = secret.inputs["stringData"]
            assert is_secret(data) or is_secret(data["runner-token"])
            token = secret.plain_inputs["stringData"]["runner-token"]
            assert token.startswith(MOCK_RUNNER_TOKEN_PREFIX)
            assert secret.plain_inputs["stringData"]["runner-registration-token"] == ""
            for other in pulumi_mocks.recorded:
                if other.name != name:
                    assert token not in repr(other.plain_inputs), f"token leaked into {other.name}"
            tokens.add(token)
        assert len(tokens) == 2  # one token per runner

    return _settled(runner).apply(check)


@pulumi.runtime.test
def test_release_is_the_pinned_chart_with_the_rendered_values(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    runner = _runner(dev_platform)
    platform = load_platform(dev_platform)

    def check(values: list[Any]) -> None:
        res = _by_name(pulumi_mocks)
        for pool, prefix, name in (
            ("ci-compile", "runner", "gitlab-runner"),
            ("ci-training", "runner-ci-training", "gitlab-runner-ci-training"),
        ):
            release = res[f"{prefix}-release"]
            inputs = release.plain_inputs
            assert release.type == T.HELM_RELEASE
            assert (inputs["name"], inputs["chart"], inputs["version"]) == (name, "gitlab-runner", "0.86.0")
            assert inputs["repositoryOpts"] == {"repo": "https://charts.gitlab.io"}
            assert inputs["namespace"] == "gitlab-runner"
            # Helm does not wait for the new manager: the old one may drain for up to the job timeout.
            assert (inputs["skipAwait"], inputs["timeout"]) == (True, 600)
            assert "atomic" not in inputs
            expected = runner_helm_values(platform, platform.runners[pool])
            expected["podAnnotations"] = {  # a new token rolls the pod; the autoscaler never evicts a draining one
                "gpu-ci/runner-id": res[f"{prefix}-registration"].id,
                "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
            }
            assert inputs["values"] == expected
            assert not is_secret(release.inputs["values"]), "values hold no secret, so reviewers can read them"
            assert release.options["provider"].startswith(res["k8s"].urn)
            for dependency in (
                "runner-namespace",
                f"{prefix}-token",
                "runner-registry-pull",
                "runner-netpol-default-deny",
            ):
                assert res[dependency].urn in release.options["dependencies"]
            assert values[2][pool] == "deployed"
        assert res["runner-namespace"].plain_inputs["metadata"]["name"] == "gitlab-runner"

    return _settled(runner).apply(check)


@pulumi.runtime.test
def test_pull_secret_carries_the_registry_credential(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    runner = _runner(dev_platform)

    def check(_: Any) -> None:
        pull = _by_name(pulumi_mocks)["runner-registry-pull"]
        assert pull.plain_inputs["type"] == "kubernetes.io/dockerconfigjson"
        assert pull.plain_inputs["metadata"]["name"] == "registry-pull"
        assert pull.plain_inputs["stringData"] == {".dockerconfigjson": DOCKER_CONFIG}
        data = pull.inputs["stringData"]
        assert is_secret(data) or is_secret(data[".dockerconfigjson"])

    return _settled(runner).apply(check)


def test_pull_secret_and_registry_privacy_must_agree(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> None:
    """The runner config names the pull Secret exactly when the registry is private: no half-configured pulls."""
    with pytest.raises(ValueError, match="exactly when the registry is private"):
        _runner(dev_platform, registry_docker_config=None)
    dev_platform["registry"]["is_public"] = True
    with pytest.raises(ValueError, match="exactly when the registry is private"):
        _runner(dev_platform)


@pulumi.runtime.test
def test_cache_bucket_expires_objects_and_keys_stay_secret(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    dev_platform["runner"]["cache"] = {"bucket": "gpu-ci-runner-cache", "expire_days": 14}
    secrets = {
        CACHE_ACCESS_KEY_CONFIG: pulumi.Output.secret("SCWCACHEACCESSKEY0000"),
        CACHE_SECRET_KEY_CONFIG: pulumi.Output.secret("cache-secret-key"),
    }
    runner = _runner(dev_platform, secrets=secrets)

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        bucket = res["runner-cache-bucket"].plain_inputs
        assert (bucket["name"], bucket["region"]) == ("gpu-ci-runner-cache", "fr-par")
        assert bucket["lifecycleRules"] == [{"id": "expire-cache", "enabled": True, "expiration": {"days": 14}}]
        cache = res["runner-cache"]
        assert cache.plain_inputs["metadata"]["name"] == "runner-cache-s3"
        assert cache.plain_inputs["stringData"] == {
            "accesskey": "SCWCACHEACCESSKEY0000",
            "secretkey": "cache-secret-key",
        }
        data = cache.inputs["stringData"]
        assert is_secret(data) or all(is_secret(v) for v in data.values())
        values = res["runner-release"].plain_inputs["values"]
        assert values["runners"]["cache"] == {"secretName": "runner-cache-s3"}
        assert "cache-secret-key" not in repr(values)
        # The chart reads the key at start only: the Secret's uid in every manager's pod annotations rolls the
        # pods when a new key replaces the Secret.
        for release in ("runner-release", "runner-ci-training-release"):
            annotations = res[release].plain_inputs["values"]["podAnnotations"]
            assert annotations["gpu-ci/cache-secret-uid"] == cache.outputs["metadata"]["uid"] == cache.id
        assert cache.urn in res["runner-release"].options["dependencies"]

    return _settled(runner).apply(check)


@pulumi.runtime.test
def test_namespace_enforces_pod_security_and_denies_by_default(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    runner = _runner(dev_platform)

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        labels = res["runner-namespace"].plain_inputs["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "baseline"  # no privileged or hostPath pod
        assert labels["pod-security.kubernetes.io/warn"] == "restricted"
        policies = {r.name: r.plain_inputs for r in pulumi_mocks.recorded if r.type == T.NETWORK_POLICY}
        assert set(policies) == {
            "runner-netpol-default-deny",
            "runner-netpol-jobs-egress",
            "runner-netpol-managers-egress",
        }
        deny = policies["runner-netpol-default-deny"]["spec"]
        assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}  # nothing in, nothing out
        jobs = policies["runner-netpol-jobs-egress"]["spec"]
        assert jobs["podSelector"] == {"matchLabels": {"gpu-ci/role": "job"}}
        assert "ingress" not in jobs  # no pod may connect to a job
        dns, internet = jobs["egress"]
        assert dns["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
        block = internet["to"][0]["ipBlock"]
        assert block["cidr"] == "0.0.0.0/0"
        # Not the metadata service, no node, no pod, no service of the cluster.
        assert {"169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"} <= set(
            block["except"]
        )
        (apiserver,) = [r for r in pulumi_mocks.recorded if r.type == T.CILIUM_NETWORK_POLICY]
        assert apiserver.name == "runner-netpol-managers-apiserver"
        assert apiserver.plain_inputs["spec"] == {  # Cilium gives the API server an identity an ipBlock may miss
            "endpointSelector": {"matchLabels": {"gpu-ci/role": "manager"}},
            "egress": [{"toEntities": ["kube-apiserver"]}],
        }
        managers = policies["runner-netpol-managers-egress"]["spec"]
        assert managers["podSelector"] == {"matchLabels": {"gpu-ci/role": "manager"}}
        assert managers["egress"][1]["to"][0]["ipBlock"]["except"] == ["169.254.0.0/16"]

    return _settled(runner).apply(check)
