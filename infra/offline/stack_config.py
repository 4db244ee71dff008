"""Read a stack's config from `Pulumi.yaml` + `Pulumi.<stack>.yaml`, as the Pulumi CLI would pass it.

Encrypted values (`secure: v1:...`) cannot be decrypted offline; they become a visible placeholder
and their keys are marked secret, so the program sees a secret where `pulumi up` would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class StackConfig:
    project: str
    stack: str
    values: dict[str, Any]
    """Full keys (`gpu-ci:platform`, `gitlab:baseUrl`) to decoded YAML values."""
    secret_keys: tuple[str, ...]

    def as_pulumi_config(self) -> dict[str, str]:
        """Values as the engine hands them to the language host: strings, objects as JSON."""
        return {key: value if isinstance(value, str) else json.dumps(value) for key, value in self.values.items()}

    def namespaced(self, key: str) -> str:
        return key if ":" in key else f"{self.project}:{key}"

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(self.namespaced(key), default)

    def with_values(self, values: dict[str, Any], secret_keys: tuple[str, ...] = ()) -> StackConfig:
        """A copy with keys replaced or added (short keys get the project namespace)."""
        merged = {**self.values, **{self.namespaced(k): v for k, v in values.items()}}
        secrets = (*self.secret_keys, *(self.namespaced(k) for k in secret_keys))
        return StackConfig(self.project, self.stack, merged, tuple(dict.fromkeys(secrets)))


def project_name(root: Path = PROJECT_ROOT) -> str:
    return str(yaml.safe_load((root / "Pulumi.yaml").read_text(encoding="utf-8"))["name"])


def load_stack_config(stack: str, root: Path = PROJECT_ROOT, path: Path | None = None) -> StackConfig:
    """The config of `Pulumi.<stack>.yaml` (or of the stack file `path`); FileNotFoundError names the file."""
    project = project_name(root)
    path = path or root / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise FileNotFoundError(
            f"no stack file {path.name} in {root} (stacks: {', '.join(list_stacks(root)) or 'none'})"
        )
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    values: dict[str, Any] = {}
    secret_keys: list[str] = []
    for key, value in (document.get("config") or {}).items():
        full_key = key if ":" in key else f"{project}:{key}"
        decoded, has_secret = _strip_secure(value, full_key)
        values[full_key] = decoded
        if has_secret:
            secret_keys.append(full_key)
    return StackConfig(project, stack, values, tuple(secret_keys))


def list_stacks(root: Path = PROJECT_ROOT) -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def _strip_secure(value: Any, where: str) -> tuple[Any, bool]:
    if isinstance(value, dict) and set(value) == {"secure"}:
        return f"[secret {where} - encrypted, not readable offline]", True
    if isinstance(value, dict):
        pairs = {k: _strip_secure(v, f"{where}.{k}") for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(s for _, s in pairs.values())
    if isinstance(value, list):
        items = [_strip_secure(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False
