"""A Helm chart repository on loopback: the vendored gitlab-runner chart (tests/data/charts/, MIT, see its
README) and the `index.yaml` Helm reads first, served by `http.server` from a folder of their own.

Why: the engine tests install the runner chart with the real Kubernetes provider, whose Helm fetches it from
`platform.runner.chart_repository` as production fetches it from GitLab's (https://charts.gitlab.io); the build
machines reach no chart repository, and a mirror is what a team without one would run too.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from support.paths import DATA

CHARTS = DATA / "charts"
RUNNER_CHART = CHARTS / "gitlab-runner-0.86.0.tgz"
RUNNER_CHART_SHA256 = "321a702c2425457b36e06871387291bdcf9acead8de27d7198abc66fa41d0401"
"""The vendored archive's digest, as GitLab's repository publishes it (tests/data/charts/README.md)."""


def index_entry(archive: Path) -> dict[str, Any]:
    """The chart's entry in `index.yaml`: its Chart.yaml, its archive's URL (relative) and digest."""
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml"))
        extracted = tar.extractfile(member)
        assert extracted is not None
        chart: dict[str, Any] = yaml.safe_load(extracted.read())
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    return {**chart, "urls": [archive.name], "digest": digest, "created": "2026-01-15T00:00:00Z"}


def write_repository(folder: Path, archives: list[Path]) -> None:
    """`folder` as a chart repository: the archives and their index."""
    folder.mkdir(parents=True, exist_ok=True)
    entries: dict[str, list[dict[str, Any]]] = {}
    for archive in archives:
        shutil.copy2(archive, folder / archive.name)
        entry = index_entry(archive)
        entries.setdefault(entry["name"], []).append(entry)
    index = {"apiVersion": "v1", "entries": entries, "generated": "2026-01-15T00:00:00Z"}
    (folder / "index.yaml").write_text(yaml.safe_dump(index, sort_keys=True), encoding="utf-8")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged (the test's output is the engine's)."""


@contextmanager
def serve_charts(folder: Path, archives: list[Path] | None = None) -> Iterator[str]:
    """A chart repository of `archives` (the runner chart by default) at `http://127.0.0.1:<port>`, stopped at
    the end of the block."""
    write_repository(folder, archives or [RUNNER_CHART])
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, name="chart-repository", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
