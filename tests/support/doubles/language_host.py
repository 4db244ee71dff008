"""The Python language runtime the engine tests connect the real CLI to (`pulumi up --client ADDR`).

Pulumi's own Go language host (`pulumi-language-python`) cannot be built here: the Go proxy refuses its
module at every version (docs/operations.md). What this process serves instead is Pulumi's own code too:
`pulumi.automation._server.LanguageServer`, the runtime the Automation API serves inline programs with,
running the project's `__main__.py` (runpy, as `__main__`) in this interpreter. It replaces only the Go
host's process launch: finding the venv, starting `pulumi-language-python-exec`, and reporting the plugins
the program's packages require (this runtime reports none; the engine loads each provider when the program
first registers one of its resources). The CLI, the engine, the stack config it reads and hands the
program, the secrets manager, the state, the provider protocol and the policy analyzer are the real ones.

Run as `python language_host.py <project dir>`: it prints its port as the first line of stdout, serves
until it is terminated, and is meant to serve one CLI command (a fresh process, a fresh program, each time).
With `$GPU_CI_HOST_RECORDS` set, it writes there (`run-<pid>.json`) the config the engine handed the program,
each secret value as `[secret]`, for tests to compare with the CLI's own reading (`pulumi config --json`).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from pulumi.automation._server import LanguageServer
from pulumi.runtime.proto import language_pb2_grpc


class RecordingLanguageServer(LanguageServer):
    """Pulumi's inline runtime, which first notes the config of each Run request (secrets by name only)."""

    def Run(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method name
        folder = os.environ.get("GPU_CI_HOST_RECORDS")
        if folder:
            secret = set(request.configSecretKeys)
            record = {
                "config": {k: "[secret]" if k in secret else v for k, v in sorted(request.config.items())},
                "secret_keys": sorted(secret),
                "dry_run": request.dryRun,
            }
            (Path(folder) / f"run-{os.getpid()}.json").write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
        return super().Run(request, context)


def main() -> None:
    project = Path(sys.argv[1]).resolve()
    os.chdir(project)
    sys.path.insert(0, str(project))  # as `python __main__.py` would: the program imports `infra`

    def program() -> None:
        runpy.run_path(str(project / "__main__.py"), run_name="__main__")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(RecordingLanguageServer(program), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
