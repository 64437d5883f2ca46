"""Statistics over verification results: intervals, paired comparisons,
replicate statistics and judge reliability (docs/results.md explains each).

The core is pure (sequences in, frozen dataclasses out; numpy for arithmetic)
and knows nothing of results.
"""

from ._agreement import Classification, Kappa, classification, cohen_kappa, fleiss_kappa
from ._core import (
    DEFAULT_LEVEL,
    DEFAULT_REPS,
    DEFAULT_SEED,
    Interval,
    binom_cdf_half,
    cluster_bootstrap_mean,
    clustered_mean,
    naive_mean,
    rate_interval,
    wilson,
    z_quantile,
)
from ._paired import PairedComparison, mcnemar_exact, paired_comparison
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
    "Interval",
    "Kappa",
    "PairedComparison",
    "QuestionConsistency",
    "ReplicateStats",
    "binom_cdf_half",
    "classification",
    "cluster_bootstrap_mean",
    "clustered_mean",
    "cohen_kappa",
    "fleiss_kappa",
    "mcnemar_exact",
    "naive_mean",
    "paired_comparison",
    "pass_at_k",
    "pass_hat_k",
    "rate_interval",
    "replicate_stats",
    "wilson",
    "z_quantile",
]
