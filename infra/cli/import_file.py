"""`python -m infra import-file`: a `pulumi import --file` document for resources that already exist.

The team's cluster and pools predate gpu-ci. Importing them under the names and parents this program
uses (`kapsule-<pool>` under the `kapsule` component) lets the next `pulumi up` manage them instead of
trying to create duplicates. The names are derived from the spec, so they cannot drift from the code.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from infra.cli import fail, fail_spec
from infra.cloud.names import COMPONENT_NAME, KAPSULE_TOKEN, T, child_name
from infra.config.errors import SpecError
from infra.config.load import load_spec
from infra.offline.stack_config import load_stack_config

_ID = re.compile(r"\A(fr-par|nl-ams|pl-waw)/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
"""A Scaleway regional id: the region, then a UUID; the whole text (a trailing newline is no part of an id)."""

TYPES = {"vpc": T.VPC, "pn": T.PRIVATE_NETWORK, "cluster": T.CLUSTER, "pool": T.POOL}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("import-file", help="write a `pulumi import --file` document for existing resources")
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--pool", action="append", default=[], metavar="NAME=ID", help="existing pool (repeatable)")
    parser.add_argument("--cluster", metavar="ID", help="existing cluster, to manage it (not just read it)")
    parser.add_argument("--vpc", metavar="ID", help="the cluster's VPC (with --cluster)")
    parser.add_argument("--private-network", metavar="ID", help="the cluster's private network (with --cluster)")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    try:
        document = import_document(
            load_spec(load_stack_config(args.stack).get("platform")),
            pools=_pools(args.pool),
            cluster=args.cluster,
            vpc=args.vpc,
            private_network=args.private_network,
        )
    except SpecError as err:
        return fail_spec(err, args.stack)
    except (ValueError, FileNotFoundError) as err:
        return fail(str(err))
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def import_document(
    spec: Any,
    pools: dict[str, str],
    cluster: str | None = None,
    vpc: str | None = None,
    private_network: str | None = None,
) -> dict[str, Any]:
    """The import file: the component as an empty parent, then each existing resource under it."""
    for flag, given in (("--vpc", vpc), ("--private-network", private_network)):
        if given is not None and cluster is None:
            raise ValueError(f"{flag}: goes with --cluster (the cluster's own network, imported with it)")
    resources: list[dict[str, Any]] = [{"type": KAPSULE_TOKEN, "name": COMPONENT_NAME, "component": True}]
    wanted = [("vpc", "vpc", vpc), ("pn", "pn", private_network), ("cluster", "cluster", cluster)]
    wanted += [("pool", pool, pool_id) for pool, pool_id in sorted(pools.items())]
    for kind, suffix, resource_id in wanted:
        if resource_id is None:
            continue
        if kind == "pool" and suffix not in spec.pools:
            raise ValueError(
                f"--pool {suffix}={resource_id}: no pool {suffix!r} in the spec ({', '.join(sorted(spec.pools))})"
            )
        if not _ID.match(resource_id):
            raise ValueError(f"--{kind} {resource_id!r}: not a Scaleway id like fr-par/<uuid>")
        if (region := resource_id.split("/", 1)[0]) != spec.region:
            raise ValueError(
                f"--{kind} {resource_id!r}: is in {region}, not in the stack's region {spec.region} (platform.region)"
            )
        resources.append({"type": TYPES[kind], "name": child_name(suffix), "id": resource_id, "parent": COMPONENT_NAME})
    if cluster and spec.cluster.existing_id:
        raise ValueError(
            "--cluster: platform.cluster.existing_id is set, so the program only reads the cluster; "
            "remove existing_id to manage (import) it"
        )
    return {"resources": resources}


def _pools(given: list[str]) -> dict[str, str]:
    """`--pool NAME=ID` flags as a mapping; ValueError for a pool given twice (which id would be meant?)."""
    pools: dict[str, str] = {}
    for text in given:
        name, value = _pair(text)
        if name in pools and pools[name] != value:
            raise ValueError(f"--pool {name!r}: given twice, with ids {pools[name]!r} and {value!r}: which one?")
        pools[name] = value
    return pools


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"--pool {text!r}: expected NAME=ID")
    return name, value
