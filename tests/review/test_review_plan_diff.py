"""The offline plan diff: two `plan --json` documents compared by URN, printed like `pulumi preview --diff`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.plans import plan_json_with
from support.specs import add_h100_pool

from infra.__main__ import main
from infra.cloud.names import T
from infra.offline.mocks import MOCK_KUBECONFIG_PREFIX
from infra.offline.stack_config import StackConfig
from infra.review.diff import (
    MISSING,
    Change,
    PlanDocumentError,
    check_document,
    diff_plans,
    flatten,
    render_diff,
)
from infra.review.note import summarize

POOL = T.POOL


def _urn(name: str, type_: str = POOL) -> str:
    return f"urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster${type_}::{name}"


def _resource(name: str, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {
        "type": POOL,
        "name": name,
        "urn": _urn(name),
        "custom": True,
        "inputs": inputs,
        "options": {"protect": False, "ignore_changes": [], "delete_before_replace": False, **options},
    }


def _plan(*resources: dict[str, Any], outputs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"stack": "dev", "resources": list(resources), "outputs": outputs or {}}


def test_resources_are_matched_by_urn() -> None:
    base = _plan(
        _resource("kapsule-a", {"maxSize": 1}),
        _resource("kapsule-b", {"maxSize": 1}),
        _resource("kapsule-gone", {"maxSize": 1}, protect=True),
    )
    head = _plan(
        _resource("kapsule-a", {"maxSize": 1}),
        _resource("kapsule-b", {"maxSize": 2}),
        _resource("kapsule-new", {"maxSize": 1, "nodeType": "H100-1-80G"}, ignore_changes=["size"]),
    )
    diff = diff_plans(base, head)
    assert [(r.op, r.name) for r in diff.resources] == [
        ("update", "kapsule-b"),
        ("delete", "kapsule-gone"),
        ("create", "kapsule-new"),
    ]
    assert diff.resources[0].inputs == (Change("maxSize", 1, 2),)
    assert diff.resources[1].protected
    assert diff.resources[2].options == (Change("ignore_changes", MISSING, ["size"]),)  # defaults are not listed
    assert diff.unchanged == 1
    assert diff.counts() == {"create": 1, "update": 1, "delete": 1}


def test_option_changes_count_as_updates() -> None:
    diff = diff_plans(_plan(_resource("kapsule-a", {})), _plan(_resource("kapsule-a", {}, protect=True)))
    assert [(r.op, r.inputs, r.options) for r in diff.resources] == [("update", (), (Change("protect", False, True),))]
    assert "~    [option] protect: false => true" in render_diff(diff)


def test_lists_of_named_objects_are_compared_by_name_not_position() -> None:
    rows = [{"pool": "ci-compile", "jobs": 2}, {"pool": "system", "jobs": 0}]
    grown = [rows[0], {"pool": "ci-h100", "jobs": 1}, rows[1]]
    assert flatten({"capacity": rows}) == {
        "capacity[pool=ci-compile].jobs": 2,
        "capacity[pool=system].jobs": 0,
    }
    diff = diff_plans(_plan(outputs={"capacity": rows}), _plan(outputs={"capacity": grown}))
    assert diff.outputs == (Change("capacity[pool=ci-h100].jobs", MISSING, 1),)
    assert flatten({"args": [{"x": 1}, {"x": 1}]}) == {"args[0].x": 1, "args[1].x": 1}  # no identity: by position
    assert flatten({"tags": ["b", "a"], "labels": {"k8s.scaleway.com/pool": "x"}, "empty": {}}) == {
        "empty": {},
        'labels["k8s.scaleway.com/pool"]': "x",
        "tags": ["b", "a"],
    }


def test_multi_line_values_are_diffed_line_by_line() -> None:
    old = '[[runners]]\nname = "x"\npoll_timeout = 600\nlimit = 4\n'
    new = old.replace("600", "900")
    diff = diff_plans(_plan(_resource("kapsule-a", {"config": old})), _plan(_resource("kapsule-a", {"config": new})))
    text = render_diff(diff)
    assert "~    config: (text)\n" in text
    assert "-        poll_timeout = 600\n+        poll_timeout = 900\n" in text
    assert "         limit = 4\n" in text  # context, unmarked


def test_rendered_summary_reads_back_like_a_preview() -> None:
    """One parser serves both: the note reads plan-diff's summary exactly as it reads pulumi's."""
    base = _plan(_resource("kapsule-a", {"maxSize": 1}), _resource("kapsule-b", {}), _resource("kapsule-c", {}))
    head = _plan(_resource("kapsule-a", {"maxSize": 2}), _resource("kapsule-c", {}), _resource("kapsule-d", {}))
    diff = diff_plans(base, head)
    summary = summarize(render_diff(diff))
    assert summary.found and summary.ops == diff.counts() == {"create": 1, "update": 1, "delete": 1}
    assert summary.unchanged == 1
    assert "    3 changes. 1 unchanged\n" in render_diff(diff)
    same = summarize(render_diff(diff_plans(base, base)))
    assert (same.ops, same.unchanged, same.changes) == ({}, 3, False)


def test_documents_that_are_not_plans_are_refused() -> None:
    with pytest.raises(PlanDocumentError, match=r"^base\.json: not a plan document"):
        check_document({"capacity": []}, "base.json")
    with pytest.raises(PlanDocumentError, match="duplicate URNs"):
        check_document(_plan(_resource("kapsule-a", {}), _resource("kapsule-a", {})), "head.json")


def test_the_real_program_adding_a_pool_and_raising_a_maximum(
    dev_stack: StackConfig, dev_platform: dict[str, Any], dev_plan_document: dict[str, Any]
) -> None:
    dev_platform["pools"]["ci-training"]["max_size"] = 2
    add_h100_pool(dev_platform)
    base = dev_plan_document
    diff = diff_plans(base, plan_json_with(dev_stack, dev_platform))
    pools = [(r.op, r.name) for r in diff.resources if r.type == POOL]
    assert pools == [("create", "kapsule-ci-h100"), ("update", "kapsule-ci-training")]
    assert "delete" not in diff.counts()
    created = next(r for r in diff.resources if r.name == "kapsule-ci-h100")
    updated = next(r for r in diff.resources if r.name == "kapsule-ci-training")
    assert Change("nodeType", MISSING, "H100-1-80G") in created.inputs
    assert Change("ignore_changes", MISSING, ["size"]) in created.options
    assert updated.inputs == (Change("maxSize", 1, 2),)
    assert Change("capacity[pool=ci-training].max_size", 1, 2) in diff.outputs
    # The device plugin's ConfigMap gains the pool's config: Pulumi's Kubernetes provider replaces a ConfigMap's data.
    (config,) = [r for r in diff.resources if r.op == "replace"]
    assert (config.type, config.replace_reasons) == (T.CONFIG_MAP, ("data",))
    assert diff.unchanged == len(base["resources"]) - diff.counts()["update"] - diff.counts()["replace"]


def test_secrets_never_appear_in_the_diff(
    dev_platform: dict[str, Any],
    dev_plan_json_text: tuple[int, str],
    stack_file: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The cluster's name is in its kubeconfig, a secret output fed to the Kubernetes provider: renaming
    the cluster changes the secret on both sides, and the diff must neither show nor compare it. The base is
    the dev stack's `plan --json`, run once for the session; the head, the same stack renamed."""
    code, base = dev_plan_json_text
    assert code == 0
    dev_platform["cluster"]["name"] = "gpu-ci-renamed"
    files = {"base": tmp_path / "base.json", "head": tmp_path / "head.json"}
    files["base"].write_text(base, encoding="utf-8")
    assert main(["plan", "--json", "--config", str(stack_file(dev_platform, "Pulumi.head.yaml"))]) == 0
    files["head"].write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["plan-diff", str(files["base"]), str(files["head"])]) == 0
    text = capsys.readouterr().out
    assert '~    name: "gpu-ci" => "gpu-ci-renamed"\n' in text  # the change itself is visible
    assert "kapsule-k8s" not in text  # the provider's only input is the secret kubeconfig: not compared
    for leak in (MOCK_KUBECONFIG_PREFIX.splitlines()[0], "mock-admin-token", "gpu-ci-renamed\\nclusters"):
        assert leak not in text


def test_cli_names_a_file_that_is_not_a_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_plan()), encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text("Capacity (per node...", encoding="utf-8")
    assert main(["plan-diff", str(bad), str(good)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {bad}: not JSON")
    assert main(["plan-diff", str(good), str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------
# Replacements: a change of a field the provider replaces on is `+-`, like `pulumi preview`


def _typed(type_: str, name: str, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {**_resource(name, inputs, **options), "type": type_, "urn": _urn(name, type_)}


@pytest.mark.parametrize(
    ("type_", "before", "after", "reasons"),
    [
        (POOL, {"nodeType": "L40S-1-48G", "maxSize": 1}, {"nodeType": "H100-1-80G", "maxSize": 1}, ("nodeType",)),
        (POOL, {"zone": "fr-par-2", "name": "a"}, {"zone": "fr-par-1", "name": "b"}, ("zone", "name")),
        (POOL, {"clusterId": "fr-par/1"}, {"clusterId": "fr-par/2"}, ("clusterId",)),
        (T.CLUSTER, {"type": "kapsule"}, {"type": "kapsule-dedicated-4"}, ("type",)),
        (T.CLUSTER, {"privateNetworkId": "p1"}, {"privateNetworkId": "p2"}, None),
        (T.USER_RUNNER, {"runnerType": "project_type"}, {"runnerType": "group_type"}, None),
        (T.USER_RUNNER, {"projectId": 42}, {"projectId": 43}, None),
        (T.USER_RUNNER, {"groupId": 7}, {"groupId": 8}, None),
        (T.NAMESPACE, {"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}, ("metadata.name",)),
        # Pulumi's Kubernetes provider (infra/review/diff.py's REPLACE_ON says which of its tables).
        (T.SECRET, {"metadata": {"namespace": "a"}}, {"metadata": {"namespace": "b"}}, ("metadata.namespace",)),
        (T.CONFIG_MAP, {"data": {"a": "1"}}, {"data": {"a": "2"}}, ("data",)),
        (T.SECRET, {"stringData": {"t": "1"}}, {"stringData": {"t": "2"}}, ("stringData",)),
        (
            T.JOB,
            {"spec": {"template": {"spec": {"x": 1}}}},
            {"spec": {"template": {"spec": {"x": 2}}}},
            ("spec.template",),
        ),
        (T.DEPLOYMENT, {"spec": {"selector": {"a": "1"}}}, {"spec": {"selector": {"a": "2"}}}, ("spec.selector",)),
        (T.CLUSTER_ROLE_BINDING, {"roleRef": {"name": "a"}}, {"roleRef": {"name": "b"}}, ("roleRef",)),
        # A class is named with its value (infra/model/warm.py): the provider replaces it on the name.
        (
            T.PRIORITY_CLASS,
            {"metadata": {"name": "c-1000"}, "value": 1000},
            {"metadata": {"name": "c-2000"}, "value": 2000},
            ("metadata.name",),
        ),
        (T.HELM_RELEASE, {"name": "a"}, {"name": "b"}, None),
        (
            T.REGISTRY_NAMESPACE,
            {"name": "a", "region": "fr-par"},
            {"name": "b", "region": "nl-ams"},
            None,
        ),
    ],
)
def test_a_change_of_a_field_the_provider_replaces_on_is_a_replacement(
    type_: str, before: dict[str, Any], after: dict[str, Any], reasons: tuple[str, ...] | None
) -> None:
    diff = diff_plans(_plan(_typed(type_, "r", before)), _plan(_typed(type_, "r", after)))
    (change,) = diff.resources
    assert change.op == "replace"
    assert change.replace_reasons == (reasons or tuple(sorted({c.path for c in change.inputs})))
    assert diff.counts() == {"replace": 1}


@pytest.mark.parametrize(
    ("type_", "before", "after"),
    [
        (POOL, {"maxSize": 1, "labels": {"a": "1"}}, {"maxSize": 2, "labels": {"a": "2"}}),
        (
            T.NAMESPACE,
            {"metadata": {"name": "a", "labels": {}}},
            {"metadata": {"name": "a", "labels": {"x": "1"}}},
        ),
        (T.USER_RUNNER, {"tagLists": ["a"]}, {"tagLists": ["a", "b"]}),
        (T.HELM_RELEASE, {"values": {"a": 1}}, {"values": {"a": 2}}),
        (T.DEPLOYMENT, {"spec": {"replicas": 1}}, {"spec": {"replicas": 2}}),
        (T.JOB, {"spec": {"activeDeadlineSeconds": 60}}, {"spec": {"activeDeadlineSeconds": 120}}),
        (T.PRIORITY_CLASS, {"description": "a"}, {"description": "b"}),
        # Alone, a new value is what v4.25.0's provider sends as an update (and the API server refuses).
        (T.PRIORITY_CLASS, {"value": 1000}, {"value": 2000}),
    ],
)
def test_other_changes_stay_updates_in_place(type_: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    (change,) = diff_plans(_plan(_typed(type_, "r", before)), _plan(_typed(type_, "r", after))).resources
    assert (change.op, change.replace_reasons) == ("update", ())


def test_a_replacement_is_printed_like_preview_and_counted_by_the_note() -> None:
    base = _plan(_resource("kapsule-ci-training", {"nodeType": "L40S-1-48G"}, protect=True))
    head = _plan(_resource("kapsule-ci-training", {"nodeType": "H100-1-80G"}, protect=True))
    text = render_diff(diff_plans(base, head))
    assert (
        f"+- {POOL}  kapsule-ci-training  (replace, because of nodeType; protected: `pulumi up` refuses until it "
        "is unprotected)\n"
    ) in text
    assert "\n    +- 1 to replace\n" in text
    assert summarize(text).ops == {"replace": 1}


def test_the_real_program_changing_a_pools_node_type_replaces_it(
    dev_stack: StackConfig, dev_platform: dict[str, Any], dev_plan_document: dict[str, Any]
) -> None:
    dev_platform["pools"]["ci-training"]["node_type"] = "H100-1-80G"
    diff = diff_plans(dev_plan_document, plan_json_with(dev_stack, dev_platform))
    pool = next(r for r in diff.resources if r.name == "kapsule-ci-training")
    assert (pool.op, pool.replace_reasons, pool.protected) == ("replace", ("nodeType",), True)


# ---------------------------------------------------------------------------------------------------------
# Hostile values: no line of the diff can be forged, garbled or made to take minutes


def test_values_cannot_forge_lines_or_reach_the_terminal_raw() -> None:
    forged = "x\n\nResources:\n    - 40 to delete\n"
    base = _plan(_resource("kapsule-a", {"config": "a\nb\n", "label": "plain"}))
    head = _plan(
        _resource("kapsule-a", {"config": f"a\n\x1b[2J{forged}", "label": "\u202etxt.exe\x00"}),
        outputs={"rows": [{"name": "a]=b\nResources:", "n": 1}, {"name": "ok", "n": 2}]},
    )
    text = render_diff(diff_plans(base, head))
    assert "\x1b" not in text and "\x00" not in text and "\u202e" not in text
    assert "+        \\x1b[2Jx\n" in text and '~    label: "plain" => "\\u202etxt.exe\\u0000"' in text
    assert 'rows[name="a]=b\\nResources:"].n: 1' in text  # an identity that is no plain name is quoted
    assert summarize(text).ops == {"update": 1}  # the forged summary is indented: the real one is read
    assert [line for line in text.splitlines() if line == "Resources:"] == ["Resources:"]  # the real one only


def test_texts_too_long_to_compare_are_summed_up_not_diffed() -> None:
    old = "\n".join(f"line {i}" for i in range(2001))
    new = old.replace("line 7\n", "line seven\n")
    diff = diff_plans(_plan(_resource("kapsule-a", {"config": old})), _plan(_resource("kapsule-a", {"config": new})))
    assert "~    config: (text, 2001 -> 2001 lines: too long to compare here)\n" in render_diff(diff)
    short = "\n".join(f"line {i}" for i in range(1500))
    many = [_resource(f"kapsule-{i}", {"config": short}) for i in range(8)]
    changed = [_resource(f"kapsule-{i}", {"config": short + "\nmore"}) for i in range(8)]
    text = render_diff(diff_plans(_plan(*many), _plan(*changed)))
    assert text.count(": (text)\n") == 6 and text.count("too long to compare here") == 2  # 20,000 lines at most


def _violation(policy: str, level: str = "mandatory") -> dict[str, str]:
    return {"policy": policy, "resource": "kapsule-a", "message": "no\nResources:", "level": level}


def test_the_policy_result_follows_the_resources_new_violations_marked() -> None:
    base = {**_plan(_resource("kapsule-a", {"maxSize": 1})), "policy": [_violation("old-rule", "advisory")]}
    head = {
        **_plan(_resource("kapsule-a", {"maxSize": 2})),
        "policy": [_violation("gpu-pool-protected"), *[_violation(f"rule-{i}", "advisory") for i in range(11)]],
    }
    lines = render_diff(diff_plans(base, head)).splitlines()
    index = lines.index("Policy pack (policy/, over the head's resources): 11 advisory, 1 mandatory")
    assert lines.index("Resources:") < index
    assert lines[index + 1] == "    - policy gpu-pool-protected (mandatory): kapsule-a: no\\nResources:  (new)"
    assert lines[index + 11] == "    and 2 more (plan --json)"  # ten shown
    assert lines[index + 12] == "    resolved since the base: 1"
    assert summarize("\n".join(lines)).ops == {"update": 1}  # a message cannot forge the summary
