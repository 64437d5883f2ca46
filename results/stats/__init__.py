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


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: a run's pass-rate table needs the intervals of _core, not numpy's
# agreement statistics.
__getattr__, __dir__ = _lazy.exports(__name__)
