"""Reading the deploy files the way their runtimes do, for tests/integration/test_deploy_files.py.

Each ``*_launches`` function yields every command one kind of file runs, as a
:class:`Launch` with the environment it runs in: compose interpolation defaults,
Kubernetes ``$(VAR)`` expansion with the Secrets' values, systemd specifiers and the
example environment files. Shell wrappers (``sh -c``, ``CMD-SHELL``) are split into
their simple commands so each program is seen.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "COMPOSE",
    "DOCKERFILE",
    "K8S",
    "ROOT",
    "SYSTEMD",
    "Launch",
    "all_launches",
    "as_argv",
    "compose_interpolate",
    "compose_raw",
    "compose_services",
    "dockerfile_instructions",
    "env_example_for",
    "image_entrypoint",
    "k8s_docs",
    "k8s_secrets",
    "k8s_workloads",
    "parse_env_file",
    "parse_unit",
    "split_shell",
    "systemd_expand",
    "unit_environment",
]

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
K8S = ROOT / "deploy" / "k8s"
SYSTEMD = ROOT / "deploy" / "systemd"
SHELLS = {"sh", "/bin/sh", "bash", "/bin/bash"}


@dataclass
class Launch:
    """One command a deploy file runs, with the environment it runs in."""

    origin: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    grace: float | None = None  # seconds between SIGTERM and SIGKILL, when the file sets it

    def __str__(self) -> str:
        return f"{self.origin}: {shlex.join(self.argv)}"


# ---------------------------------------------------------------- shared parsing


def split_shell(script: str) -> list[list[str]]:
    """The simple commands of a shell script (pipes and lists split apart)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in {"|", "||", "&&", ";", "&"}:
            commands.append([])
        else:
            commands[-1].append(token)
    return [cmd[1:] if cmd[0] == "exec" else cmd for cmd in commands if cmd]


def unwrap_shell(argv: list[str]) -> list[list[str]]:
    """``sh -c SCRIPT`` becomes the commands of SCRIPT; anything else stays as it is."""
    if len(argv) >= 3 and argv[0] in SHELLS and argv[1] == "-c":
        return split_shell(argv[2])
    return [argv]


def parse_duration(text: str) -> float:
    """Seconds in a compose duration such as ``16m`` or ``1m30s``."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    assert parts and "".join(n + u for n, u in parts) == text, f"bad duration {text!r}"
    return sum(float(n) * units[u] for n, u in parts)


# ---------------------------------------------------------------- Dockerfile


def dockerfile_instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` pairs with line continuations joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    pairs = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            word, _, rest = stripped.partition(" ")
            pairs.append((word.upper(), rest.strip()))
    return pairs


def exec_form(text: str) -> list[str]:
    """A Dockerfile ``ENTRYPOINT``/``CMD`` value as an argv (shell form runs in sh)."""
    if text.startswith("["):
        value = json.loads(text)
        assert isinstance(value, list)
        return [str(v) for v in value]
    return ["/bin/sh", "-c", text]


def image_entrypoint() -> tuple[list[str], list[str]]:
    """The image's ``ENTRYPOINT`` and ``CMD`` (the last of each wins, as in Docker)."""
    found = {"ENTRYPOINT": [], "CMD": []}
    for word, rest in dockerfile_instructions():
        if word in found:
            found[word] = exec_form(rest)
    return found["ENTRYPOINT"], found["CMD"]


# ---------------------------------------------------------------- compose

_INTERPOLATION = re.compile(r"\$\$|\$\{(\w+)(?:(:?-)([^}]*))?\}")


def compose_interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Compose's variable interpolation (``${VAR}``, ``${VAR:-default}``, ``$$``)."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            if match[0] == "$$":
                return "$"
            name, op, default = match[1], match[2], match[3]
            if op == ":-":
                return env.get(name) or default
            if op == "-":
                return env.get(name, default)
            return env.get(name, "")

        assert re.search(r"\$\{[^}]*[?]", value) is None, f"unsupported interpolation in {value!r}"
        return _INTERPOLATION.sub(one, value)
    if isinstance(value, list):
        return [compose_interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: compose_interpolate(v, env) for k, v in value.items()}
    return value


def compose_raw() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def compose_services(env: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The services as compose sees them with ``env`` (default: the file's defaults)."""
    services = compose_interpolate(compose_raw()["services"], env or {})
    assert isinstance(services, dict)
    return services


def as_argv(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else shlex.split(str(value))


def compose_launches() -> Iterator[Launch]:
    entrypoint, cmd = image_entrypoint()
    for name, svc in compose_services().items():
        env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
        ours = "build" in svc or str(svc.get("image", "")).startswith("verifleet:")
        command = as_argv(svc["command"]) if "command" in svc else None
        if "entrypoint" in svc:
            argv = as_argv(svc["entrypoint"]) + (command or [])
        elif ours:
            argv = entrypoint + (command if command is not None else cmd)
        else:
            # Official images' entrypoints run the command they are given.
            assert command is not None, f"compose service {name}: no command to check"
            argv = command
        grace = parse_duration(svc["stop_grace_period"]) if "stop_grace_period" in svc else None
        for part in unwrap_shell(argv):
            yield Launch(f"compose {name}", part, env, grace)
        test = (svc.get("healthcheck") or {}).get("test")
        if test:
            assert test[0] in {"CMD", "CMD-SHELL"}, f"compose {name}: healthcheck {test!r}"
            parts = split_shell(test[1]) if test[0] == "CMD-SHELL" else [test[1:]]
            for part in parts:
                yield Launch(f"compose {name} healthcheck", part, env)


# ---------------------------------------------------------------- Kubernetes


def k8s_docs() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                docs.append((path.name, doc))
    return docs


def k8s_secrets() -> dict[str, dict[str, str]]:
    return {
        doc["metadata"]["name"]: {k: str(v) for k, v in doc.get("stringData", {}).items()}
        for _, doc in k8s_docs()
        if doc["kind"] == "Secret"
    }


def k8s_workloads() -> Iterator[tuple[str, dict[str, Any]]]:
    for file, doc in k8s_docs():
        if doc["kind"] in {"Deployment", "StatefulSet", "DaemonSet", "Job"}:
            yield file, doc


def k8s_container_env(container: dict[str, Any], origin: str) -> dict[str, str]:
    """The container's environment as Kubernetes builds it, Secrets resolved."""
    secrets = k8s_secrets()
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        ref = source["secretRef"]
        if ref["name"] in secrets:
            env.update(secrets[ref["name"]])
        else:
            assert ref.get("optional"), f"{origin}: envFrom names unknown Secret {ref['name']}"
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = k8s_expand(str(var["value"]), env, origin)
        else:
            ref = var["valueFrom"]["secretKeyRef"]
            assert ref["key"] in secrets.get(ref["name"], {}), f"{origin}: no secret key {ref}"
            env[var["name"]] = secrets[ref["name"]][ref["key"]]
    return env


def k8s_expand(text: str, env: Mapping[str, str], origin: str) -> str:
    """``$(VAR)`` expansion; Kubernetes leaves an undefined one as literal text, a bug here."""

    def one(match: re.Match[str]) -> str:
        assert match[1] in env, f"{origin}: $({match[1]}) is not defined before use"
        return env[match[1]]

    return re.sub(r"\$\((\w+)\)", one, text)


def k8s_launches() -> Iterator[Launch]:
    entrypoint, cmd = image_entrypoint()
    for file, doc in k8s_workloads():
        spec = doc["spec"]["template"]["spec"]
        grace = float(spec.get("terminationGracePeriodSeconds", 30))
        for container in spec["containers"]:
            origin = f"k8s {file} {doc['metadata']['name']}/{container['name']}"
            env = k8s_container_env(container, origin)
            ours = str(container["image"]).startswith("verifleet:")
            assert "command" in container or ours, f"{origin}: no command to check"
            command = container.get("command", entrypoint)
            args = container.get("args", [] if "command" in container else cmd)
            argv = [k8s_expand(str(a), env, origin) for a in [*command, *args]]
            for part in unwrap_shell(argv):
                yield Launch(origin, part, env, grace)
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                exec_ = container.get(probe, {}).get("exec")
                if exec_:
                    for part in unwrap_shell(exec_["command"]):
                        yield Launch(f"{origin} {probe}", part, env)


# ---------------------------------------------------------------- systemd


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit file as ``{section: {key: [values in order]}}``."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def parse_env_file(path: Path) -> dict[str, str]:
    env = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    return env


def env_example_for(env_file: str) -> Path:
    """``/etc/verifleet/worker.env`` is documented by ``deploy/systemd/worker.env.example``."""
    return SYSTEMD / (Path(env_file.lstrip("-")).name + ".example")


def unit_environment(unit: dict[str, dict[str, list[str]]]) -> dict[str, str]:
    """``Environment=`` defaults, overridden by the example ``EnvironmentFile=``."""
    service = unit["Service"]
    env: dict[str, str] = {}
    for assignment in service.get("Environment", []):
        for word in shlex.split(assignment):
            key, _, value = word.partition("=")
            env[key] = value
    for env_file in service.get("EnvironmentFile", []):
        env.update(parse_env_file(env_example_for(env_file)))
    return env


def systemd_expand(text: str, env: Mapping[str, str], origin: str, instance: str = "1") -> str:
    """Specifiers (instance ``%i``, host ``%H``) and ``${VAR}`` as systemd expands them."""
    specifiers = {"%": "%", "H": "host", "i": instance, "I": instance}
    text = re.sub(r"%([%iIH])", lambda m: specifiers[m[1]], text)
    assert re.search(r"%[a-zA-Z]", text) is None, f"{origin}: unexpected specifier in {text}"

    def one(match: re.Match[str]) -> str:
        # systemd substitutes an unset variable with nothing, which breaks the argv.
        assert match[1] in env, f"{origin}: ${{{match[1]}}} is set nowhere"
        return env[match[1]]

    return re.sub(r"\$\{(\w+)\}", one, text)


def systemd_launches() -> Iterator[Launch]:
    for path in sorted(SYSTEMD.glob("*.service")):
        unit = parse_unit(path)
        env = unit_environment(unit)
        grace = (
            float(unit["Service"]["TimeoutStopSec"][0])
            if "TimeoutStopSec" in unit["Service"]
            else None
        )
        for line in unit["Service"]["ExecStart"]:
            argv = shlex.split(systemd_expand(line.lstrip("-@+!"), env, path.name))
            assert argv[0].startswith("/"), f"{path.name}: ExecStart needs an absolute path"
            yield Launch(f"systemd {path.name}", [Path(argv[0]).name, *argv[1:]], env, grace)


def dockerfile_launches() -> Iterator[Launch]:
    entrypoint, cmd = image_entrypoint()
    for part in unwrap_shell(entrypoint + cmd):
        yield Launch("Dockerfile", part)


def all_launches() -> list[Launch]:
    """Every command the deploy files run, in file order."""
    return [
        *dockerfile_launches(),
        *compose_launches(),
        *k8s_launches(),
        *systemd_launches(),
    ]
