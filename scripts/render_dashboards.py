#!/usr/bin/env python3
"""Renders every panel of Reveal's Grafana dashboards to PNG, from a live Prometheus.

Each dashboard in grafana/dashboards/ becomes one PNG in the Grafana layout: every panel's
queries are run against Prometheus over the last minutes and plotted, so the README can show
what the dashboards look like on real data without a Grafana. Start the stack first, e.g.

    scripts/quickstart.sh --demo-fault          # in one terminal; wait for the fault's alert
    python3 scripts/render_dashboards.py --minutes 10 --out docs/dashboards

Requirements: scripts/requirements-render.txt (matplotlib). Only the standard library
otherwise; Grafana's variables are filled as Grafana would for one host: `job` as "All" (every
exporter job), `instance` as the first host of those jobs; the `datasource` variable is the
Prometheus given here.
"""

import argparse
import json
import pathlib
import re
import time
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent


def get_json(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


class Prom:
    def __init__(self, base):
        self.base = base.rstrip("/")

    def api(self, path, **params):
        d = get_json(f"{self.base}/api/v1/{path}?{urllib.parse.urlencode(params)}")
        if d.get("status") != "success":
            raise RuntimeError(f"{path} {params}: {d}")
        return d["data"]

    def range(self, expr, start, end, step):
        return self.api("query_range", query=expr, start=start, end=end, step=step)["result"]

    def instant(self, expr, at):
        r = self.api("query", query=expr, time=at)
        return r["result"] if r["resultType"] == "vector" else []


def legend(fmt, metric, expr):
    if not fmt:
        return ",".join(f"{k}={v}" for k, v in sorted(metric.items()) if k != "__name__") or expr[:40]
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt)


def scale(unit):
    """(factor, axis label) for Grafana units."""
    return {
        "percentunit": (100, "%"),
        "bytes": (1 / 2**30, "GiB"),
        "Bps": (1 / 2**20, "MiB/s"),
        "hertz": (1e-9, "GHz"),
        "watt": (1, "W"),
        "s": (1, "s"),
        "ops": (1, "/s"),
    }.get(unit, (1, ""))


# The job variable's "All" (its allValue): every exporter job.
ALL_JOBS = ".+"


def substitute(expr, instance, minutes):
    escaped = re.escape(instance).replace("\\", "\\\\")
    return (expr.replace("$__rate_interval", "4s").replace("$__interval", "1s")
            .replace("$__range", f"{minutes}m").replace('=~"$instance"', f'=~"{escaped}"')
            .replace("$instance", instance).replace("$job", ALL_JOBS))


def first_instance(prom, dashboard, at, minutes):
    """The first value of the instance variable (label_values(selector, instance), the
    selector chained on $job); "" for a dashboard without one."""
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") != "query" or v.get("name") != "instance":
            continue
        m = re.match(r"label_values\((.+),\s*(\w+)\)$", v["query"]["query"])
        if m:
            r = prom.instant(f"count by ({m.group(2)}) ({substitute(m.group(1), '', minutes)})", at)
            values = sorted(s["metric"].get(m.group(2), "") for s in r)
            if values:
                return values[0]
    return ""


def spans(prom, dashboard, instance, start, end, step, minutes):
    """Time spans of the dashboard's annotation queries (anomalous windows, firing alerts)."""
    out = []
    for a in dashboard.get("annotations", {}).get("list", []):
        if a.get("datasource", {}).get("type") != "prometheus":
            continue
        for s in prom.range(substitute(a["expr"], instance, minutes), start, end, step):
            ts = [float(t) for t, _ in s["values"]]
            if not ts:
                continue
            # Merge consecutive points into spans.
            lo = prev = ts[0]
            for t in ts[1:] + [None]:
                if t is None or t - prev > 2 * step:
                    out.append((lo, prev + step, a.get("iconColor", "red")))
                    if t is not None:
                        lo = t
                if t is not None:
                    prev = t
    return out


def no_data(ax, why="no data in this run"):
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, color="gray", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])


def as_dates(ts):
    import datetime
    return [datetime.datetime.fromtimestamp(t) for t in ts]


def draw_timeseries(ax, prom, panel, instance, start, end, step, minutes, shade):
    d = panel["fieldConfig"]["defaults"]
    factor, label = scale(d.get("unit", ""))
    custom = d.get("custom", {})
    stacked = custom.get("stacking", {}).get("mode") == "normal"
    bars = custom.get("drawStyle") == "bars"
    n = 0
    base = None
    for t in panel["targets"]:
        for s in prom.range(substitute(t["expr"], instance, minutes), start, end, step)[:12]:
            ts = [float(x) for x, _ in s["values"]]
            ys = [float(v) * factor for _, v in s["values"]]
            name = legend(t.get("legendFormat", ""), s["metric"], t["expr"])
            if stacked:
                import numpy as np
                grid = np.arange(start, end + step / 2, step)
                yv = np.interp(grid, ts, ys, left=0, right=0) if len(ts) > 1 else np.zeros_like(grid)
                lower = base if base is not None else np.zeros_like(grid)
                ax.fill_between(as_dates(grid), lower, lower + yv, step="post", alpha=0.5, label=name, linewidth=0.5)
                base = lower + yv
            elif bars:
                ax.bar(as_dates(ts), ys, width=step / 86400 * 0.9, label=name)
            else:
                ax.plot(as_dates(ts), ys, linewidth=0.9, label=name)
            n += 1
    if n == 0:
        no_data(ax)
        return
    ax.set_xlim(*as_dates([start, end]))
    if custom.get("thresholdsStyle", {}).get("mode", "off") != "off":
        for st in d.get("thresholds", {}).get("steps", []):
            if st.get("value") is not None:
                ax.axhline(st["value"] * factor, color="red", linestyle="--", linewidth=1)
    for lo, hi, color in shade:
        ax.axvspan(*as_dates([lo, hi]), color=color, alpha=0.12, linewidth=0)
    if "min" in d:
        ax.set_ylim(bottom=d["min"] * factor)
    if "max" in d:
        ax.set_ylim(top=d["max"] * factor * 1.05)
    ax.set_ylabel(label, fontsize=7)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    ax.tick_params(labelsize=6)
    ax.legend(fontsize=5, loc="upper left", ncol=2, framealpha=0.6)


def draw_instant(ax, prom, panel, instance, at, minutes, kind):
    t = panel["targets"][0]
    rows = []
    for s in prom.instant(substitute(t["expr"], instance, minutes), at):
        rows.append((legend(t.get("legendFormat", ""), s["metric"], t["expr"]), float(s["value"][1]), s["metric"]))
    if not rows:
        why = ("none firing" if "ALERTS" in t["expr"] else
               "no flagged windows" if "reveal_anomaly_agreement" in t["expr"] else "no data in this run")
        no_data(ax, why)
        return
    if kind == "bargauge":
        rows.sort(key=lambda r: r[1])
        ax.barh([r[0] for r in rows], [r[1] for r in rows], color="tab:orange")
        ax.tick_params(labelsize=7)
    elif kind == "stat":
        ax.axis("off")
        steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
        for i, (name, v, _) in enumerate(rows[:4]):
            color = "green"
            for st in steps:
                if st.get("value") is not None and v >= st["value"]:
                    color = st["color"]
            ax.text(0.5, 0.7 - i * 0.3, f"{v:g}", ha="center", fontsize=20, color=color, transform=ax.transAxes)
            ax.text(0.5, 0.55 - i * 0.3, name, ha="center", fontsize=7, transform=ax.transAxes)
    else:  # table of labels, and of the value where the panel maps it to text (a severity)
        ax.axis("off")
        keys = sorted({k for _, _, m in rows for k in m if k not in ("__name__", "job")})
        cells = [[m.get(k, "") for k in keys] for _, _, m in rows[:8]]
        value = value_column(panel)
        if value:
            name, texts = value
            keys.append(name)
            for cell, (_, v, _) in zip(cells, rows[:8]):
                cell.append(texts.get(f"{v:g}", f"{v:g}"))
        tab = ax.table(cellText=cells, colLabels=keys, loc="upper center", cellLoc="left")
        tab.auto_set_font_size(False)
        tab.set_fontsize(6)


def value_column(panel):
    """(column name, {value: text}) of a table panel whose Value field has value mappings."""
    for o in panel.get("fieldConfig", {}).get("overrides", []):
        if o.get("matcher", {}).get("options") != "Value":
            continue
        props = {pr["id"]: pr["value"] for pr in o.get("properties", [])}
        texts = {k: m.get("text", k) for mapping in props.get("mappings", []) for k, m in mapping.get("options", {}).items()}
        if texts:
            return props.get("displayName", "Value"), texts
    return None


def draw_heatmap(ax, prom, panel, instance, start, end, step, minutes):
    import numpy as np
    t = panel["targets"][0]
    series = prom.range(substitute(t["expr"], instance, minutes), start, end, step)
    if not series:
        no_data(ax)
        return
    grid = np.arange(start, end + step / 2, step)
    names, rows = [], []
    for s in sorted(series, key=lambda s: legend(t.get("legendFormat", ""), s["metric"], t["expr"])):
        row = np.full(len(grid), np.nan)
        for ts, v in s["values"]:
            i = int(round((float(ts) - start) / step))
            if 0 <= i < len(grid):
                row[i] = float(v)
        rows.append(row)
        names.append(legend(t.get("legendFormat", ""), s["metric"], t["expr"]))
    vmax = panel["options"]["color"].get("max", None)
    im = ax.imshow(np.array(rows), aspect="auto", cmap="RdYlGn_r", vmin=0, vmax=vmax, interpolation="nearest",
                   extent=[mdates.date2num(as_dates([start])[0]), mdates.date2num(as_dates([end])[0]), len(rows), 0])
    ax.set_yticks([i + 0.5 for i in range(len(names))])
    ax.set_yticklabels(names, fontsize=6)
    ax.xaxis_date()
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    ax.tick_params(labelsize=6)
    plt.colorbar(im, ax=ax, fraction=0.02, pad=0.01)


def render(path, prom, minutes, out):
    d = json.loads(path.read_text())
    end = time.time()
    start = end - minutes * 60
    step = max(1.0, round(minutes * 60 / 400))
    instance = first_instance(prom, d, end, minutes)
    panels = [p for p in d["panels"] if p["type"] != "row"]
    rows = [p for p in d["panels"] if p["type"] == "row"]
    height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in d["panels"])
    fig_h = height * 0.42 + 1
    fig = plt.figure(figsize=(18, fig_h))
    gs = GridSpec(height, 24, figure=fig, hspace=2.5, wspace=1.2, top=1 - 0.7 / fig_h, bottom=0.01, left=0.04,
                  right=0.99)
    shade = spans(prom, d, instance, start, end, step, minutes)
    for r in rows:
        y = r["gridPos"]["y"]
        ax = fig.add_subplot(gs[y:y + 1, :])
        ax.axis("off")
        ax.text(0, 0.2, r["title"], fontsize=11, fontweight="bold", transform=ax.transAxes)
    for p in panels:
        g = p["gridPos"]
        ax = fig.add_subplot(gs[g["y"]:g["y"] + g["h"] - 1, g["x"]:g["x"] + g["w"]])
        ax.set_title(p["title"], fontsize=8, loc="left")
        kind = p["type"]
        if kind == "timeseries":
            draw_timeseries(ax, prom, p, instance, start, end, step, minutes, shade)
        elif kind == "heatmap":
            draw_heatmap(ax, prom, p, instance, start, end, step, minutes)
        else:
            draw_instant(ax, prom, p, instance, end, minutes, kind)
    subtitle = f"{instance or 'all hosts'} · last {minutes} min · {time.strftime('%Y-%m-%d %H:%M', time.localtime(end))}"
    fig.suptitle(f"{d['title']}   ({subtitle})", fontsize=13, x=0.01, ha="left", y=1 - 0.15 / fig_h)
    target = out / f"{d['uid']}.png"
    fig.savefig(target, dpi=80, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {target}")


def load_matplotlib():
    """Imports matplotlib once the arguments are read, so that --help needs none."""
    global matplotlib, mdates, plt, GridSpec
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.gridspec import GridSpec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prometheus", default="http://127.0.0.1:19090")
    # No panel reads Alertmanager any more; accepted so that older callers keep working.
    ap.add_argument("--alertmanager", default="http://127.0.0.1:19093", help=argparse.SUPPRESS)
    ap.add_argument("--minutes", type=int, default=10)
    ap.add_argument("--dashboards", default=str(ROOT / "grafana" / "dashboards"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "dashboards"))
    a = ap.parse_args()
    load_matplotlib()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(pathlib.Path(a.dashboards).glob("*.json")):
        render(path, Prom(a.prometheus), a.minutes, out)


if __name__ == "__main__":
    main()
