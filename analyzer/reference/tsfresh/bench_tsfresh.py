#!/usr/bin/env python3
"""Feature extraction speed: tsfresh, a vectorized numpy version, and the analyzer, on the
same windows (700 channels x 30 samples), one core each, in one run.

    pip install -r analyzer/reference/tsfresh/requirements.txt
    python3 analyzer/reference/tsfresh/bench_tsfresh.py [--windows 20] [--tsfresh-windows 3]

It writes the data to a temporary directory, times tsfresh (`extract_features`, n_jobs=0,
the analyzer's feature set, with and without ADF) and numpy on it, runs
`cargo bench -p reveal-analyzer --bench features` on the same file, and prints one table
with the speed ratios.
"""
import argparse
import json
import os
import pathlib
import subprocess
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
from tsfresh import extract_features

CHANNELS, SAMPLES = 700, 30
FC = {
    "mean": None,
    "variance": None,
    "standard_deviation": None,
    "minimum": None,
    "maximum": None,
    "skewness": None,
    "kurtosis": None,
    "linear_trend": [{"attr": "slope"}, {"attr": "intercept"}, {"attr": "rvalue"}],
    "autocorrelation": [{"lag": 1}],
    "mean_abs_change": None,
}
FC_ADF = dict(FC, augmented_dickey_fuller=[{"attr": "teststat", "autolag": "AIC"}])


def make_data(windows, seed=7):
    """Per channel a mix of random walk, noise, sine and spikes (like the Rust bench)."""
    rng = np.random.default_rng(seed)
    t = np.arange(SAMPLES)
    data = np.empty((windows, CHANNELS, SAMPLES))
    for c in range(CHANNELS):
        kind = c % 4
        if kind == 0:
            data[:, c] = 100 * rng.uniform(-0.5, 0.5, (windows, 1)) + np.cumsum(
                rng.uniform(-0.5, 0.5, (windows, SAMPLES)), axis=1
            )
        elif kind == 1:
            data[:, c] = rng.uniform(-0.5, 0.5, (windows, SAMPLES))
        elif kind == 2:
            data[:, c] = np.sin(t * 0.6 + c) + 0.1 * rng.uniform(-0.5, 0.5, (windows, SAMPLES))
        else:
            spikes = rng.uniform(size=(windows, SAMPLES)) > 0.95
            data[:, c] = np.where(spikes, 10.0, 0.1 * rng.uniform(-0.5, 0.5, (windows, SAMPLES)))
    return data


def tsfresh_window(x, fc):
    df = pd.DataFrame(
        {
            "id": np.repeat(np.arange(CHANNELS), SAMPLES),
            "time": np.tile(np.arange(SAMPLES), CHANNELS),
            "value": x.reshape(-1),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return extract_features(
            df,
            column_id="id",
            column_sort="time",
            default_fc_parameters=fc,
            n_jobs=0,
            disable_progressbar=True,
        )


def numpy_window(x, adf=False):
    """The same features on a (channels, samples) array with whole-array operations."""
    n = x.shape[1]
    mean = x.mean(axis=1)
    d = x - mean[:, None]
    var = (d**2).mean(axis=1)
    m2, m3, m4 = (d**2).sum(1), (d**3).sum(1), (d**4).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        skew = m3 / m2**1.5 * (n * np.sqrt(n - 1) / (n - 2))
        kurt = (n - 1) / ((n - 2) * (n - 3)) * (n * (n + 1) * m4 / m2**2 - 3 * (n - 1))
        tx = np.arange(n) - (n - 1) / 2
        sxy = (d * tx).sum(1) / n
        sxx = (tx**2).mean()
        slope = sxy / sxx
        intercept = mean - slope * (n - 1) / 2
        r = np.clip(sxy / np.sqrt(sxx * var), -1, 1)
        ac = (d[:, :-1] * d[:, 1:]).sum(1) / ((n - 1) * var)
    out = [mean, var, np.sqrt(var), x.min(1), x.max(1), skew, kurt, slope, intercept, r, ac,
           np.abs(np.diff(x, axis=1)).mean(1)]
    if adf:
        out.append(numpy_adf(x))
    return np.stack(out, axis=1)


def numpy_adf(x):
    """ADF t-statistic with AIC lag search, batched over channels (normal equations)."""
    ch, n = x.shape
    maxlag = min(int(np.ceil(12 * (n / 100) ** 0.25)), n // 2 - 2)
    dx = np.diff(x, axis=1)

    def design(p, rows_from):
        t = np.arange(rows_from, n - 1)
        cols = [np.ones((ch, len(t))), x[:, t] - x[:, :1]]
        cols += [dx[:, t - j] for j in range(1, p + 1)]
        return np.stack(cols, axis=2), dx[:, t]

    best_aic = np.full(ch, np.inf)
    best_p = np.zeros(ch, dtype=int)
    for p in range(maxlag + 1):
        X, y = design(maxlag, maxlag)
        X = X[:, :, : p + 2]
        beta = np.linalg.solve(X.transpose(0, 2, 1) @ X, (X.transpose(0, 2, 1) @ y[:, :, None]))
        ssr = ((y - (X @ beta)[:, :, 0]) ** 2).sum(1)
        nobs = X.shape[1]
        aic = nobs * (np.log(2 * np.pi) + np.log(ssr / nobs) + 1) + 2 * (p + 2)
        better = aic < best_aic
        best_aic[better], best_p[better] = aic[better], p
    stat = np.empty(ch)
    for p in np.unique(best_p):
        idx = best_p == p
        X, y = design(p, p)
        X, y = X[idx], y[idx]
        xtx_inv = np.linalg.inv(X.transpose(0, 2, 1) @ X)
        beta = (xtx_inv @ (X.transpose(0, 2, 1) @ y[:, :, None]))[:, :, 0]
        ssr = ((y - (X @ beta[:, :, None])[:, :, 0]) ** 2).sum(1)
        sigma2 = ssr / (X.shape[1] - X.shape[2])
        stat[idx] = beta[:, 1] / np.sqrt(sigma2 * xtx_inv[:, 1, 1])
    return stat


def timed(fn, reps):
    times = []
    for i in range(reps):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=20)
    ap.add_argument("--tsfresh-windows", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, like the Rust bench
    data = make_data(args.windows)
    root = pathlib.Path(__file__).resolve().parents[3]
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "windows")
        data.astype("<f8").tofile(base + ".f64")
        with open(base + ".json", "w") as f:
            json.dump({"windows": args.windows, "channels": CHANNELS, "samples": SAMPLES}, f)
        out = os.path.join(tmp, "rust.json")
        env = dict(os.environ, REVEAL_BENCH_DATA=base, REVEAL_BENCH_JSON=out)
        subprocess.run(
            ["cargo", "bench", "-q", "-p", "reveal-analyzer", "--bench", "features"],
            cwd=root, env=env, check=True,
        )
        rust = json.load(open(out))
    tw = args.tsfresh_windows
    rows = []
    for label, fc, adf, key in [
        ("without ADF", FC, False, "rust_no_adf"),
        ("with ADF", FC_ADF, True, "rust_adf"),
    ]:
        ts = timed(lambda i: tsfresh_window(data[i % len(data)], fc), tw)
        npy = timed(lambda i: numpy_window(data[i % len(data)], adf), max(args.windows, 5))
        rs = rust[key]["median_ms"]
        rows.append((label, ts, npy, rs))
    print()
    print(f"median ms per window, {CHANNELS} channels x {SAMPLES} samples, one core")
    print("| features | tsfresh | numpy (vectorized) | reveal-analyzer | vs tsfresh | vs numpy |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, ts, npy, rs in rows:
        print(f"| {label} | {ts:.1f} | {npy:.2f} | {rs:.3f} | {ts / rs:.0f}x | {npy / rs:.1f}x |")


if __name__ == "__main__":
    main()
