"""`helm template` without a Helm binary: the Helm that Pulumi's Kubernetes provider embeds, asked through its
own `kubernetes:helm:template` invoke (the one the SDK's `helm.v3.Chart` uses).

The test cluster's Kapsule stand-in (tests/support/doubles/kapsule.py) installs the GPU operator's ClusterPolicy
as Kapsule does, from the operator's chart and its default values; that chart is a Go template only Helm renders
faithfully, and the one Helm built here is inside `pulumi-resource-kubernetes` (.engine/providers/). The provider
is started as the engine starts a plugin (its engine address as the argument, its port on the first line), with
a minimal engine of our own for its log messages; it is configured with the cluster's kubeconfig (Helm asks the
API server which versions it serves) and stopped once the chart is rendered.
"""

from __future__ import annotations

import json
import subprocess
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import engine_pb2_grpc, provider_pb2, provider_pb2_grpc

from support.day import SUITE_DAY_ENV

TEMPLATE_INVOKE = "kubernetes:helm:template"
START_TIMEOUT = 60.0


class HelmTemplateError(RuntimeError):
    """The provider did not start or refused the chart: one line."""


class _QuietEngine(engine_pb2_grpc.EngineServicer):
    """What a plugin calls back on its engine: the log, which nobody reads here."""

    def Log(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method name
        return empty_pb2.Empty()


def render_chart(
    provider: Path, chart: Path, kubeconfig: str, *, namespace: str, release: str, values: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The objects `helm template <release> <chart> --namespace <namespace>` makes, as the provider decodes them."""
    engine = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    engine_pb2_grpc.add_EngineServicer_to_server(_QuietEngine(), engine)
    engine_port = engine.add_insecure_port("127.0.0.1:0")
    engine.start()
    process = subprocess.Popen(
        [str(provider), f"127.0.0.1:{engine_port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "HOME": str(chart.parent), **SUITE_DAY_ENV},
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        if not port.isdigit():
            raise HelmTemplateError(f"{provider.name} did not start: {port!r}")
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = provider_pb2_grpc.ResourceProviderStub(channel)
            grpc.channel_ready_future(channel).result(timeout=START_TIMEOUT)
            stub.Configure(
                provider_pb2.ConfigureRequest(
                    variables={"kubernetes:config:kubeconfig": kubeconfig},
                    args=_struct({"kubeconfig": kubeconfig}),
                    acceptSecrets=True,
                    acceptResources=True,
                )
            )
            options = {"path": str(chart), "namespace": namespace, "release_name": release, "values": values or {}}
            answer = stub.Invoke(
                provider_pb2.InvokeRequest(tok=TEMPLATE_INVOKE, args=_struct({"jsonOpts": json.dumps(options)}))
            )
        if answer.failures:
            raise HelmTemplateError(f"{TEMPLATE_INVOKE} {chart.name}: {answer.failures[0].reason}")
        result: list[dict[str, Any]] = json_format.MessageToDict(getattr(answer, "return"))["result"]
        return result
    except grpc.RpcError as error:
        raise HelmTemplateError(f"{TEMPLATE_INVOKE} {chart.name}: {error.details()}") from None
    finally:
        process.terminate()
        try:
            process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        engine.stop(None)


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct
