#!/usr/bin/env python3
"""Time scikit-learn's versions of the paper's three detectors on the matrices
the Rust detector benchmark exports, for the speed ratio and the side-by-side
ROC-AUC.

    REVEAL_BENCH_EXPORT=/tmp/reveal-bench cargo bench -p reveal-analyzer --bench detectors
    python3 analyzer/reference/sklearn/bench_sklearn.py /tmp/reveal-bench

Single-threaded (BLAS limited to one thread), like the Rust detectors. Fit time
includes scoring the baseline for the 99th-percentile threshold, as in Rust.
"""
import json
import os
import sys
import time

import numpy as np
from sklearn.decomposition import PCA
from sklearn.ensemble import IsolationForest
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

SINGLE_ROWS = 200  # rows scored one at a time for the per-window latency


def zscore():
    state = {}

    def fit(x):
        state["s"] = StandardScaler().fit(x)
        state["t"] = np.percentile(score(x), 99)

    def score(x):
        return np.abs(state["s"].transform(x)).mean(axis=1)

    return fit, score


def pca_mahalanobis():
    state = {}

    def fit(x):
        state["s"] = StandardScaler().fit(x)
        state["p"] = PCA(n_components=0.95).fit(state["s"].transform(x))
        state["t"] = np.percentile(score(x), 99)

    def score(x):
        t = state["p"].transform(state["s"].transform(x))
        return np.sqrt((t**2 / state["p"].explained_variance_).sum(axis=1))

    return fit, score


def iforest():
    state = {}

    def fit(x):
        state["f"] = IsolationForest(n_estimators=100, max_samples=256, contamination=0.01, random_state=1).fit(x)

    def score(x):
        return -state["f"].score_samples(x)

    return fit, score


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("REVEAL_BENCH_EXPORT", "/tmp/reveal-bench")
    print("| scenario | detector | ROC-AUC | fit (s) | score (µs/window, one at a time) | score (µs/window, batch) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".json")):
        meta = json.load(open(os.path.join(folder, name + ".json")))
        x = np.fromfile(os.path.join(folder, name + ".f32"), dtype="<f4").astype(np.float64)
        x = x.reshape(meta["rows"], meta["cols"])
        labels = np.array(meta["labels"], dtype=bool)
        for label, make in [("zscore", zscore), ("pca", pca_mahalanobis), ("iforest", iforest)]:
            fit, score = make()
            start = time.perf_counter()
            fit(x)
            fit_s = time.perf_counter() - start
            start = time.perf_counter()
            s = score(x)
            batch_us = (time.perf_counter() - start) * 1e6 / len(x)
            start = time.perf_counter()
            for i in range(SINGLE_ROWS):
                score(x[i : i + 1])
            single_us = (time.perf_counter() - start) * 1e6 / SINGLE_ROWS
            auc = roc_auc_score(labels, s)
            print(f"| {name} | {label} | {auc:.3f} | {fit_s:.3f} | {single_us:.1f} | {batch_us:.1f} |")


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
