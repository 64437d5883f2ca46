"""``verifleet export``: write a results file again, in any format, with its human
labels in the label columns and its run manifest kept (docs/results.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]

_EPILOG = """\
examples:
  verifleet export results.parquet --out labelled.parquet   # labels made in `verifleet view`
  verifleet export results.parquet --out results.csv        # another format
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` sub-command."""
    parser = commands.add_parser(
        "export",
        description=(
            "Read RESULTS and write every result to --out (format from the extension). "
            "The human labels kept beside RESULTS (RESULTS.labels.jsonl, what "
            "`verifleet view` writes) go with them: into the label_correct and "
            "label_note columns of a Parquet or CSV file, and into --out's own labels "
            "file in every format. The run manifest is kept too. No verdict changes."
        ),
        epilog=_EPILOG,
    )
    parser.add_argument("results", type=Path, help="a results file")
    parser.add_argument("--out", type=Path, required=True, help=".parquet, .json, .jsonl or .csv")
    parser.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    from verifleet.orchestrator import read_manifest, read_results, resolve_format, write_results
    from verifleet.results import write_manifest_beside
    from verifleet.results.stats import carry_labels, label_cells
    from verifleet.schemas import ConfigError

    source, out = Path(args.results), Path(args.out)
    if not source.is_file():
        raise ConfigError(f"{source}: no such results file")
    resolve_format(out)  # an unknown extension fails before anything is read
    if out.exists() and out.resolve() == source.resolve():
        raise ConfigError("--out must be another file than RESULTS")
    results = read_results(source)
    manifest = read_manifest(source)
    labels = carry_labels(source, out)
    count = write_results(results, out, manifest=manifest, labels=label_cells(labels))
    if manifest is not None:
        write_manifest_beside(out, manifest)
    print(f"{count} results written to {out} ({len(labels)} with a human label)")
    return 0
