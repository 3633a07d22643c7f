#!/usr/bin/env python3
"""Validates Kubernetes manifests offline; run by tests/kubernetes.rs.

    python3 tests/kubernetes/validate.py --kubernetes 1.25 --kubernetes 1.37 FILE...

Every object of every FILE (YAML, several documents each) is validated:
- built-in kinds against the Kubernetes OpenAPI schemas of each --kubernetes version that the
  PyPI package kubernetes-validate ships, in its strict mode (unknown fields refused);
- monitoring.coreos.com/v1 kinds (the Prometheus Operator's ServiceMonitor, PrometheusRule),
  which kubernetes-validate does not know, against tests/kubernetes/prometheus-operator.schema.yml
  with jsonschema.
An object of any other kind fails. Prints one line per object and check, `FAIL ...` for each
failure, then `kubernetes-validate VERSION`; exits 1 on any failure, 3 when kubernetes-validate
is not installed.
"""

import argparse
import pathlib
import sys

INSTALL = "python3 -m pip install --break-system-packages kubernetes-validate==1.37.0"

try:
    import jsonschema
    import kubernetes_validate
    import yaml
except ImportError as e:
    print(f"kubernetes-validate is not installed ({e}); install it with: {INSTALL}")
    sys.exit(3)

HERE = pathlib.Path(__file__).resolve().parent
CRD_SCHEMA = HERE / "prometheus-operator.schema.yml"
CRD_GROUP = "monitoring.coreos.com/"


def crd_validator(kind: str, defs: dict):
    if kind not in defs:
        return None
    schema = {"$defs": defs, "$ref": f"#/$defs/{kind}"}
    cls = jsonschema.validators.Draft202012Validator
    cls.check_schema(schema)
    return cls(schema)


def where(error) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(top)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubernetes", action="append", required=True, metavar="VERSION")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    defs = yaml.safe_load(CRD_SCHEMA.read_text())["$defs"]
    failures = 0
    for name in args.files:
        try:
            docs = [d for d in yaml.safe_load_all(pathlib.Path(name).read_text()) if d is not None]
        except yaml.YAMLError as e:
            print(f"FAIL {name}: not YAML: {e}")
            failures += 1
            continue
        if not docs:
            print(f"FAIL {name}: no objects")
            failures += 1
        for doc in docs:
            kind = doc.get("kind", "?") if isinstance(doc, dict) else "?"
            obj = f"{name} {kind}/{(doc.get('metadata') or {}).get('name', '?')}"
            api = str(doc.get("apiVersion", ""))
            if api.startswith(CRD_GROUP):
                v = crd_validator(kind, defs)
                if v is None:
                    print(f"FAIL {obj}: no schema for {api} {kind} in {CRD_SCHEMA.name}")
                    failures += 1
                    continue
                errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
                for e in errors:
                    print(f"FAIL {obj}: {where(e)}: {e.message}")
                failures += len(errors)
                if not errors:
                    print(f"ok {obj}: {CRD_SCHEMA.name}")
                continue
            for version in args.kubernetes:
                try:
                    got = kubernetes_validate.validate(doc, version, strict=True)
                    print(f"ok {obj}: Kubernetes {got} (strict)")
                except kubernetes_validate.ValidationError as e:
                    print(f"FAIL {obj}: Kubernetes {e.version}: {where(e)}: {e.message}")
                    failures += 1
                except kubernetes_validate.SchemaNotFoundError as e:
                    print(f"FAIL {obj}: {e.message}")
                    failures += 1
    print(f"kubernetes-validate {kubernetes_validate.__version__}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
