#!/usr/bin/env python3
"""Generate the committed detector-parity data set and scikit-learn's ROC-AUCs on it.

The data imitate a windows x features matrix of host telemetry: features driven
by a few shared workload factors plus noise of their own, one constant column,
and 5% of windows with injected anomalies of three kinds (a few features
shifted, a block's correlation broken, a block's variance raised). The Rust test
`analyzer/tests/sklearn_parity.rs` reads the matrix and checks that each of the
paper's literal detectors reaches scikit-learn's ROC-AUC within 0.01.

Writes (beside the Rust test's fixtures):
  synthetic.f32   row-major little-endian float32 matrix
  synthetic.json  shape, labels, and the reference ROC-AUCs

Run: python3 analyzer/reference/sklearn/gen_synthetic.py
"""
import json
import os

import numpy as np
import sklearn
from sklearn.decomposition import PCA
from sklearn.ensemble import IsolationForest
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler

SEED = 20240611
ROWS, COLS, FACTORS = 1200, 300, 6
ANOMALY_FRACTION = 0.05
IFOREST_SEEDS = 20
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "sklearn")


def generate(rng):
    # Slowly varying workload factors (AR(1) over windows) and loadings.
    f = np.zeros((ROWS, FACTORS))
    for t in range(1, ROWS):
        f[t] = 0.9 * f[t - 1] + np.sqrt(1 - 0.81) * rng.standard_normal(FACTORS)
    loadings = rng.standard_normal((FACTORS, COLS)) * (rng.random((FACTORS, COLS)) < 0.4)
    own = rng.uniform(0.2, 0.8, COLS)
    x = f @ loadings + own * rng.standard_normal((ROWS, COLS))
    # Heavier tails in a fifth of the features, offsets and scales like real units.
    heavy = rng.random(COLS) < 0.2
    x[:, heavy] += 0.3 * rng.standard_t(3, (ROWS, heavy.sum()))
    x = x * rng.uniform(0.5, 50.0, COLS) + rng.uniform(-100.0, 1000.0, COLS)
    x[:, 17] = 42.0  # a constant column
    sd = x.std(axis=0)

    labels = np.zeros(ROWS, dtype=bool)
    anomalous = rng.choice(np.arange(10, ROWS), int(ROWS * ANOMALY_FRACTION), replace=False)
    for i, w in enumerate(anomalous):
        labels[w] = True
        kind = i % 3
        if kind == 0:  # a few features shifted
            cols = rng.choice(COLS, rng.integers(3, 12), replace=False)
            x[w, cols] += rng.choice([-1, 1], cols.size) * rng.uniform(1.5, 3.0, cols.size) * sd[cols]
        elif kind == 1:  # a block's correlation broken: values drawn independently
            start = rng.integers(0, COLS - 30)
            cols = np.arange(start, start + 30)
            donor = rng.integers(0, ROWS, cols.size)
            x[w, cols] = x[donor, cols]
        else:  # a block's variance raised
            start = rng.integers(0, COLS - 20)
            cols = np.arange(start, start + 20)
            x[w, cols] += rng.standard_normal(cols.size) * 1.5 * sd[cols]
    x[:, 17] = 42.0
    return x.astype(np.float32), labels


def references(x, labels):
    z = StandardScaler().fit_transform(x)
    zscore = np.abs(z).mean(axis=1)
    pca = PCA(n_components=0.95, svd_solver="full").fit(z)
    t = pca.transform(z)
    maha = np.sqrt((t**2 / pca.explained_variance_).sum(axis=1))
    aucs = []
    for s in range(IFOREST_SEEDS):
        forest = IsolationForest(n_estimators=100, max_samples=256, contamination=0.01, random_state=s)
        forest.fit(x)
        aucs.append(roc_auc_score(labels, -forest.score_samples(x)))
    return {
        "zscore_mean_abs": roc_auc_score(labels, zscore),
        "pca95_mahalanobis": roc_auc_score(labels, maha),
        "pca95_components": int(pca.n_components_),
        "iforest_mean_over_seeds": float(np.mean(aucs)),
        "iforest_std_over_seeds": float(np.std(aucs)),
        "iforest_seeds": IFOREST_SEEDS,
    }


def main():
    rng = np.random.default_rng(SEED)
    x, labels = generate(rng)
    x64 = x.astype(np.float64)
    ref = references(x64, labels)
    os.makedirs(OUT, exist_ok=True)
    x.astype("<f4").tofile(os.path.join(OUT, "synthetic.f32"))
    meta = {
        "rows": ROWS,
        "cols": COLS,
        "seed": SEED,
        "labels": [int(v) for v in labels],
        "reference_auc": ref,
        "versions": {"numpy": np.__version__, "scikit-learn": sklearn.__version__},
        "protocol": "fit on all windows, score the same windows; IsolationForest AUC is the mean over random_state 0..seeds-1",
    }
    with open(os.path.join(OUT, "synthetic.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
        fh.write("\n")
    print(json.dumps(ref, indent=1))


if __name__ == "__main__":
    main()
