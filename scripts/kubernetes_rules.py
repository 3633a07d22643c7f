#!/usr/bin/env python3
"""Writes the Prometheus Operator's PrometheusRule objects of deploy/kubernetes/ from rules/.

    python3 scripts/kubernetes_rules.py            # rewrite deploy/kubernetes/prometheusrule-*.yaml
    python3 scripts/kubernetes_rules.py --check    # exit 1 if a written file is out of date

One PrometheusRule per rule file of rules/ (every `*.rules.yml`), whose `spec.groups` is the
file's `groups` list. The groups are copied as text, shifted right under `spec:`, so each rule
keeps its comment; the file's own header comment is kept too. The copy is then parsed back
(PyYAML, Debian's python3-yaml) and must equal the rule file's groups, or nothing is written.
tests/kubernetes.rs makes the same comparison independently and fails when they drift.
"""

import argparse
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"
OUT = ROOT / "deploy" / "kubernetes"
NAMESPACE = "reveal"

# What each rule file is for in the cluster, said above the generated object.
NOTES = {
    "anomaly-alerts.rules.yml": [
        "Not in kustomization.yaml's resources, as rules/prometheus.yml leaves this rule file",
        "out of rule_files: it alerts on the analyzer's anomaly series instead of the analyzer",
        "sending its own alerts. To use it, add it to the resources and remove",
        "`outputs.alertmanager` from the analyzer's ConfigMap (analyzer-config.yaml), or each",
        "incident alerts twice.",
    ],
}


def object_name(rule_file: pathlib.Path) -> str:
    """`recording.rules.yml` -> `reveal-recording`."""
    return "reveal-" + rule_file.name.removesuffix(".rules.yml")


def output_path(rule_file: pathlib.Path) -> pathlib.Path:
    return OUT / ("prometheusrule-" + rule_file.name.removesuffix(".rules.yml") + ".yaml")


def render(rule_file: pathlib.Path) -> str:
    text = rule_file.read_text()
    lines = text.splitlines()
    try:
        start = lines.index("groups:")
    except ValueError:
        sys.exit(f"{rule_file}: no top-level `groups:` line")
    header = [l for l in lines[:start] if l.strip()]
    if any(not l.startswith("#") for l in header):
        sys.exit(f"{rule_file}: only comments may come before `groups:`")
    rel = rule_file.relative_to(ROOT)
    out = [
        f"# GENERATED from {rel} by scripts/kubernetes_rules.py: do not edit.",
        "# Change the rule file, then regenerate with",
        "#",
        "#   python3 scripts/kubernetes_rules.py",
        "#",
        "# tests/kubernetes.rs fails when spec.groups and the rule file's groups differ.",
    ]
    if rule_file.name in NOTES:
        out += ["#"] + [f"# {note}" for note in NOTES[rule_file.name]]
    out.append("#")
    out.append(f"# The rule file's own header ({rel}):")
    out.append("#")
    out.extend(header)
    out += [
        "apiVersion: monitoring.coreos.com/v1",
        "kind: PrometheusRule",
        "metadata:",
        f"  name: {object_name(rule_file)}",
        f"  namespace: {NAMESPACE}",
        "  labels:",
        "    app.kubernetes.io/name: " + object_name(rule_file),
        "    app.kubernetes.io/part-of: reveal",
        "spec:",
    ]
    # Every line moves two columns right; blank lines stay empty. Block scalars (`|`, `>-`)
    # keep their content, since their indentation is relative to the key's.
    out += ["  " + l if l.strip() else "" for l in lines[start:]]
    rendered = "\n".join(out) + "\n"

    want = yaml.safe_load(text)["groups"]
    got = yaml.safe_load(rendered)["spec"]["groups"]
    if got != want:
        sys.exit(f"{rule_file}: the shifted groups do not parse back to the same value")
    return rendered


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report stale files, write nothing")
    args = ap.parse_args()
    rule_files = sorted(RULES.glob("*.rules.yml"))
    if not rule_files:
        sys.exit(f"no *.rules.yml in {RULES}")
    stale = []
    for rf in rule_files:
        path = output_path(rf)
        text = render(rf)
        if path.exists() and path.read_text() == text:
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("out of date (run python3 scripts/kubernetes_rules.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
