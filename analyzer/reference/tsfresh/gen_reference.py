#!/usr/bin/env python3
"""Reference feature values from tsfresh for analyzer/tests/tsfresh_parity.rs.

Writes analyzer/tests/fixtures/tsfresh_reference.json: every fixture series (inputs, with
null for a gap) and tsfresh's value of every feature the analyzer computes, by tsfresh's
column name. Gaps: the analyzer computes features on a window's finite samples, so the
reference is tsfresh on the series with its NaN entries dropped.

    pip install -r analyzer/reference/tsfresh/requirements.txt
    python3 analyzer/reference/tsfresh/gen_reference.py
"""
import json
import math
import pathlib
import re
import sys
import warnings

import numpy as np
import pandas as pd
import scipy
import statsmodels
import tsfresh
from tsfresh import extract_features

FC_PARAMETERS = {
    "mean": None,
    "variance": None,
    "standard_deviation": None,
    "minimum": None,
    "maximum": None,
    "skewness": None,
    "kurtosis": None,
    "linear_trend": [{"attr": "slope"}, {"attr": "intercept"}, {"attr": "rvalue"}],
    "autocorrelation": [{"lag": 1}],
    "augmented_dickey_fuller": [
        {"attr": "teststat", "autolag": "AIC"},
        {"attr": "pvalue", "autolag": "AIC"},
    ],
    "mean_abs_change": None,
    "sum_values": None,
}


def fixture_series():
    """Named series covering the shapes windows take, including the degenerate ones."""
    rng = np.random.default_rng(20251121)
    t = np.arange(30, dtype=float)
    noise = rng.standard_normal(30)
    walk = np.cumsum(rng.standard_normal(30))
    gapped = np.cumsum(rng.standard_normal(30)) + 50.0
    gapped[[3, 4, 17, 29]] = np.nan
    spikes = np.zeros(30)
    spikes[[7, 21]] = [40.0, 15.0]
    counts = rng.poisson(2.0, 30).astype(float)
    return {
        "constant_5": np.full(30, 5.0),
        "constant_0": np.zeros(30),
        "near_constant": 1.0 + 1e-9 * rng.standard_normal(30),
        "small_scale": 1e-6 * rng.standard_normal(30),
        "huge_1e12": 1e12 + 1e3 * rng.standard_normal(30),
        "huge_1e12_unit_noise": 1e12 + rng.standard_normal(30),
        "n1": np.array([3.5]),
        "n2": np.array([1.0, 4.0]),
        "n3": np.array([2.0, -1.0, 7.0]),
        "n4": np.array([2.0, -1.0, 7.0, 3.0]),
        "n6": np.array([0.5, 1.5, 0.25, 2.0, 1.0, 3.0]),
        "random_walk": walk,
        "trend_noise": 3.0 + 0.5 * t + 0.2 * noise,
        "sine": 10.0 * np.sin(2 * np.pi * t / 10.0) + 0.01 * noise,
        "spikes": spikes,
        "gapped_walk": gapped,
        "event_counts": counts,
        "noise_100": rng.standard_normal(100),
        "walk_300": np.cumsum(rng.standard_normal(300)),
        "utilization": np.clip(0.6 + 0.05 * rng.standard_normal(30), 0, 1),
        "first_is_outlier": np.concatenate([[1e6], 0.5 * rng.standard_normal(29)]),
        "step_change": np.where(t < 15, 2.0, 9.0) + 0.1 * noise,
        "alternating": np.where(t % 2 == 0, 1.0, -1.0),
        "negative_drift": -1e4 - 3.0 * t + rng.standard_normal(30),
        "quantized_counter": np.floor(5 * rng.uniform(size=30)),
        "mostly_gaps": np.where(rng.uniform(size=30) < 0.5, np.nan, rng.standard_normal(30)),
    }


def tsfresh_features(x):
    x = x[~np.isnan(x)]
    df = pd.DataFrame({"id": 0, "time": np.arange(len(x)), "value": x})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = extract_features(
            df,
            column_id="id",
            column_sort="time",
            default_fc_parameters=FC_PARAMETERS,
            n_jobs=0,
            disable_progressbar=True,
        )
    return {k: float(v) for k, v in out.iloc[0].items()}


ADF = 'value__augmented_dickey_fuller__attr_"teststat"__autolag_"AIC"'
ADF_P = 'value__augmented_dickey_fuller__attr_"pvalue"__autolag_"AIC"'


def adf_shift_check(x, raw):
    """The ADF statistic is invariant to adding a constant to the series (the model has
    one), but statsmodels' pseudo-inverse is not: on 1e12 +- noise it declares the level
    column rank-deficient and returns garbage. Where tsfresh's value is not reproduced by
    the same test on the series shifted by its first value, the shifted value (and its
    p-value) is the reference and the raw one is recorded beside it."""
    from statsmodels.tsa.stattools import adfuller

    x = x[~np.isnan(x)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = adfuller(x - x[0], autolag="AIC")
    except (ValueError, np.linalg.LinAlgError):
        return None
    shifted, pvalue = float(res[0]), float(res[1])
    if raw is None or math.isnan(raw) or math.isnan(shifted):
        return None
    if abs(shifted - raw) <= 1e-9 * max(abs(raw), 1.0):
        return None
    return shifted, pvalue


def json_number(v):
    return None if (v is None or math.isnan(v)) else v


def main():
    series = []
    for name, x in fixture_series().items():
        x = np.asarray(x, dtype=float)
        feats = tsfresh_features(x)
        entry = {
            "name": name,
            "values": [json_number(float(v)) for v in x],
            "features": {k: json_number(v) for k, v in sorted(feats.items())},
        }
        shifted = adf_shift_check(x, feats[ADF])
        if feats[ADF] is not None and abs(feats[ADF]) > 1e9:
            # A perfect fit (e.g. +1, -1, +1, ...): the residual is rounding noise and so
            # is the statistic; the analyzer returns NaN by design.
            entry["tsfresh_unstable"] = {
                ADF: {"tsfresh": feats[ADF], "reference": "NaN: perfect fit, statistic is rounding noise"},
                ADF_P: {"tsfresh": feats[ADF_P], "reference": "NaN: the p-value of that statistic"},
            }
            entry["features"][ADF] = None
            entry["features"][ADF_P] = None
        elif shifted is not None:
            entry["tsfresh_unstable"] = {
                ADF: {
                    "tsfresh": feats[ADF],
                    "reference": "adfuller(x - x[0]), same test on the shifted series",
                },
                ADF_P: {
                    "tsfresh": feats[ADF_P],
                    "reference": "adfuller(x - x[0]), same test on the shifted series",
                },
            }
            entry["features"][ADF], entry["features"][ADF_P] = shifted
        series.append(entry)
    doc = {
        "generated_by": "analyzer/reference/tsfresh/gen_reference.py",
        "versions": {
            "python": sys.version.split()[0],
            "tsfresh": tsfresh.__version__,
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "scipy": scipy.__version__,
            "statsmodels": statsmodels.__version__,
        },
        "nan_policy": "features of the finite samples: NaN entries (null) dropped before tsfresh",
        "series": series,
    }
    root = pathlib.Path(__file__).resolve().parents[2]
    out = root / "tests" / "fixtures" / "tsfresh_reference.json"
    text = json.dumps(doc, indent=1, allow_nan=False)
    # One line per input series keeps the file reviewable.
    text = re.sub(r"\[\s*([-0-9.e+null,\s]*?)\s*\]", lambda m: "[" + re.sub(r"\s+", "", m.group(1)).replace(",", ", ") + "]", text)
    out.write_text(text + "\n")
    print(f"wrote {out} ({len(series)} series)")


if __name__ == "__main__":
    main()
