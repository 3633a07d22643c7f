#!/usr/bin/env python3
"""Evaluates a metric set over a stretch of a Prometheus and writes trace.csv.gz and metric-set.yml.

    export_trace.py CONFIG PROMETHEUS_URL START_MS END_MS OUT_DIR

CONFIG is an analyzer configuration whose `metrics:` give the expressions (deploy/analyzer.yml);
any length (asked in chunks of 1000 s). Used by scripts/record_fault_trace.sh, and to cut a fixture
out of a kept evaluation run (scripts/evaluate.sh --keep-data): the analyzer's tests replay
these files (analyzer/tests/fixtures/).
"""
import argparse, csv, gzip, io, json, math, re, sys, urllib.parse, urllib.request

_ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
_ap.add_argument("config", metavar="CONFIG", help="an analyzer configuration with `metrics:`")
_ap.add_argument("prom", metavar="PROMETHEUS_URL")
_ap.add_argument("start_ms", metavar="START_MS")
_ap.add_argument("end_ms", metavar="END_MS")
_ap.add_argument("out", metavar="OUT_DIR")
_args = _ap.parse_args()
config, prom, start_ms, end_ms, out = _args.config, _args.prom, _args.start_ms, _args.end_ms, _args.out

import yaml  # noqa: E402  (after the arguments: --help needs no PyYAML)
STEP_MS = 100
start = -(-int(start_ms) // STEP_MS) * STEP_MS  # first grid point inside the recording
end = int(end_ms) // STEP_MS * STEP_MS
# Prometheus answers at most 11000 points a series: longer stretches are asked in chunks.
CHUNK_MS = 10000 * STEP_MS
RATE = re.compile(r"^\s*(rate|irate|increase)\(\s*([A-Za-z_:][\w:]*)\s*(\{[^}]*\})?\s*\[(\w+)\]\s*\)\s*$")
# A rate inside a subquery's mean (`avg_over_time(clamp_max(irate(x[250ms]), 1)[1s:100ms])`,
# a disk's busy time with each step held): a rate over the subquery's range.
RATE_IN = re.compile(r"^\s*avg_over_time\(.*\b(?:rate|irate)\(\s*([A-Za-z_:][\w:]*)\s*(?:\{[^}]*\})?\s*\[\w+\]\s*\).*\[(\w+):\w*\]\s*\)\s*$")

def channel_name(spec):
    """The name of a series without __name__, never ending in _total (see the header)."""
    if spec.get("name"):
        n = spec["name"]
    else:
        m, held = RATE.match(spec["expr"]), RATE_IN.match(spec["expr"])
        if m and m.group(2).endswith("_total"):
            n = f"{m.group(2)[: -len('_total')]}:{m.group(1)}{m.group(4)}"
        elif held and held.group(1).endswith("_total"):
            n = f"{held.group(1)[: -len('_total')]}:rate{held.group(2)}"
        else:
            sys.exit(f"give {spec['expr']!r} a name: in the metric set")
    if n.endswith("_total"):
        sys.exit(f"{n}: a rate column must not end in _total (CSV reads it as a counter)")
    return n

def esc(v):
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

specs = yaml.safe_load(open(config))["metrics"]
columns = {}  # header -> {t_ms: value}
entries = {}  # column metric name -> (subsystem, kind, expr, resolution or None)
def query_range(expr):
    """Every series of `expr` over [start, end], asked in chunks: [(labels, values)]."""
    series = {}
    for a in range(start, end + 1, CHUNK_MS):
        b = min(a + CHUNK_MS - STEP_MS, end)
        q = urllib.parse.urlencode({"query": expr, "start": a / 1000, "end": b / 1000,
                                    "step": STEP_MS / 1000})
        with urllib.request.urlopen(f"{prom}/api/v1/query_range?{q}", timeout=60) as r:
            body = json.load(r)
        if body.get("status") != "success":
            sys.exit(f"{expr}: {body}")
        for s in body["data"]["result"]:
            key = json.dumps(s["metric"], sort_keys=True)
            series.setdefault(key, {"metric": s["metric"], "values": []})["values"] += s["values"]
    return list(series.values())

for spec in specs:
    for s in query_range(spec["expr"]):
        labels = dict(s["metric"])
        name = labels.pop("__name__", None) or channel_name(spec)
        if "kind" not in spec or "subsystem" not in spec:
            sys.exit(f"{spec['expr']}: the metric set must give subsystem and kind")
        prev = entries.setdefault(name, (spec["subsystem"], spec["kind"], spec["expr"],
                                         spec.get("resolution")))
        if prev[:2] != (spec["subsystem"], spec["kind"]):
            sys.exit(f"{name}: two entries give it different subsystems or kinds")
        header = name + "{" + ",".join(f'{k}="{esc(v)}"' for k, v in sorted(labels.items())) + "}"
        if header in columns:
            sys.exit(f"{header}: returned by two expressions")
        values = {}
        for t, v in s["values"]:
            v = float(v)
            if math.isfinite(v):
                values[round(float(t) * 1000)] = f"{v:.6g}"
        if values:  # a series with no finite value says nothing
            columns[header] = values

headers = sorted(columns)
buf = io.StringIO()
w = csv.writer(buf, lineterminator="\n")
w.writerow(["t_ms"] + headers)
for t in range(start, end + 1, STEP_MS):
    w.writerow([t] + [columns[h].get(t, "") for h in headers])
with gzip.GzipFile(f"{out}/trace.csv.gz", "wb", compresslevel=9, mtime=0) as f:
    f.write(buf.getvalue().encode())

with open(f"{out}/metric-set.yml", "w") as f:
    f.write("# Subsystem and kind of each column of trace.csv.gz, from the deploy/analyzer.yml\n"
            "# entry that produced it (written by scripts/export_trace.py).\n"
            "metrics:\n")
    for name in sorted(entries):
        sub, kind, expr, resolution = entries[name]
        if not any(h.startswith(name + "{") for h in headers):
            continue
        f.write(f"  # {expr}\n  - expr: '{re.escape(name)}'\n"
                f"    subsystem: {sub}\n    kind: {kind}\n")
        if resolution is not None:
            f.write(f"    resolution: {resolution}\n")
print(f"{len(headers)} columns, {(end - start) // STEP_MS + 1} rows", file=sys.stderr)
