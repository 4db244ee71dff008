"""The providers' config keys gpu-ci holds (infra/config/provider_keys.py) are those the installed SDK packages
ship: read from their files, as the module says, so a bump of requirements.txt cannot leave the list behind."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from infra.config.provider_keys import PROVIDER_CONFIG_KEYS, SDK_FILES, known_keys, snake_case


def _sdk_file(relative: str) -> Path:
    """The installed package's file, found without importing the package (its import costs seconds)."""
    package, _, rest = relative.partition("/")
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, package
    return Path(next(iter(spec.submodule_search_locations))) / rest


def _config_reads(tree: ast.Module) -> set[str]:
    """`__config__.get('baseUrl')`, `.get_bool(...)`, ...: the keys a config/vars.py reads."""
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "__config__"
        and node.func.attr.startswith("get")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def _provider_inputs(tree: ast.Module) -> set[str]:
    """`ProviderArgs`' properties, by their wire names: `@pulumi.getter(name="enableServerSideApply")`, or the
    method's own name for a bare `@pulumi.getter`."""
    (args,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "ProviderArgs"]
    names = set()
    for method in args.body:
        if not isinstance(method, ast.FunctionDef):
            continue
        for decorator in method.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = call.func if call else decorator
            if not (isinstance(target, ast.Attribute) and target.attr == "getter"):
                continue
            named = [k.value for k in (call.keywords if call else []) if k.arg == "name"]
            names.add(str(named[0].value) if named and isinstance(named[0], ast.Constant) else method.name)
    return names


def installed_keys(namespace: str) -> set[str]:
    tree = ast.parse(_sdk_file(SDK_FILES[namespace]).read_text(encoding="utf-8"))
    return _config_reads(tree) if SDK_FILES[namespace].endswith("vars.py") else _provider_inputs(tree)


@pytest.mark.parametrize("namespace", sorted(PROVIDER_CONFIG_KEYS))
def test_each_providers_keys_are_those_its_installed_sdk_ships(namespace: str) -> None:
    assert set(PROVIDER_CONFIG_KEYS[namespace]) == installed_keys(namespace)
    assert list(PROVIDER_CONFIG_KEYS[namespace]) == sorted(PROVIDER_CONFIG_KEYS[namespace])


def test_the_keys_the_docs_and_the_program_name_are_provider_keys() -> None:
    """gitlab:baseUrl and gitlab:token (config-reference), scaleway:access_key (operations.md, the bridge's
    spelling), kubernetes:kubeconfig (a credential the program refuses in clear)."""
    assert {"baseUrl", "token"} <= set(known_keys("gitlab"))
    assert {"accessKey", "access_key", "secret_key"} <= set(known_keys("scaleway"))
    assert "kubeconfig" in known_keys("kubernetes")
    assert "kube_config" not in known_keys("kubernetes")  # not bridged: no snake_case spelling
    assert snake_case("s3UsePathStyle") == "s3_use_path_style"
