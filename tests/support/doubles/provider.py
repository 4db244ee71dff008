"""A resource provider test double on the engine's real protocol: `pulumi-resource-<package>` for scaleway,
kubernetes and gitlab, which the real engine starts and talks to over gRPC as it would the real plugins.

Run as `python provider.py <package> [engine args...]` (the engine passes `[--logtostderr] [-v=N] [--tracing X]
<engine address>`, all ignored); it prints its port as the first line of stdout, as a plugin must.

It keeps no state of its own: the engine passes the old state and the new inputs. What it answers comes from
the offline mocks (`infra.offline.mocks`: the ids, the outputs a provider computes, the data sources), one
definition for both:
- Check returns the inputs as given (no provider defaults, no failures);
- Diff reports the top-level inputs that changed, never a replacement: replacements come from the engine
  and the program's resource options, not from rules invented here;
- Create returns the mocks' id and outputs (in a preview: no id, and the computed outputs unknown, as a
  provider that learns them from the cloud answers); Update recomputes them (in a preview it keeps the old
  state's); Read returns the state it is given; Delete forgets;
- Invoke answers the mocks' data sources and refuses any other token.

With `$GPU_CI_TEST_KUBECONFIG` set, the Scaleway double's cluster is that API server's (its kubeconfig is the
cluster's output) and it does Kapsule's part in it when a cluster or pool is created (kapsule.py).

Each call is recorded as one JSON line in `$GPU_CI_DOUBLES_RECORDS/<package>-<pid>.jsonl`, secrets as the
engine marks them (`[secret]`, never the value): CheckConfig, which the engine sends with secrets stripped,
is recorded by its keys only, and Configure by its marked `args`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))  # the doubles answer from this checkout's offline mocks

import grpc  # noqa: E402
from google.protobuf import empty_pb2, json_format, struct_pb2  # noqa: E402
from pulumi.runtime import mocks as pulumi_mocks  # noqa: E402
from pulumi.runtime import rpc  # noqa: E402
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc  # noqa: E402

from infra.cloud.names import T  # noqa: E402
from infra.offline.mocks import INVOKES, RESOURCE_TYPES, RecordingMocks  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))  # Kapsule's part, beside this file
from support.doubles import kapsule  # noqa: E402

PACKAGES = {
    "scaleway": "pulumiverse_scaleway",
    "kubernetes": "pulumi_kubernetes",
    "gitlab": "pulumi_gitlab",
}
"""The packages doubled, and the Python SDK package whose pulumi-plugin.json names the version it asks for."""

SECRET = "[secret]"
UNKNOWN = "[unknown]"


def sdk_plugin_version(package: str) -> str:
    """The provider version the SDK package asks the engine for (its pulumi-plugin.json)."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGES[package])
    if spec is None or spec.origin is None:
        raise SystemExit(f"pulumi-resource-{package} (double): the SDK package {PACKAGES[package]} is not installed")
    plugin = json.loads((Path(spec.origin).parent / "pulumi-plugin.json").read_text(encoding="utf-8"))
    return str(plugin["version"])


def to_dict(struct: struct_pb2.Struct | None) -> dict[str, Any]:
    return json_format.MessageToDict(struct) if struct is not None else {}


def to_struct(value: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def masked(value: Any) -> Any:
    """`value` as it may be recorded: secrets (as the engine marked them) and unknowns by name only."""
    if rpc.is_rpc_secret(value):
        return SECRET
    if value == rpc.UNKNOWN:
        return UNKNOWN
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def _name(urn: str) -> str:
    return urn.rsplit("::", maxsplit=1)[-1]


def _type(urn: str) -> str:
    return urn.split("::")[2].rsplit("$", 1)[-1]


class Recorder:
    def __init__(self, package: str) -> None:
        folder = os.environ.get("GPU_CI_DOUBLES_RECORDS")
        self.path = Path(folder) / f"{package}-{os.getpid()}.jsonl" if folder else None
        self.package = package
        self.lock = threading.Lock()

    def __call__(self, method: str, **fields: Any) -> None:
        if self.path is None:
            return
        line = json.dumps({"provider": self.package, "method": method, **fields}, sort_keys=True)
        with self.lock, self.path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")


class ProviderDouble(provider_pb2_grpc.ResourceProviderServicer):
    def __init__(self, package: str) -> None:
        self.package = package
        self.version = sdk_plugin_version(package)
        self.mocks = RecordingMocks()
        self.record = Recorder(package)

    # The plugin and its configuration.
    def GetPluginInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method names
        return plugin_pb2.PluginInfo(version=self.version)

    def CheckConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        news = to_dict(request.news)
        self.record("CheckConfig", urn=request.urn, keys=sorted(news))  # secrets arrive stripped: keys only
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        olds, news = to_dict(request.olds), to_dict(request.news)
        changed = sorted(k for k in {*olds, *news} if olds.get(k) != news.get(k) and k != "version")
        self.record("DiffConfig", urn=request.urn, changed=changed)
        kind = provider_pb2.DiffResponse.DIFF_SOME if changed else provider_pb2.DiffResponse.DIFF_NONE
        return provider_pb2.DiffResponse(changes=kind, diffs=changed)

    def Configure(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.record(
            "Configure",
            urn=request.urn,
            args=masked(to_dict(request.args)),
            variables=sorted(request.variables),  # the deprecated plain-text map: its keys only
            accept_secrets=request.acceptSecrets,
        )
        return provider_pb2.ConfigureResponse(
            acceptSecrets=True, supportsPreview=True, acceptResources=True, acceptOutputs=True
        )

    # Resources.
    def Check(self, request: Any, context: Any) -> Any:  # noqa: N802
        news = to_dict(request.news)
        self._known_type(request.urn, context)
        self.record("Check", urn=request.urn, type=_type(request.urn), news=masked(news))
        return provider_pb2.CheckResponse(inputs=request.news)

    def Diff(self, request: Any, context: Any) -> Any:  # noqa: N802
        olds = to_dict(request.old_inputs) if request.HasField("old_inputs") else to_dict(request.olds)
        news = to_dict(request.news)
        ignored = set(request.ignoreChanges)
        changed = sorted(k for k in {*olds, *news} if olds.get(k) != news.get(k) and k not in ignored)
        self.record("Diff", urn=request.urn, type=_type(request.urn), changed=changed)
        detailed = {
            k: provider_pb2.PropertyDiff(
                kind=provider_pb2.PropertyDiff.ADD
                if k not in olds
                else provider_pb2.PropertyDiff.DELETE
                if k not in news
                else provider_pb2.PropertyDiff.UPDATE,
                inputDiff=True,
            )
            for k in changed
        }
        return provider_pb2.DiffResponse(
            changes=provider_pb2.DiffResponse.DIFF_SOME if changed else provider_pb2.DiffResponse.DIFF_NONE,
            diffs=changed,
            detailedDiff=detailed,
            hasDetailedDiff=True,
        )

    def Create(self, request: Any, context: Any) -> Any:  # noqa: N802
        inputs = to_dict(request.properties)
        type_token = _type(request.urn)
        self._known_type(request.urn, context)
        self.record("Create", urn=request.urn, type=type_token, inputs=masked(inputs), preview=request.preview)
        resource_id, outputs = self._outputs(request.urn, inputs)
        if request.preview:  # what the cloud computes is not known before it is created
            computed = {k: rpc.UNKNOWN for k in outputs if k not in inputs}
            return provider_pb2.CreateResponse(id="", properties=to_struct({**inputs, **computed}))
        if self.package == "scaleway" and kapsule.enabled():
            outputs = self._kapsule(type_token, inputs, outputs)
        return provider_pb2.CreateResponse(id=resource_id, properties=to_struct(outputs))

    def _kapsule(self, type_token: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
        """What Kapsule does to the test cluster when a cluster or a pool is created (kapsule.py)."""
        if type_token == T.CLUSTER:
            kapsule.cluster_created(self.record)
        elif type_token == T.POOL:
            kapsule.pool_created(inputs, self.record)
        return outputs

    def Update(self, request: Any, context: Any) -> Any:  # noqa: N802
        news = to_dict(request.news)
        self.record("Update", urn=request.urn, type=_type(request.urn), news=masked(news), preview=request.preview)
        _, outputs = self._outputs(request.urn, news, request.id)
        if request.preview:  # what the cloud computed keeps its value (an update in place changes no id or token)
            olds = to_dict(request.olds)
            computed = {k: olds.get(k, rpc.UNKNOWN) for k in outputs if k not in news}
            return provider_pb2.UpdateResponse(properties=to_struct({**news, **computed}))
        return provider_pb2.UpdateResponse(properties=to_struct(outputs))

    def Read(self, request: Any, context: Any) -> Any:  # noqa: N802
        """A refresh, or `Resource.get`: the state as given (the cloud is assumed not to have drifted)."""
        self.record("Read", urn=request.urn, type=_type(request.urn), id=request.id)
        state = to_dict(request.properties)
        inputs = to_dict(request.inputs) if request.HasField("inputs") else state
        if not state:  # `Resource.get` of an existing resource: what the mocks say it holds
            _, state = self._outputs(request.urn, {}, request.id)
        return provider_pb2.ReadResponse(id=request.id, properties=to_struct(state), inputs=to_struct(inputs))

    def Delete(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.record("Delete", urn=request.urn, type=_type(request.urn), id=request.id)
        return empty_pb2.Empty()

    def Invoke(self, request: Any, context: Any) -> Any:  # noqa: N802
        args = to_dict(request.args)
        self.record("Invoke", token=request.tok, args=masked(args))
        if request.tok not in INVOKES:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"double: unknown invoke {request.tok!r}")
        result, _ = self.mocks.call(pulumi_mocks.MockCallArgs(request.tok, args, ""))
        return provider_pb2.InvokeResponse(**{"return": to_struct(result)})

    def Cancel(self, request: Any, context: Any) -> Any:  # noqa: N802
        return empty_pb2.Empty()

    def _known_type(self, urn: str, context: Any) -> None:
        if _type(urn) not in RESOURCE_TYPES:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"double: unknown resource type {_type(urn)!r}")

    def _outputs(self, urn: str, inputs: dict[str, Any], resource_id: str | None = None) -> tuple[str, dict[str, Any]]:
        """The mocks' id and outputs for this resource (inputs echoed, plus what the provider computes)."""
        args = pulumi_mocks.MockResourceArgs(_type(urn), _name(urn), inputs, None, resource_id or None, True)
        new_id, outputs = self.mocks.new_resource(args)
        if self.package == "scaleway" and kapsule.enabled() and _type(urn) == T.CLUSTER:
            outputs = kapsule.cluster_outputs(outputs)  # the test cluster's kubeconfig, whichever call computes it
        return str(new_id), outputs


def main() -> None:
    package = sys.argv[1]
    if package not in PACKAGES:
        raise SystemExit(f"provider double: no double for {package!r} (known: {', '.join(PACKAGES)})")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(ProviderDouble(package), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
