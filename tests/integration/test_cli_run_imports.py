"""``verifleet run`` against an OpenAI-compatible endpoint imports only what
its path to the first unit needs (issue 36): the modules the command loads
before its units start leave langchain, openai, aiohttp, numpy, pandas, redis
and Celery unimported (each costs seconds of start-up where nothing is
cached). A fresh interpreter per check: this test process has them loaded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

_HEAVY = (
    "aiohttp",
    "celery",
    "langchain",
    "langgraph",
    "langsmith",
    "numpy",
    "openai",
    "pandas",
    "redis",
)

# What orchestrator/cli/run.py and the local runner load before a unit starts,
# and the caller of an OpenAI-compatible endpoint a unit builds.
_RUN_PATH = """
import json, sys
from verifleet.orchestrator.cli import build_parser
build_parser("run")
from verifleet.schemas import ModelConfig, load_benchmark
from verifleet.orchestrator._local.lock import OutputLock, check_output
from verifleet.orchestrator.cli._console import make_console
from verifleet.orchestrator.cli._sandbox import start_sandbox_soon
from verifleet.orchestrator.cli.config import build_config
from verifleet.orchestrator._preflight import PreflightGate
from verifleet.orchestrator._local.output import RunOutput
from verifleet.orchestrator._local.progress import RunProgress
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.orchestrator._local.tally import PassRateTally
from verifleet.pipeline import PipelineResources, run_unit, make_chat_caller
from verifleet.pipeline import UsageTracker, ChatModelCache
from verifleet.schemas import RetryPolicy
check_output(__import__("pathlib").Path("out.parquet"))
model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
options = dict(
    tracker=UsageTracker(), clients=ChatModelCache(), policy=RetryPolicy(), request_timeout=5.0
)
print(type(make_chat_caller(model, **options)).__name__)
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_run_path_leaves_heavy_packages_unimported(tmp_path: object) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _RUN_PATH],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(tmp_path),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    caller, loaded = done.stdout.strip().splitlines()[-2:]
    assert caller == "OpenAIHttpChatCaller"
    assert not set(json.loads(loaded)) & set(_HEAVY), sorted(set(json.loads(loaded)) & set(_HEAVY))


def test_a_langchain_model_still_gets_its_caller() -> None:
    """The lazy imports load langchain when a model needs it."""
    code = """
from verifleet.pipeline import make_chat_caller, UsageTracker, ChatModelCache
from verifleet.schemas import ModelConfig, RetryPolicy
options = dict(
    tracker=UsageTracker(), clients=ChatModelCache(), policy=RetryPolicy(), request_timeout=5.0
)
print(type(make_chat_caller(ModelConfig.parse("openai:gpt-4.1-mini"), **options)).__name__)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "LangchainChatCaller"
