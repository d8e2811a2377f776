"""A distribution-free interval for the median of a benchmark's rounds, imported by bench/run's summaries.

The interval is the k-th smallest and the k-th largest of the n values, k the largest rank at which both tails of
Binomial(n, 1/2) below k hold at most `alpha` together (Conover, Practical Nonparametric Statistics, 3rd ed., 3.2):
it assumes nothing of how the rounds spread, only that they are independent, and holds the true median with at
least 1 - alpha. With fewer than 6 values no rank reaches 95 %: the interval is then the whole range, and the
coverage printed says how sure it is.
"""
from math import comb
from statistics import median


def median_interval(values, alpha=0.05):
    """(median, low, high, coverage) of `values`; coverage is the interval's probability of holding the median."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("no values")

    def tails(k):  # P(the true median lies outside [k-th smallest, k-th largest])
        return 2 * sum(comb(n, i) for i in range(k)) * 0.5 ** n

    k = 1
    while k < (n + 1) // 2 and tails(k + 1) <= alpha:
        k += 1
    return median(ordered), ordered[k - 1], ordered[n - k], 1 - tails(k)


def describe(values, unit="", digits=2, what="round"):
    """'median M (P % interval [L, H], n rounds)' for a summary line; `what` names the values (a round, a pair)."""
    middle, low, high, coverage = median_interval(values)
    return (f"median {middle:.{digits}f}{unit} ({100 * coverage:.1f} % interval [{low:.{digits}f}, {high:.{digits}f}]"
            f"{unit}, {len(values)} {what}{'' if len(values) == 1 else 's'})")


if __name__ == "__main__":
    # A check of the ranks against Conover's table: n = 15 gives k = 4 (96.5 %), n = 11 k = 2, n = 6 k = 1 (96.9 %).
    for n, k in ((5, 1), (6, 1), (8, 1), (9, 2), (11, 2), (12, 3), (15, 4), (20, 6)):
        _, low, _, coverage = median_interval(list(range(1, n + 1)))
        assert low == k, (n, low, k)
        assert coverage >= 0.95 or n < 6, (n, coverage)
    print("ranks as in Conover's table")
