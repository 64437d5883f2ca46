"""The deployment files start real entry points of the package, with working settings.

Every command that ``Dockerfile``, ``docker-compose.yml``, ``deploy/k8s/*.yaml`` and
``deploy/systemd/*.service`` run is extracted with the environment it runs in (compose
interpolation defaults, Kubernetes ``$(VAR)`` expansion with the Secrets' values,
systemd specifiers and environment files), then checked:

- ``verifleet ...`` parses with the real CLI parser (:func:`build_parser`);
- ``celery -A MODULE ...`` names an importable module holding a Celery app;
- anything else must be a program of the Redis image (``redis-server``, ``redis-cli``).

On top of that: worker settings parse with :meth:`WorkerSettings.from_env` and every
stop grace period is longer than a unit's deadline; Redis runs with AOF and a password
that matches the workers' URL; Flower always has basic auth; compose workers scale;
the Kubernetes references (Secrets, Services, ports, ``$(VAR)``) resolve. Everything
runs offline: no Docker engine, cluster or systemd.
"""

from __future__ import annotations

import importlib
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from _support.deploy_files import (
    COMPOSE,
    ROOT,
    SYSTEMD,
    Launch,
    all_launches,
    as_argv,
    compose_interpolate,
    compose_raw,
    compose_services,
    dockerfile_instructions,
    env_example_for,
    image_entrypoint,
    k8s_docs,
    k8s_secrets,
    k8s_workloads,
    parse_env_file,
    parse_unit,
    split_shell,
    systemd_expand,
    unit_environment,
)
from celery import Celery

from verifleet.orchestrator.cli import build_parser
from verifleet.orchestrator.cli.config import build_config
from verifleet.orchestrator.cli.worker import flower_command
from verifleet.schemas import VerificationConfig, load_benchmark
from verifleet.workers._settings import WorkerSettings

pytestmark = pytest.mark.integration

# Programs the Redis image and its probes run; any other program must be ours.
EXTERNAL = {"redis-server", "redis-cli", "grep"}
DOCS = [ROOT / "deploy" / "README.md", ROOT / "docs" / "fleet.md"]


def verifleet_args(launch: Launch) -> Any:
    """The parsed arguments of a ``verifleet`` launch, parsed as the CLI would."""
    try:
        args = build_parser().parse_args(launch.argv[1:])
    except SystemExit:
        pytest.fail(f"the verifleet CLI rejects {launch}")
    assert args.command is not None, f"{launch} names no sub-command"
    return args


ALL_LAUNCHES = all_launches()


def _launch_id(launch: Launch) -> str:
    return f"{launch.origin}:{launch.argv[0]}"


# ---------------------------------------------------------------- the checks


@pytest.mark.parametrize("launch", ALL_LAUNCHES, ids=_launch_id)
def test_every_command_is_a_real_entry_point(launch: Launch) -> None:
    program = Path(launch.argv[0]).name
    if program == "verifleet":
        verifleet_args(launch)
    elif program == "celery":
        options = launch.argv[1:]
        assert "-A" in options or "--app" in options, f"{launch}: celery without -A"
        flag = "-A" if "-A" in options else "--app"
        module = importlib.import_module(options[options.index(flag) + 1])
        app = getattr(module, "app", None) or getattr(module, "celery", None)
        assert isinstance(app, Celery), f"{launch}: {module.__name__} holds no Celery app"
    else:
        assert program in EXTERNAL, f"{launch}: {program} is no entry point of verifleet"


def test_every_file_contributes_the_commands_it_should() -> None:
    # Guards the extractors: a parser that silently found nothing would pass above.
    origins = {launch.origin for launch in ALL_LAUNCHES}
    expected = {"Dockerfile"}
    expected |= {f"compose {name}" for name in compose_services()}
    for file, doc in k8s_workloads():
        for c in doc["spec"]["template"]["spec"]["containers"]:
            expected.add(f"k8s {file} {doc['metadata']['name']}/{c['name']}")
    expected |= {f"systemd {p.name}" for p in SYSTEMD.glob("*.service")}
    assert expected <= origins
    assert {"verifleet-worker@.service", "verifleet-flower.service"} <= {
        p.name for p in SYSTEMD.glob("*.service")
    }


def test_workers_settings_parse_and_stopping_waits_longer_than_a_unit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers = [
        launch
        for launch in ALL_LAUNCHES
        if launch.argv[0] == "verifleet" and verifleet_args(launch).command == "worker"
    ]
    assert {w.origin.split()[0] for w in workers} >= {"Dockerfile", "compose", "k8s", "systemd"}
    for launch in workers:
        with monkeypatch.context() as env:
            for name in (
                "VERIFLEET_REDIS_URL",
                "VERIFLEET_UNIT_DEADLINE",
                "VERIFLEET_RESTORE_INTERVAL",
                "VERIFLEET_LEASE_SECONDS",
                "VERIFLEET_PREFIX",
            ):
                env.delenv(name, raising=False)
            for key, value in launch.env.items():
                env.setenv(key, value)
            settings = WorkerSettings.from_env()
        if launch.origin == "Dockerfile":
            continue  # the image is configured where it runs: compose, k8s, systemd
        # `verifleet worker` refuses to start without a Redis URL.
        assert launch.env.get("VERIFLEET_REDIS_URL"), f"{launch}: no VERIFLEET_REDIS_URL"
        assert settings.redis_url == launch.env["VERIFLEET_REDIS_URL"]
        assert launch.grace is not None, f"{launch}: no stop grace period"
        assert launch.grace > settings.unit_deadline, (
            f"{launch}: SIGKILL after {launch.grace}s cuts a {settings.unit_deadline}s unit"
        )


def test_flower_always_runs_with_basic_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    flowers = [
        launch
        for launch in ALL_LAUNCHES
        if launch.argv[0] == "verifleet" and verifleet_args(launch).command == "flower"
    ]
    assert {f.origin.split()[0] for f in flowers} == {"compose", "k8s", "systemd"}
    for launch in flowers:
        with monkeypatch.context() as env:
            env.delenv("VERIFLEET_FLOWER_AUTH", raising=False)
            for key, value in launch.env.items():
                env.setenv(key, value)
            # The parser reads VERIFLEET_FLOWER_AUTH when it is built, as in a real start.
            args = verifleet_args(launch)
        assert args.basic_auth and ":" in args.basic_auth, f"{launch}: Flower without auth"
        assert not args.no_auth, f"{launch}: Flower started with --no-auth"
        celery_argv, celery_env = flower_command(
            "redis://unused",
            port=args.port,
            address=args.address,
            basic_auth=args.basic_auth,
            max_tasks=args.max_tasks,
            environ={},
        )
        # The credentials reach Flower through its environment, never its argv.
        assert celery_env["FLOWER_BASIC_AUTH"] == args.basic_auth
        assert not any(args.basic_auth in arg for arg in celery_argv)
        assert args.max_tasks <= 50_000, f"{launch}: Flower keeps every task in memory"


# ---------------------------------------------------------------- compose


def _redis_password(argv: list[str]) -> str:
    assert "--requirepass" in argv, f"redis without a password: {argv}"
    return argv[argv.index("--requirepass") + 1]


def _assert_aof(argv: list[str]) -> None:
    assert "--appendonly" in argv, f"redis without AOF: {argv}"
    assert argv[argv.index("--appendonly") + 1] == "yes"


def test_compose_redis_is_persistent_and_its_password_is_the_one_clients_use() -> None:
    services = compose_services()
    redis_cmd = as_argv(services["redis"]["command"])
    _assert_aof(redis_cmd)
    password = _redis_password(redis_cmd)
    assert password
    assert any(str(v).endswith(":/data") for v in services["redis"]["volumes"])
    assert services["redis"]["healthcheck"]["test"]
    for name, svc in services.items():
        url = (svc.get("environment") or {}).get("VERIFLEET_REDIS_URL")
        if name != "redis":
            assert url, f"compose {name}: no VERIFLEET_REDIS_URL"
            assert urlsplit(url).password == password, f"compose {name}: wrong Redis password"
            assert urlsplit(url).hostname == "redis"
            assert svc["depends_on"]["redis"]["condition"] == "service_healthy"


def test_compose_password_comes_from_the_environment() -> None:
    # One variable sets the server's password and every client's URL.
    services = compose_services({"REDIS_PASSWORD": "s3cret"})
    assert _redis_password(as_argv(services["redis"]["command"])) == "s3cret"
    for name in ("worker", "flower", "submit"):
        url = services[name]["environment"]["VERIFLEET_REDIS_URL"]
        assert urlsplit(url).password == "s3cret", name


def test_compose_workers_scale() -> None:
    worker = compose_services()["worker"]
    # `--scale worker=N` fails on a fixed container name or host port.
    assert "container_name" not in worker
    assert "ports" not in worker
    assert "build" in worker


def test_compose_submit_is_a_one_shot_that_submits_the_example(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    submit = compose_services()["submit"]
    assert submit["profiles"] == ["submit"], "`up` must not start the submit service"
    (launch,) = [x for x in ALL_LAUNCHES if x.origin == "compose submit"]
    args = verifleet_args(launch)
    assert args.command == "submit"
    # The benchmark path in the container comes from a bind mount of the repository.
    mounts = [str(v).split(":") for v in submit["volumes"]]
    host = next(
        ROOT / src / args.benchmark.relative_to(dest)
        for src, dest, *_ in mounts
        if args.benchmark.is_relative_to(dest) and src.startswith(".")
    )
    benchmark = load_benchmark(host)
    assert benchmark.questions
    # The default models are valid specs (the key only has to exist, as in the container).
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    config = build_config(args)
    assert config.answering_models and config.parsing_models


def test_compose_env_example_only_sets_variables_the_compose_file_reads() -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    example = parse_env_file(ROOT / "deploy" / "compose.env.example")
    for name in example:
        assert "${" + name in text, f"compose.env.example sets {name}, unused by compose"
    for name in ("REDIS_PASSWORD", "VERIFLEET_FLOWER_AUTH"):
        assert name in example, f"compose.env.example should make you set {name}"


def test_compose_file_is_valid() -> None:
    """The compose file is valid compose, checked offline as far as the machine allows.

    Structural checks always run. ``docker-compose config -q`` (Debian package
    ``docker-compose``: parses and validates without an engine) runs when the binary
    is installed, and the compose JSON schema bundled with ``check-jsonschema`` when
    that package is importable; neither is a hard dependency of the test suite, so
    without them only the structural checks below stand (no skip: they still assert).
    """
    data = compose_raw()
    assert set(data) <= {"services", "volumes", "networks", "configs", "secrets"} | {
        k for k in data if k.startswith("x-")
    }
    declared = set(data.get("volumes") or {})
    for name, svc in compose_services().items():
        assert "image" in svc or "build" in svc, f"compose {name}: no image"
        for volume in svc.get("volumes", []):
            source = str(volume).split(":")[0]
            assert source.startswith((".", "/")) or source in declared, f"{name}: {source}"
        for dep in svc.get("depends_on", {}):
            assert dep in data["services"], f"{name} depends on unknown {dep}"
    if shutil.which("docker-compose"):
        # With the file's defaults, and with the .env a user copies from the example.
        example = ["--env-file", str(ROOT / "deploy" / "compose.env.example")]
        for env_file in ([], example):
            command = ["docker-compose", "-f", str(COMPOSE), *env_file]
            done = subprocess.run(
                [*command, "--profile", "submit", "config", "-q"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stderr
    if find_spec("check_jsonschema") is not None:
        # The package has no `python -m` entry; its console script sits beside python.
        script = Path(sys.executable).with_name("check-jsonschema")
        assert script.exists(), f"check_jsonschema is importable but {script} is missing"
        done = subprocess.run(
            [str(script), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------- Dockerfile


def test_dockerfile_builds_every_subpackage_with_cpu_torch_as_a_non_root_user() -> None:
    steps = dockerfile_instructions()
    assert steps[0] == ("FROM", "python:3.11-slim")
    runs = [rest for word, rest in steps if word == "RUN"]
    torch = next(i for i, r in enumerate(runs) if "torch==" in r)
    package = next(i for i, r in enumerate(runs) if re.search(r"pip install \S*\.", r))
    # CPU torch must be in place first, or the embedding extra pulls a CUDA build.
    assert torch < package
    assert "--index-url" in runs[torch] and "/cpu" in runs[torch]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    folders = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    copied = {rest.split()[0].rstrip("/") for word, rest in steps if word == "COPY"}
    assert folders <= copied, f"the image misses {folders - copied}"
    ignored = {
        line.strip().rstrip("/")
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert not (copied & ignored), f".dockerignore hides {copied & ignored}"
    for source in copied - {"pyproject.toml", "setup.py", "README.md"}:
        assert (ROOT / source).is_dir(), f"COPY of missing {source}"
    users = [rest for word, rest in steps if word == "USER"]
    assert users and users[-1] not in {"root", "0"}
    assert image_entrypoint()[0] == ["verifleet"]


# ---------------------------------------------------------------- Kubernetes


def test_k8s_kustomization_lists_every_manifest() -> None:
    docs = k8s_docs()
    (kustomization,) = [doc for _, doc in docs if doc["kind"] == "Kustomization"]
    files = {file for file, doc in docs if doc["kind"] != "Kustomization"}
    assert set(kustomization["resources"]) == files
    for file, doc in docs:
        assert {"apiVersion", "kind"} <= set(doc), file
        if doc["kind"] not in {"Namespace", "Kustomization"}:
            assert doc["metadata"]["namespace"] == kustomization["namespace"], file


def test_k8s_services_and_selectors_reach_their_pods() -> None:
    templates = {}
    for file, doc in k8s_workloads():
        labels = doc["spec"]["template"]["metadata"]["labels"]
        assert doc["spec"]["selector"]["matchLabels"].items() <= labels.items(), file
        ports = {
            p["name"]
            for c in doc["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        templates[doc["metadata"]["name"]] = (labels, ports)
    services = [doc for _, doc in k8s_docs() if doc["kind"] == "Service"]
    assert {s["metadata"]["name"] for s in services} == {"verifleet-redis", "verifleet-flower"}
    for svc in services:
        selector = svc["spec"]["selector"].items()
        matches = [ports for labels, ports in templates.values() if selector <= labels.items()]
        assert matches, f"Service {svc['metadata']['name']} selects no pod"
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in matches[0], f"{svc['metadata']['name']}: {port}"


def test_k8s_redis_is_persistent_and_workers_use_its_service_and_password() -> None:
    launches = [x for x in ALL_LAUNCHES if x.origin.startswith("k8s")]
    (redis,) = [x for x in launches if x.argv[0] == "redis-server"]
    _assert_aof(redis.argv)
    password = _redis_password(redis.argv)
    assert password == k8s_secrets()["verifleet-credentials"]["redis-password"]
    (statefulset,) = [doc for _, doc in k8s_workloads() if doc["kind"] == "StatefulSet"]
    claims = {c["metadata"]["name"] for c in statefulset["spec"]["volumeClaimTemplates"]}
    mounts = statefulset["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert any(m["mountPath"] == "/data" and m["name"] in claims for m in mounts)
    clients = [x for x in launches if x.argv[0] == "verifleet"]
    assert len(clients) == 2
    for launch in clients:
        url = urlsplit(launch.env["VERIFLEET_REDIS_URL"])
        assert url.password == password and url.hostname == "verifleet-redis", launch.origin


def test_k8s_workers_have_resources_and_no_shared_state() -> None:
    (worker,) = [d for _, d in k8s_workloads() if d["metadata"]["name"] == "verifleet-worker"]
    assert worker["spec"]["replicas"] >= 1
    pod = worker["spec"]["template"]["spec"]
    for container in pod["containers"]:
        assert {"requests", "limits"} <= set(container["resources"])
        assert "volumeMounts" not in container, "workers keep nothing on disk"
    _assert_root_then_dropped(pod["securityContext"], pod["containers"][0]["securityContext"])


def _assert_root_then_dropped(pod_or_user: Any, container: dict[str, Any]) -> None:
    """Workers run as root with no capability but CAP_SETUID and CAP_SETGID and no
    privilege escalation: only enough to start sandbox executors as another uid."""
    if isinstance(pod_or_user, dict):
        assert pod_or_user["runAsUser"] == 0 and pod_or_user["runAsNonRoot"] is False
        assert pod_or_user["seccompProfile"]["type"] == "RuntimeDefault"
        caps = container["capabilities"]
        assert caps["drop"] == ["ALL"] and sorted(caps["add"]) == ["SETGID", "SETUID"]
        assert container["allowPrivilegeEscalation"] is False
    else:
        assert pod_or_user == "0:0"
        assert container["cap_drop"] == ["ALL"]
        assert sorted(container["cap_add"]) == ["SETGID", "SETUID"]
        assert "no-new-privileges:true" in container["security_opt"]


def test_compose_and_k8s_workers_start_executors_as_another_uid() -> None:
    """The shipped containers forbid user namespaces (Docker's default seccomp
    profile, RuntimeDefault), so their strongest mode is seccomp with executors
    under another uid (verifleet.sandbox._identity): root, then dropped."""
    worker = compose_raw()["services"]["worker"]
    _assert_root_then_dropped(worker["user"], worker)
    launches = [x for x in ALL_LAUNCHES if x.argv[:2] == ["verifleet", "worker"]]
    for launch in launches:
        if launch.origin.split()[0] in ("compose", "k8s"):
            assert launch.env.get("VERIFLEET_SANDBOX") == "seccomp", launch.origin
            assert launch.env.get("VERIFLEET_SANDBOX_UID", "65534") == "65534", launch.origin


# ---------------------------------------------------------------- systemd


def test_systemd_worker_unit_stops_gracefully_and_restarts() -> None:
    unit = parse_unit(SYSTEMD / "verifleet-worker@.service")
    service = unit["Service"]
    # SIGTERM to Celery's main process only: it then finishes running units itself.
    assert service["KillMode"] == ["mixed"]
    assert service["Restart"] == ["always"]
    assert service["User"] != ["root"]
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]
    for env_file in service["EnvironmentFile"]:
        assert env_example_for(env_file).is_file(), f"no example for {env_file}"
    # Instances on one machine need distinct Celery names, or Flower shows one worker.
    env = unit_environment(unit)
    hostnames = set()
    for instance in ("1", "2"):
        argv = shlex.split(systemd_expand(service["ExecStart"][0], env, "unit", instance))
        hostnames.add(verifleet_args(Launch("unit", ["verifleet", *argv[1:]])).hostname)
    assert len(hostnames) == 2 and None not in hostnames


def test_every_verifleet_variable_set_is_one_the_package_or_the_file_reads() -> None:
    # A misspelt setting (VERIFLEET_REDIS_URI) is silently ignored at run time.
    sources = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in (
            "verifleet",
            "schemas",
            "pipeline",
            "workers",
            "orchestrator",
            "limits",
            "sandbox",
        )
        for p in (ROOT / folder).rglob("*.py")
    )
    # The worker's settings are read by field name under their prefix (pydantic
    # settings): VERIFLEET_UNIT_DEADLINE is the field unit_deadline.
    by_field = {f"VERIFLEET_{field.upper()}" for field in WorkerSettings.model_fields}
    unit_texts = {p.name: p.read_text(encoding="utf-8") for p in SYSTEMD.glob("*.service")}
    for launch in ALL_LAUNCHES:
        for name in launch.env:
            if not name.startswith("VERIFLEET_"):
                continue
            used_by_unit = launch.origin.startswith("systemd") and (
                "${" + name + "}" in unit_texts[launch.origin.split()[1]]
            )
            read = name in by_field or re.search(rf"\b{name}\b", sources) is not None
            assert read or used_by_unit, f"{launch.origin}: nothing reads {name}"


# ---------------------------------------------------------------- docs


def doc_commands(path: Path) -> Iterator[list[str]]:
    """``verifleet ...`` lines of the shell blocks in a Markdown page."""
    blocks = re.findall(r"```(?:bash|sh|shell|console)\n(.*?)```", path.read_text("utf-8"), re.S)
    for block in blocks:
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("verifleet "):
                yield shlex.split(line.split(" #")[0])


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_documented_commands_parse(page: Path) -> None:
    commands = list(doc_commands(page))
    assert len(commands) >= 3, f"{page.name}: expected a walkthrough with commands"
    for argv in commands:
        verifleet_args(Launch(page.name, argv))


def test_documented_endpoint_limits_config_is_a_valid_config() -> None:
    text = (ROOT / "docs" / "fleet.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
    config = VerificationConfig.build(**yaml.safe_load(block))
    models = config.answering_models + config.parsing_models
    assert any(m.max_concurrency for m in models)
    assert any(m.requests_per_minute and m.tokens_per_minute for m in models)
    assert all(m.adaptive_concurrency for m in models)  # the default, not switched off


# ---------------------------------------------------------------- the readers themselves


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("${A:-dflt}", {}, "dflt"),
        ("${A:-dflt}", {"A": ""}, "dflt"),  # `:-` also replaces an empty value
        ("${A-dflt}", {"A": ""}, ""),  # `-` only replaces an unset one
        ("${A}", {"A": "v"}, "v"),
        ("celery@$$HOSTNAME", {}, "celery@$HOSTNAME"),
    ],
)
def test_compose_interpolation_follows_compose(
    text: str, env: dict[str, str], expected: str
) -> None:
    assert compose_interpolate(text, env) == expected


def test_shell_scripts_split_into_every_program_they_run() -> None:
    assert split_shell("exec redis-cli ping | grep -q PONG && celery -A m inspect ping") == [
        ["redis-cli", "ping"],
        ["grep", "-q", "PONG"],
        ["celery", "-A", "m", "inspect", "ping"],
    ]
