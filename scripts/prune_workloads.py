#!/usr/bin/env python3
"""Prunes recorded workloads (scripts/record_workloads.py) into the shipped metric selection.

Runs `reveal-analyzer prune` over the captures of RECORDINGS/runs.json, each run in its
workload (`NAME=FILE`, so the runs of one workload are averaged, paper §4.1), and writes:

  deploy/selection.yml         the exporter's --metrics.selection (kinds of series, every CPU,
                               device and node)
  ANALYZER_YML's generated block   the analyzer's metric set (--metric-set-into, default
                               deploy/analyzer.yml); entries above the block stay as written
  docs/metric-selection/curves.csv, prune-curves.png   figure 4 over |r| 0.10-0.95
  docs/metric-selection/counts.md   channels raw, per workload and in the union
  docs/metric-selection/verdicts.jsonl   every channel's verdict

    cargo build --release -p reveal-analyzer
    python3 scripts/prune_workloads.py /tmp/reveal-workloads [--threshold 0.5]
        [--metric-set-into deploy/analyzer.yml] [--analyzer target/release/reveal-analyzer]

Needs python3 with matplotlib (scripts/requirements-render.txt).
"""

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def prune(analyzer, inputs, threshold, extra):
    cmd = [analyzer, "prune", *inputs, "--threshold", str(threshold), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"prune_workloads: {' '.join(cmd[:2])} failed:\n{r.stderr}{r.stdout}")
    return r.stdout


def plot(curves_csv, png, threshold):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    with open(curves_csv) as f:
        head = f.readline().strip().split(",")
        for line in f:
            rows.append([float(c) if c else float("nan") for c in line.strip().split(",")])
    col = {h: [r[i] for r in rows] for i, h in enumerate(head)}
    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=120)
    for key, label, color in [
        ("avg_multi_r2", "Avg multi-R² proxy", "#d4a017"),
        ("avg_max_abs_r", "Avg max |r| (removed)", "#1f77b4"),
        ("selected_ratio", "Selected ratio (per workload)", "#2ca02c"),
        ("union_selected_ratio", "Selected ratio (union)", "#98df8a"),
    ]:
        ax.plot(col["threshold"], col[key], marker="o", ms=3, label=label, color=color)
    ax.axvline(threshold, color="grey", ls="--", lw=1)
    ax.set_xlabel("correlation threshold |r|")
    ax.set_ylim(0, 1.05)
    ax.set_title("Correlation pruning on this host's recorded workloads")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)


KUBE_CONFIGMAP = "deploy/kubernetes/analyzer-config.yaml"


def sync_configmap(analyzer_yml, configmap):
    """Copies the `metrics:` list of deploy/analyzer.yml into the Kubernetes ConfigMap's copy
    of it (tests/kubernetes.rs fails when the two differ beyond their addresses)."""
    def section(lines, indent):
        b = lines.index(indent + "metrics:")
        e = b + 1
        while e < len(lines) and (not lines[e].strip() or lines[e].startswith(indent + " ")
                                  or lines[e].startswith(indent + "#")):
            e += 1
        while not lines[e - 1].strip():
            e -= 1
        return b, e
    src = open(analyzer_yml).read().splitlines()
    dst = open(configmap).read().splitlines()
    sb, se = section(src, "")
    indent = "    "  # data: → analyzer.yml: | → the file's text
    db, de = section(dst, indent)
    body = [indent + l if l.strip() else "" for l in src[sb:se]]
    with open(configmap, "w") as f:
        f.write("\n".join(dst[:db] + body + dst[de:]) + "\n")
    print(f"metric set copied into {os.path.relpath(configmap, ROOT)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("recordings")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--metric-set-into", default=os.path.join(ROOT, "deploy/analyzer.yml"))
    ap.add_argument("--selection", default=os.path.join(ROOT, "deploy/selection.yml"))
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs/metric-selection"))
    ap.add_argument("--analyzer", default=os.path.join(ROOT, "target/release/reveal-analyzer"))
    a = ap.parse_args()
    with open(os.path.join(a.recordings, "runs.json")) as f:
        plan = json.load(f)
    runs = plan["runs"]
    inputs = [f"{r['workload']}={os.path.join(a.recordings, r['file'])}" for r in runs]
    os.makedirs(a.docs, exist_ok=True)
    curves = os.path.join(a.docs, "curves.csv")
    verdicts = os.path.join(a.docs, "verdicts.jsonl")
    summary = prune(a.analyzer, inputs, a.threshold, [
        "--output.selection", a.selection, "--output.curves", curves,
        "--output.verdicts", verdicts, "--output.metric-set", a.metric_set_into])
    print(summary, end="")
    # Paths in the outputs' headers name the machine's recordings: keep only the file names.
    for path in (a.selection, a.metric_set_into):
        with open(path) as f:
            text = f.read()
        text = text.replace(os.path.abspath(a.recordings) + "/", "").replace(a.recordings + "/", "")
        with open(path, "w") as f:
            f.write(text)
    plot(curves, os.path.join(a.docs, "prune-curves.png"), a.threshold)
    if os.path.abspath(a.metric_set_into) == os.path.join(ROOT, "deploy/analyzer.yml"):
        sync_configmap(a.metric_set_into, os.path.join(ROOT, KUBE_CONFIGMAP))

    # Counts: raw channels, per workload alone, the union; and per subsystem.
    raw = per_sub = None
    with open(verdicts) as f:
        vs = [json.loads(l) for l in f]
    raw = len(vs)
    kept = [v for v in vs if v["kept"]]
    per_sub = {}
    for v in vs:
        s = per_sub.setdefault(v["subsystem"], [0, 0])
        s[0] += 1
        s[1] += v["kept"]
    lines = ["| workload | runs | channels | varied (judged) | representatives |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for m in re.finditer(r"^  (\S+): (\d+) runs, (\d+) channels, (\d+) judged, "
                         r"(\d+) representatives$", summary, re.M):
        lines.append("| " + " | ".join(m.groups()) + " |")
    varied = sum(1 for v in vs if v["reason"] != "unjudged")
    selected = sum(1 for v in vs if v["reason"] == "selected")
    lines.append(f"| **union** | {len(runs)} | {raw} | {varied} | **{selected}** |")
    read = sum(1 for v in vs if v["reason"] == "read by the metric set")
    lines += ["", f"Kept {len(kept)} of {raw}: the {selected} representatives, the "
              f"{raw - varied} channels that never varied in any run, and {read} redundant ones "
              f"that the analyzer's hand-written entries read; removed as redundant: "
              f"{raw - len(kept)}."]
    lines += ["", "| subsystem | channels | kept |", "| --- | ---: | ---: |"]
    for s in sorted(per_sub):
        lines.append(f"| {s} | {per_sub[s][0]} | {per_sub[s][1]} |")
    reasons = {}
    for v in vs:
        reasons[v["reason"]] = reasons.get(v["reason"], 0) + 1
    lines += ["", "Verdicts: " + ", ".join(f"{k} {n}" for k, n in sorted(reasons.items())) + "."]
    host = plan.get("host", {})
    lines += ["", f"Recorded on {host.get('cpus')} CPUs, Linux {host.get('kernel')}, "
              f"{len(runs)} runs at {plan.get('step_ms')} ms; |r| = {a.threshold}."]
    with open(os.path.join(a.docs, "counts.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
