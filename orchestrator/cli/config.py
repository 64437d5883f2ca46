"""Building a :class:`VerificationConfig` from a config file plus command-line flags.

Flags override the file; models named on the command line replace the file's
model lists. Every problem is reported as a :class:`ConfigError` naming the field
or the flag.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifleet.schemas import ModelConfig, VerificationConfig

# verifleet.schemas and yaml are imported by the functions that need them: building
# the parser (``--help``) must not pay for them.

__all__ = [
    "add_config_arguments",
    "add_cost_arguments",
    "apply_cost_arguments",
    "build_config",
    "local_model_needed",
    "missing_credentials",
    "read_config_file",
]

LOCAL = "local"

# The environment variable each langchain provider reads its key from.
_PROVIDER_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
}


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags shared by ``run`` and ``submit``."""
    models = parser.add_argument_group("models")
    models.add_argument(
        "--answering", nargs="+", metavar="MODEL", default=None, help="answering model(s)"
    )
    models.add_argument(
        "--parsing", nargs="+", metavar="MODEL", default=None, help="parsing (judge) model(s)"
    )
    models.add_argument(
        "--mcp",
        action="append",
        metavar="NAME=URL",
        default=None,
        help="attach an MCP server to every answering model (repeatable); the model "
        "then answers as a tool-using agent (docs/agents.md)",
    )
    run = parser.add_argument_group("verification")
    run.add_argument("--config", type=Path, help="YAML or JSON file with VerificationConfig fields")
    run.add_argument("--replicates", type=int, help="replicates per question and answering model")
    run.add_argument(
        "--mode",
        choices=["template_only", "template_and_rubric", "rubric_only"],
        help="evaluation mode (default: template_only)",
    )
    run.add_argument(
        "--concurrency",
        type=int,
        help="most units at once (default 256; the endpoints' adaptive windows decide below it)",
    )
    run.add_argument("--run-name", help="label stored in every result")
    run.add_argument("--abstention", action="store_true", default=None, help="abstention check")
    run.add_argument("--sufficiency", action="store_true", default=None, help="sufficiency check")
    run.add_argument("--embedding-check", action="store_true", default=None, help="embedding check")
    run.add_argument(
        "--deep-judgment", action="store_true", default=None, help="template deep judgment"
    )
    run.add_argument("--request-timeout", type=float, help="seconds per model call (default 120)")
    add_cost_arguments(parser)
    search = parser.add_argument_group("deep-judgment search")
    search.add_argument(
        "--deep-judgment-search",
        action="store_true",
        default=None,
        help="check template deep-judgment excerpts with a search provider (hallucination risk)",
    )
    search.add_argument(
        "--search-tool",
        choices=["tavily", "local"],
        help="search provider for template and rubric deep judgment: tavily (web, needs "
        "TAVILY_API_KEY; the default) or local (BM25 over --search-documents, offline)",
    )
    search.add_argument(
        "--search-documents",
        metavar="PATH",
        help="local search: a folder of .txt/.md files or a .jsonl file of "
        '{"content", "title", "url"} records',
    )


def add_cost_arguments(parser: argparse.ArgumentParser, *, budget: bool = True) -> None:
    """``--pricing``, ``--cache`` and (with ``budget``) ``--max-cost``
    (docs/iterating.md)."""
    cost = parser.add_argument_group("cost and cache")
    cost.add_argument(
        "--pricing",
        type=Path,
        metavar="FILE",
        help="price table (YAML: model -> USD per million input/output/cached_input "
        "tokens; example: examples/pricing.yaml): every result gets cost_usd",
    )
    cost.add_argument(
        "--cache",
        action="store_true",
        default=None,
        help="reuse replies of identical model calls from the call cache (fleet: in "
        "Redis; local: on disk, VERIFLEET_CACHE_DIR)",
    )
    if budget:
        cost.add_argument(
            "--max-cost",
            type=float,
            metavar="USD",
            help="start no new unit once spent plus in-flight cost reaches USD "
            "(needs --pricing); resume with a larger budget to finish",
        )


def apply_cost_arguments(data: dict[str, Any], args: argparse.Namespace, base: Path | None) -> None:
    """Put ``--pricing``/``--cache``/``--max-cost`` into config ``data``; a
    ``pricing:`` given as a path (in the config file) is read, relative to
    ``base``.

    Raises:
        ConfigError: an unreadable or invalid price table, or a budget without one.
    """
    from verifleet.schemas import ConfigError, load_pricing

    pricing = getattr(args, "pricing", None)
    if pricing is not None:
        data["pricing"] = load_pricing(pricing)
    elif isinstance(data.get("pricing"), str):
        path = Path(data["pricing"])
        data["pricing"] = load_pricing(path if base is None or path.is_absolute() else base / path)
    if getattr(args, "cache", None):
        data["cache"] = True
    max_cost = getattr(args, "max_cost", None)
    if max_cost is not None:
        if max_cost <= 0:
            raise ConfigError(f"--max-cost {max_cost}: the budget must be more than 0 USD")
        data["max_cost_usd"] = max_cost
    if data.get("max_cost_usd") is not None and not data.get("pricing"):
        raise ConfigError(
            "--max-cost (max_cost_usd) needs prices: pass --pricing FILE or set pricing in --config"
        )


def local_model_needed(args: argparse.Namespace) -> bool:
    """True when a model spec on the command line is ``local``."""
    return LOCAL in (args.answering or []) or LOCAL in (args.parsing or [])


def read_config_file(path: Path) -> dict[str, Any]:
    """The fields of a YAML/JSON config file (a preset of the original unwrapped).

    Raises:
        ConfigError: unreadable, not YAML/JSON, or not a mapping.
    """
    import yaml

    from verifleet.schemas import ConfigError, unwrap_preset

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'}: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of VerificationConfig fields")
    # A preset saved by the original framework wraps the fields in "config".
    return unwrap_preset(data)


def _models(specs: list[str], local_spec: str | None, flag: str) -> list[ModelConfig]:
    from verifleet.schemas import ConfigError, ModelConfig

    models = []
    for spec in specs:
        if spec == LOCAL:
            if local_spec is None:
                raise ConfigError(f"{flag} local: the local model is not running")
            # A tiny model needs room for structured JSON replies.
            models.append(ModelConfig.parse(local_spec, max_tokens=512))
        else:
            models.append(ModelConfig.parse(spec))
    return models


def _with_mcp(models: list[Any], specs: list[str]) -> list[Any]:
    """``models`` with the ``--mcp NAME=URL`` servers added to their ``mcp_urls_dict``.

    Raises:
        ConfigError: a spec is not ``NAME=URL``.
    """
    from verifleet.schemas import ConfigError, ModelConfig

    servers: dict[str, str] = {}
    for spec in specs:
        name, sep, url = spec.partition("=")
        if not sep or not name.strip() or not url.strip():
            raise ConfigError(f"--mcp {spec}: expected NAME=URL")
        servers[name.strip()] = url.strip()
    out: list[Any] = []
    for model in models:
        if isinstance(model, ModelConfig):
            merged = {**(model.mcp_urls_dict or {}), **servers}
            out.append(model.model_copy(update={"mcp_urls_dict": merged}))
        elif isinstance(model, dict):
            out.append(
                {**model, "mcp_urls_dict": {**(model.get("mcp_urls_dict") or {}), **servers}}
            )
        else:
            out.append(model)
    return out


def build_config(args: argparse.Namespace, *, local_spec: str | None = None) -> VerificationConfig:
    """Merge the config file and the flags into a validated config.

    Raises:
        ConfigError: an unreadable file, a bad model spec, an invalid field, or a
            model whose API key is not in the environment.
    """
    from verifleet.schemas import ConfigError, VerificationConfig

    data = read_config_file(args.config) if args.config else {}
    if args.answering:
        data["answering_models"] = _models(args.answering, local_spec, "--answering")
    if args.parsing:
        data["parsing_models"] = _models(args.parsing, local_spec, "--parsing")
    if getattr(args, "mcp", None):
        data["answering_models"] = _with_mcp(data.get("answering_models") or [], args.mcp)
    overrides = {
        "replicate_count": args.replicates,
        "evaluation_mode": args.mode,
        "max_concurrency": args.concurrency,
        "run_name": args.run_name,
        "abstention_enabled": args.abstention,
        "sufficiency_enabled": args.sufficiency,
        "embedding_check_enabled": args.embedding_check,
        "deep_judgment_enabled": args.deep_judgment,
        "request_timeout": args.request_timeout,
        "deep_judgment_search_enabled": args.deep_judgment_search,
        "deep_judgment_search_tool": args.search_tool,
        "deep_judgment_rubric_search_tool": args.search_tool,
        "deep_judgment_search_documents": args.search_documents,
    }
    data.update({k: v for k, v in overrides.items() if v is not None})
    apply_cost_arguments(data, args, args.config.parent if args.config else None)
    if "parsing_models" not in data:
        raise ConfigError(
            "no parsing model: pass --parsing MODEL or set parsing_models in --config"
        )
    if "answering_models" not in data and not data.get("parsing_only"):
        raise ConfigError(
            "no answering model: pass --answering MODEL or set answering_models in --config"
        )
    config = VerificationConfig.build(**data)
    problems = missing_credentials(config)
    if problems:
        raise ConfigError("; ".join(problems))
    return config


def missing_credentials(config: VerificationConfig) -> list[str]:
    """One message per model whose API key is not in the environment."""
    problems = []
    seen = set()
    for model in [*config.answering_models, *config.parsing_models]:
        var = model.api_key_env
        if var is None and model.interface == "langchain":
            var = _PROVIDER_KEYS.get(model.model_provider or "")
        if var is None and model.interface == "openrouter":
            var = "OPENROUTER_API_KEY"
        if var and not os.environ.get(var) and var not in seen:
            seen.add(var)
            problems.append(f"model {model.id}: set the API key in the environment variable {var}")
    return problems
