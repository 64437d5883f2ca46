"""Statistics over verification results: intervals, paired comparisons,
replicate statistics and judge reliability (docs/results.md explains each).

The core is pure (sequences in, frozen dataclasses out; numpy for arithmetic)
and knows nothing of results; ``_results`` turns result lists into its inputs
and ``_labels`` keeps human labels beside a results file.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._agreement import Classification, Kappa, classification, cohen_kappa, fleiss_kappa
    from ._core import (
        DEFAULT_LEVEL,
        DEFAULT_REPS,
        DEFAULT_SEED,
        Interval,
        binom_cdf_half,
        cluster_bootstrap_mean,
        clustered_mean,
        clustered_mean_from_sums,
        naive_mean,
        rate_interval,
        rate_interval_from_sums,
        wilson,
        z_quantile,
    )
    from ._labels import (
        Label,
        append_label,
        carry_labels,
        label_cells,
        labels_path,
        read_label_entries,
        read_labels,
        write_labels,
    )
    from ._paired import PairedComparison, mcnemar_exact, paired_comparison
    from ._results import (
        ComparisonReport,
        Disagreement,
        Flip,
        JudgeReport,
        UnitKey,
        compare_models,
        compare_runs,
        explain_flip,
        judge_report,
        unit_key,
        verdict,
    )
    from ._replicates import (
        QuestionConsistency,
        ReplicateStats,
        pass_at_k,
        pass_hat_k,
        replicate_stats,
    )

# name -> the submodule that defines it, loaded on first use: a run's pass-rate
# table needs the intervals of _core, not numpy's agreement statistics
_LAZY: dict[str, str] = {
    "Classification": "._agreement",
    "Kappa": "._agreement",
    "classification": "._agreement",
    "cohen_kappa": "._agreement",
    "fleiss_kappa": "._agreement",
    "DEFAULT_LEVEL": "._core",
    "DEFAULT_REPS": "._core",
    "DEFAULT_SEED": "._core",
    "Interval": "._core",
    "binom_cdf_half": "._core",
    "cluster_bootstrap_mean": "._core",
    "clustered_mean": "._core",
    "clustered_mean_from_sums": "._core",
    "naive_mean": "._core",
    "rate_interval": "._core",
    "rate_interval_from_sums": "._core",
    "wilson": "._core",
    "z_quantile": "._core",
    "Label": "._labels",
    "append_label": "._labels",
    "carry_labels": "._labels",
    "label_cells": "._labels",
    "labels_path": "._labels",
    "read_label_entries": "._labels",
    "read_labels": "._labels",
    "write_labels": "._labels",
    "PairedComparison": "._paired",
    "mcnemar_exact": "._paired",
    "paired_comparison": "._paired",
    "ComparisonReport": "._results",
    "Disagreement": "._results",
    "Flip": "._results",
    "JudgeReport": "._results",
    "UnitKey": "._results",
    "compare_models": "._results",
    "compare_runs": "._results",
    "explain_flip": "._results",
    "judge_report": "._results",
    "unit_key": "._results",
    "verdict": "._results",
    "QuestionConsistency": "._replicates",
    "ReplicateStats": "._replicates",
    "pass_at_k": "._replicates",
    "pass_hat_k": "._replicates",
    "replicate_stats": "._replicates",
}

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_REPS",
    "DEFAULT_SEED",
    "Classification",
    "ComparisonReport",
    "Disagreement",
    "Flip",
    "Interval",
    "JudgeReport",
    "Kappa",
    "Label",
    "PairedComparison",
    "QuestionConsistency",
    "ReplicateStats",
    "UnitKey",
    "append_label",
    "binom_cdf_half",
    "carry_labels",
    "classification",
    "cluster_bootstrap_mean",
    "clustered_mean",
    "clustered_mean_from_sums",
    "cohen_kappa",
    "compare_models",
    "compare_runs",
    "explain_flip",
    "fleiss_kappa",
    "judge_report",
    "label_cells",
    "labels_path",
    "mcnemar_exact",
    "naive_mean",
    "paired_comparison",
    "pass_at_k",
    "pass_hat_k",
    "rate_interval",
    "rate_interval_from_sums",
    "read_label_entries",
    "read_labels",
    "replicate_stats",
    "unit_key",
    "verdict",
    "wilson",
    "write_labels",
    "z_quantile",
]


__getattr__, __dir__ = _lazy.exports(__name__, _LAZY)
