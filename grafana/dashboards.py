#!/usr/bin/env python3
"""Writes Reveal's Grafana dashboards (grafana/dashboards/*.json) from the panel lists below.

The JSON files are what Grafana provisions and what the tests read; this script keeps the
three dashboards consistent (datasources, layout, units). Edit here, then run

    python3 grafana/dashboards.py

and commit both. Standard library only.

Queries use the recording rules of rules/recording.rules.yml where one exists, so a panel and
the analyzer show the same derived metric. Raw counters use $__rate_interval (Grafana sets it
to at least four times the datasource's 1 s time interval).

Every panel, query and variable reads the `datasource` variable (any Prometheus datasource;
empty current value: Grafana picks the default one, the provisioned Reveal Prometheus in
docker-compose), never a fixed uid, so the files import into any Grafana. `__inputs` makes
Grafana's "Import dashboard" ask for a Prometheus datasource; nothing refers to
${DS_PROMETHEUS}, which a provisioned (file) dashboard would leave unresolved. The exporter's
series are selected by `job` and `instance` variables (instance chained on job); the
analyzer's remote-written series carry no job label, so those are selected by instance only.
"""

import json
import pathlib

# The dashboard's datasource variable: whichever Prometheus the viewer picks.
PROM = {"type": "prometheus", "uid": "${datasource}"}
# The slow scrape job's interval (rules/prometheus.yml, `reveal-slow`): the minimum interval
# of panels that show its series as rates.
SLOW = "15s"
GRAFANA_VERSION = "11.2.0"  # docker-compose.yml's grafana/grafana-oss image
# What "Import dashboard" reads: the input it asks for, and what the dashboard needs.
INPUTS = [{
    "name": "DS_PROMETHEUS",
    "label": "Prometheus",
    "description": "The Prometheus that scrapes reveal-exporter and receives the analyzer's series",
    "type": "datasource",
    "pluginId": "prometheus",
    "pluginName": "Prometheus",
}]
PANEL_NAMES = {"timeseries": "Time series", "stat": "Stat", "bargauge": "Bar gauge",
               "heatmap": "Heatmap", "table": "Table"}

OUT = pathlib.Path(__file__).resolve().parent / "dashboards"


class Layout:
    """Places panels left to right in a 24-column grid, wrapping to new rows."""

    def __init__(self):
        self.x = 0
        self.y = 0
        self.row_h = 0
        self.next_id = 1
        self.panels = []

    def add(self, panel, w=12, h=8):
        if self.x + w > 24:
            self.newline()
        panel["id"] = self.next_id
        self.next_id += 1
        panel["gridPos"] = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_h = max(self.row_h, h)
        self.panels.append(panel)

    def newline(self):
        self.y += self.row_h
        self.x = 0
        self.row_h = 0

    def row(self, title):
        if self.x:
            self.newline()
        self.add({"type": "row", "title": title, "collapsed": False, "panels": []}, w=24, h=1)
        self.newline()


def target(expr, legend="", ref="A", **extra):
    t = {"datasource": PROM, "refId": ref, "expr": expr, "legendFormat": legend, "range": True}
    t.update(extra)
    return t


def refs(exprs):
    """[(expr, legend), ...] -> targets with refIds A, B, ..."""
    return [target(e, l, chr(ord("A") + i)) for i, (e, l) in enumerate(exprs)]


def timeseries(title, exprs, unit="short", description="", stack=False, threshold=None,
               minimum=None, maximum=None, draw="line", interval=None):
    custom = {
        "drawStyle": draw,
        "lineWidth": 1,
        "fillOpacity": 30 if stack else 10,
        "showPoints": "never",
        "spanNulls": False,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        "thresholdsStyle": {"mode": "off"},
    }
    steps = [{"color": "green", "value": None}]
    if threshold is not None:
        custom["thresholdsStyle"] = {"mode": "line+area" if draw == "line" else "line"}
        steps.append({"color": "red", "value": threshold})
    defaults = {"unit": unit, "custom": custom, "thresholds": {"mode": "absolute", "steps": steps}}
    if minimum is not None:
        defaults["min"] = minimum
    if maximum is not None:
        defaults["max"] = maximum
    panel = {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": PROM,
        "targets": refs(exprs),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    }
    if interval:
        # A panel of series from the slow scrape job: $__rate_interval spans four scrapes.
        panel["interval"] = interval
    return panel


def stat(title, expr, legend="", unit="short", description="", thresholds=None):
    steps = [{"color": "green", "value": None}]
    for value, color in thresholds or []:
        steps.append({"color": color, "value": value})
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": PROM,
        "targets": [target(expr, legend, instant=True, range=False)],
        "fieldConfig": {
            "defaults": {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}},
            "overrides": [],
        },
        "options": {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "background",
            "graphMode": "area",
            "textMode": "value_and_name",
        },
    }


def bargauge(title, expr, legend, unit="short", description=""):
    return {
        "type": "bargauge",
        "title": title,
        "description": description,
        "datasource": PROM,
        "targets": [target(expr, legend, instant=True, range=False)],
        "fieldConfig": {"defaults": {"unit": unit, "min": 0}, "overrides": []},
        "options": {
            "orientation": "horizontal",
            "displayMode": "gradient",
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        },
    }


def heatmap(title, expr, legend, description="", maximum=3):
    """Each series is one row (a host, or a host and subsystem); colour is the value."""
    return {
        "type": "heatmap",
        "title": title,
        "description": description,
        "datasource": PROM,
        "targets": [target(expr, legend, format="time_series")],
        "fieldConfig": {"defaults": {"custom": {}}, "overrides": []},
        "options": {
            "calculate": False,
            "yAxis": {"axisPlacement": "left"},
            "rowsFrame": {"layout": "auto"},
            "color": {"mode": "scheme", "scheme": "RdYlGn", "reverse": True, "min": 0, "max": maximum,
                      "fill": "dark-orange", "scale": "exponential", "exponent": 0.5, "steps": 64},
            "cellGap": 1,
            "legend": {"show": True},
            "tooltip": {"show": True, "yHistogram": False},
        },
    }


def table(title, expr, description=""):
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": PROM,
        "targets": [target(expr, "", format="table", instant=True, range=False)],
        "fieldConfig": {"defaults": {}, "overrides": []},
        "options": {"showHeader": True, "sortBy": [{"displayName": "Value", "desc": True}]},
        "transformations": [{"id": "organize", "options": {"excludeByName": {"Time": True, "__name__": True}}}],
    }


def flagged_table(title, instance_matcher, description=""):
    """Hosts and subsystems of the windows two or more detectors flagged over the time range,
    from the analyzer's remote-written series: the value is the most detectors that agreed,
    shown as the alert's severity (2 warning, 3 critical)."""
    i = instance_matcher
    expr = (f"max by (instance, subsystem) (max_over_time(("
            f"(reveal_anomaly_agreement{{{i}}} >= 2) * on (instance) group_right () "
            f"(reveal_anomaly_subsystem{{{i}}} >= bool 0.25 == 1)"
            f")[$__range:$__interval]))")
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": PROM,
        "targets": [target(expr, "", format="table", instant=True, range=False)],
        "fieldConfig": {
            "defaults": {},
            "overrides": [{
                "matcher": {"id": "byName", "options": "Value"},
                "properties": [
                    {"id": "displayName", "value": "severity (detectors agreeing)"},
                    {"id": "mappings", "value": [{"type": "value", "options": {
                        "2": {"text": "warning (2)", "color": "orange", "index": 0},
                        "3": {"text": "critical (3)", "color": "red", "index": 1},
                    }}]},
                    {"id": "custom.cellOptions", "value": {"type": "color-background"}},
                ],
            }],
        },
        "options": {"showHeader": True,
                    "sortBy": [{"displayName": "severity (detectors agreeing)", "desc": True}]},
        "transformations": [{"id": "organize", "options": {
            "excludeByName": {"Time": True},
            "indexByName": {"instance": 0, "subsystem": 1, "Value": 2},
        }}],
    }


def datasource_variable():
    """Which Prometheus the dashboard reads; empty current value: Grafana's default one."""
    return {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "regex": "",
        "refresh": 1,
        "hide": 0,
        "multi": False,
        "includeAll": False,
        "current": {},
        "options": [],
    }


def job_variable():
    """The exporter's scrape job(s): `reveal` in rules/prometheus.yml, any name elsewhere."""
    return variable("job", "label_values(reveal_cpu_time_seconds_total, job)", multi=True, all_value=".+")


def variable(name, query, multi=False, label=None, all_value=".+"):
    """A query variable; with multi, "All" selects all_value (None: every listed value)."""
    return {
        "name": name,
        "label": label or name,
        "type": "query",
        "datasource": PROM,
        "query": {"query": query, "refId": f"{name}-var"},
        "definition": query,
        "refresh": 2,
        "sort": 1,
        "multi": multi,
        "includeAll": multi,
        "allValue": all_value if multi else None,
        "current": {},
        "options": [],
    }


def requires(layout):
    """__requires: Grafana, the Prometheus datasource and the panel types the dashboard uses."""
    kinds = sorted({p["type"] for p in layout.panels if p["type"] != "row"})
    return ([{"type": "grafana", "id": "grafana", "name": "Grafana", "version": GRAFANA_VERSION},
             {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"}]
            + [{"type": "panel", "id": k, "name": PANEL_NAMES[k], "version": ""} for k in kinds])


def dashboard(uid, title, description, layout, variables, annotations=(), refresh="5s", span="now-15m"):
    return {
        "__inputs": INPUTS,
        "__requires": requires(layout),
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["reveal"],
        "editable": False,
        "graphTooltip": 1,
        "refresh": refresh,
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": span, "to": "now"},
        "timezone": "browser",
        "templating": {"list": [datasource_variable()] + list(variables)},
        "annotations": {"list": [{
            "builtIn": 1,
            "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True,
            "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts",
            "type": "dashboard",
        }] + list(annotations)},
        "links": [{"title": "Reveal dashboards", "type": "dashboards", "tags": ["reveal"], "asDropdown": True}],
        "panels": layout.panels,
    }


def episode_annotations(instance_matcher):
    return [
        {
            # Windows where two or more detectors agree: the analyzer's episodes, whichever path
            # (analyzer or alerting rules) sends the alerts.
            "name": "Anomalous windows",
            "datasource": PROM,
            "enable": True,
            "iconColor": "red",
            "expr": f"reveal_anomaly_agreement{{{instance_matcher}}} >= 2",
            "step": "1s",
            "titleFormat": "Anomaly on {{instance}}",
            "textFormat": "{{instance}}: detectors agree",
            "tagKeys": "instance",
            "useValueForTime": False,
        },
        {
            # Alerts Prometheus evaluated from rules/alerting.rules.yml.
            "name": "Reveal alerts",
            "datasource": PROM,
            "enable": True,
            "iconColor": "orange",
            "expr": f'ALERTS{{alertname=~"Reveal.*",alertstate="firing",{instance_matcher}}}',
            "step": "1s",
            "titleFormat": "{{alertname}} {{severity}}",
            "textFormat": "{{instance}} {{subsystem}}",
            "tagKeys": "alertname,severity,subsystem",
            "useValueForTime": False,
        },
    ]


def host():
    # The exporter's fast job (`reveal`, 100 ms) and its slow one (`reveal-slow`, 15 s):
    # one host, two jobs (docs/metric-selection.md, "Two cadences").
    i = 'job=~"$job(-slow)?",instance="$instance"'
    fast = 'job=~"$job",instance="$instance"'
    L = Layout()
    L.row("CPU")
    L.add(timeseries("CPU utilization", [
        (f"instance:reveal_cpu_utilization:ratio1s{{{i}}}", "host"),
        (f"instance_cpu:reveal_cpu_utilization:ratio1s{{{i}}}", "cpu {{cpu}}"),
    ], unit="percentunit", minimum=0, maximum=1,
        description="Share of each second not idle nor waiting for I/O (recording rules)."))
    L.add(timeseries("CPU time by mode", [
        (f'instance_mode:reveal_cpu_time_seconds:avg_rate1s{{{i},mode!="idle"}}', "{{mode}}"),
    ], unit="percentunit", stack=True, minimum=0,
        description="Mean over CPUs of the share of time in each mode; idle left out."))
    L.add(timeseries("Interrupts per CPU", [
        (f"instance_cpu:reveal_cpu_interrupts:rate1s{{{i}}}", "cpu {{cpu}}"),
    ], unit="ops", description="Hardware interrupts handled per second; IRQ imbalance shows as a few hot CPUs."))
    L.add(timeseries("Softirqs by type", [
        # The fast job only: it serves softirqs summed over the CPUs (deploy/selection-fast.yml),
        # the slow job per CPU; over a long range $__rate_interval would add both.
        (f"sum by (type) (rate(reveal_cpu_softirqs_total{{{fast}}}[$__rate_interval]))", "{{type}}"),
    ], unit="ops", stack=True))
    L.add(timeseries("Context switches and runnable tasks", [
        (f"instance:reveal_cpu_context_switches:rate1s{{{i}}}", "context switches/s"),
        (f"reveal_cpu_procs_running{{{i}}}", "runnable"),
        (f"reveal_cpu_procs_blocked{{{i}}}", "blocked on I/O"),
    ], unit="short"))
    L.add(timeseries("Frequency per CPU", [
        (f"reveal_cpu_frequency_hertz{{{i}}}", "cpu {{cpu}}"),
    ], unit="hertz", description="cpufreq's current frequency (needs a cpufreq driver)."))
    L.add(timeseries("Idle state residency", [
        (f"sum by (state) (rate(reveal_cpu_idle_state_time_seconds_total{{{i}}}[$__rate_interval]))", "{{state}}"),
    ], unit="s", stack=True, interval=SLOW,
        description="Seconds per second spent in each cpuidle state, summed over CPUs (the slow job's, every 15 s)."))
    L.add(timeseries("Package power", [
        (f"rate(reveal_cpu_rapl_energy_joules_total{{{i}}}[$__rate_interval])", "{{zone}}"),
    ], unit="watt", description="RAPL energy counters as power (needs /sys/class/powercap)."))

    L.row("CPU hardware counters (perf, MSR)")
    L.add(timeseries("Instructions per cycle", [
        (f"instance:reveal_cpu_instructions_per_cycle:ratio1s{{{i}}}", "host"),
        (f"instance_cpu:reveal_cpu_instructions_per_cycle:ratio1s{{{i}}}", "cpu {{cpu}}"),
    ], unit="short", minimum=0, description="Execution throughput (paper appendix B)."), w=8)
    L.add(timeseries("Branch misses per branch", [
        (f"instance_cpu:reveal_cpu_branch_misses_per_branch:ratio1s{{{i}}}", "cpu {{cpu}}"),
    ], unit="percentunit", minimum=0), w=8)
    L.add(timeseries("Cache misses per reference", [
        (f"instance_cpu:reveal_cpu_cache_misses_per_reference:ratio1s{{{i}}}", "cpu {{cpu}}"),
    ], unit="percentunit", minimum=0), w=8)
    L.add(timeseries("Cycles stalled on L3 misses", [
        (f"instance_cpu:reveal_cpu_l3_miss_stall_cycles_per_cycle:ratio1s{{{i}}}", "cpu {{cpu}}"),
    ], unit="percentunit", minimum=0,
        description="Needs the vendor event cycle_activity.stalls_l3_miss in the exporter's config."), w=8)
    L.add(timeseries("Busy% (turbostat)", [
        (f"instance_cpu:reveal_cpu_busy:ratio1s{{{i}}}", "cpu {{cpu}}"),
    ], unit="percentunit", minimum=0, maximum=1, description="MPERF/TSC: share of time in C0."), w=8)
    L.add(timeseries("Bzy_MHz (turbostat)", [
        (f"instance_cpu:reveal_cpu_busy_frequency_hertz:rate1s{{{i}}}", "cpu {{cpu}}"),
    ], unit="hertz", description="TSC rate x APERF/MPERF: the clock while busy."), w=8)

    L.add(timeseries("perf multiplexing", [
        (f"reveal_cpu_perf_running_ratio{{{i}}}", "cpu {{cpu}} {{group}}"),
    ], unit="percentunit", minimum=0, maximum=1,
        description="Share of the time each counter group was on the PMU; counts are scaled up by its inverse."), w=8)

    L.row("GPU (NVML)")
    L.add(timeseries("GPU utilization", [
        (f"reveal_gpu_utilization_ratio{{{i}}}", "gpu {{gpu}} SM"),
        (f"reveal_gpu_memory_utilization_ratio{{{i}}}", "gpu {{gpu}} memory"),
    ], unit="percentunit", minimum=0, maximum=1), w=8)
    L.add(timeseries("GPU memory used", [
        (f"reveal_gpu_memory_used_bytes{{{i}}} / reveal_gpu_memory_total_bytes{{{i}}}", "gpu {{gpu}} memory used"),
    ], unit="percentunit", minimum=0, maximum=1), w=8)
    L.add(timeseries("GPU power", [
        (f"reveal_gpu_power_watts{{{i}}}", "gpu {{gpu}}"),
    ], unit="watt"), w=8)
    L.add(timeseries("PCIe link below its maximum", [
        (f"reveal_gpu_pcie_link_width_max{{{i}}} - reveal_gpu_pcie_link_width{{{i}}}", "gpu {{gpu}} lanes missing"),
        (f"reveal_gpu_pcie_link_generation_max{{{i}}} - reveal_gpu_pcie_link_generation{{{i}}}", "gpu {{gpu}} generations below"),
    ], unit="short", minimum=0, description="A down-trained link (fewer lanes or a lower generation) silently halves transfers."), w=8)
    L.add(timeseries("GPU throttling", [
        (f"reveal_gpu_throttle_reason{{{i}}}", "gpu {{gpu}} {{reason}}"),
    ], unit="short", stack=True, description="1 while a throttle reason holds the clocks down."), w=8)
    L.add(timeseries("GPU ECC errors", [
        (f"sum by (gpu, type) (rate(reveal_gpu_ecc_errors_total{{{i}}}[$__rate_interval]))", "gpu {{gpu}} {{type}}"),
    ], unit="ops"), w=8)

    L.row("Memory")
    L.add(timeseries("Memory utilization", [
        (f"instance:reveal_memory_utilization:ratio{{{i}}}", "used"),
    ], unit="percentunit", minimum=0, maximum=1, description="1 - MemAvailable / MemTotal."), w=8)
    L.add(timeseries("Memory", [
        (f"reveal_memory_mem_total_bytes{{{i}}}", "total"),
        (f"reveal_memory_mem_available_bytes{{{i}}}", "available"),
        (f"reveal_memory_cached_bytes{{{i}}}", "page cache"),
        (f"reveal_memory_dirty_bytes{{{i}}}", "dirty"),
        (f"reveal_memory_writeback_bytes{{{i}}}", "writeback"),
    ], unit="bytes"), w=8)
    L.add(timeseries("HugePages", [
        (f"reveal_memory_hugepages_pool{{{i}}}", "{{size}} {{state}}"),
    ], unit="short", description="Pools per page size; drift between hosts is a cross-host finding."), w=8)
    L.add(timeseries("NUMA allocations", [
        (f"sum by (node, event) (rate(reveal_memory_numa_events_total{{{i},event=~\"numa_miss|numa_foreign|numa_hit\"}}[$__rate_interval]))",
         "node {{node}} {{event}}"),
    ], unit="ops", description="numa_miss and numa_foreign grow when memory lands on the wrong node."))
    L.add(timeseries("Page faults and swapping", [
        (f"sum by (event) (rate(reveal_memory_vmstat_events_total{{{i},event=~\"pgfault|pgmajfault|pswpin|pswpout\"}}[$__rate_interval]))",
         "{{event}}"),
    ], unit="ops"))

    L.row("Storage")
    L.add(timeseries("Disk throughput", [
        (f"instance_device:reveal_storage_read_bytes:rate1s{{{i}}}", "{{device}} read"),
        (f"instance_device:reveal_storage_written_bytes:rate1s{{{i}}}", "{{device}} written"),
    ], unit="Bps"))
    L.add(timeseries("Disk busy time", [
        (f"instance_device:reveal_storage_io_time_seconds:rate1s{{{i}}}", "{{device}}"),
    ], unit="percentunit", minimum=0, maximum=1, description="Share of each second with I/O in flight (iostat %util)."))

    L.row("Network")
    L.add(timeseries("Network throughput", [
        (f'instance_device:reveal_network_receive_bytes:rate1s{{{i},device!="lo"}}', "{{device}} received"),
        (f'instance_device:reveal_network_transmit_bytes:rate1s{{{i},device!="lo"}}', "{{device}} sent"),
    ], unit="Bps"))
    L.add(timeseries("Drops and errors", [
        (f"sum by (device) (rate(reveal_network_receive_drops_total{{{i}}}[$__rate_interval]))", "{{device}} rx drops"),
        (f"sum by (device) (rate(reveal_network_transmit_drops_total{{{i}}}[$__rate_interval]))", "{{device}} tx drops"),
        (f"sum by (device) (rate(reveal_network_receive_errors_total{{{i}}}[$__rate_interval]))", "{{device}} rx errors"),
        (f"instance:reveal_network_tcp_retransmitted_segments:rate1s{{{i}}}", "TCP retransmits"),
    ], unit="ops", interval=SLOW,
        description="Packet loss shows here first: drops, errors, TCP retransmissions (errors and tx drops from the slow job, every 15 s)."))

    L.row("Exporter")
    L.add(timeseries("Collector duration", [
        (f"reveal_exporter_collector_duration_seconds{{{i}}}", "{{collector}}"),
    ], unit="s", stack=True, description="Time each collector took in the last scrape."))
    L.add(timeseries("Collectors failing", [
        (f"reveal_exporter_collector_success{{{i}}} == 0", "{{collector}}"),
    ], unit="short", draw="points",
        description="Collectors whose data is missing on this host (no hardware, no permission): see docs/privileges.md."))
    return dashboard(
        "reveal-host", "Reveal / Host overview",
        "One host's telemetry by subsystem: the exporter's series and the recording rules' derived metrics.",
        L, [job_variable(), variable("instance", 'label_values(reveal_cpu_time_seconds_total{job=~"$job"}, instance)')],
        # The analyzer's series and the alerts carry no job (or another one): instance only.
        annotations=episode_annotations('instance="$instance"'),
    )


def anomalies():
    i = 'instance=~"$instance"'
    L = Layout()
    L.add(timeseries("Anomaly score per detector", [
        (f"reveal_anomaly_score{{{i}}}", "{{instance}} {{detector}}"),
    ], unit="short", threshold=1, minimum=0,
        description="Each detector's score divided by its threshold: above the red line (1) the detector flags the window."),
        w=16, h=9)
    L.add(stat("Detectors agreeing now", f"max by (instance) (reveal_anomaly_agreement{{{i}}})", "{{instance}}",
               thresholds=[(1, "yellow"), (2, "orange"), (3, "red")],
               description="1 info, 2 warning, 3 critical."), w=8, h=9)
    L.add(timeseries("Agreement", [
        (f"reveal_anomaly_agreement{{{i}}}", "{{instance}}"),
    ], unit="short", threshold=2, minimum=0, maximum=3, draw="bars",
        description="Detectors flagging each window; 2 or more opens an episode."), w=12)
    L.add(timeseries("Attribution by subsystem", [
        (f"reveal_anomaly_subsystem{{{i}}}", "{{instance}} {{subsystem}}"),
    ], unit="percentunit", stack=True, minimum=0,
        description="Share of each flagged window's attribution per subsystem."), w=12)
    L.add(bargauge("Attribution over the time range", 
                   f"sum by (subsystem) (sum_over_time(reveal_anomaly_subsystem{{{i}}}[$__range]))",
                   "{{subsystem}}", description="Which subsystems the flagged windows of the range point at."),
          w=8)
    L.add(flagged_table("Flagged subsystems over the time range", i,
                        description="Hosts and subsystems with a quarter or more of the attribution of a window two or "
                                    "more detectors flag (RevealAnomalyDetected's condition), from the analyzer's "
                                    "series: the most detectors agreeing, 2 warning, 3 critical. The claims themselves "
                                    "are in the analyzer's alerts (Grafana's Alerting > Active notifications with the "
                                    "Alertmanager datasource, or Alertmanager's UI) and its windows.jsonl."),
          w=16)
    L.add(table("Firing alerting rules",
                f'ALERTS{{alertname=~"Reveal.*",alertstate="firing",{i}}}',
                description="Alerts Prometheus evaluates from rules/alerting.rules.yml."), w=24, h=6)
    return dashboard(
        "reveal-anomalies", "Reveal / Anomalies",
        "What the analyzer finds: detector scores against their thresholds, agreement, attribution, episodes and "
        "the subsystems they flag.",
        # The analyzer's series carry no job label: the job narrows the instances, and "All"
        # instances means every listed one (no catch-all regex), so the job applies to the panels.
        L, [job_variable(),
            variable("instance", 'label_values(reveal_cpu_time_seconds_total{job=~"$job"}, instance)', multi=True,
                     all_value=None)],
        annotations=episode_annotations(i),
    )


def cluster():
    j = 'job=~"$job(-slow)?"'
    L = Layout()
    L.add(heatmap("Cross-host deviation (worst subsystem per host)",
                  "max by (instance) (reveal_host_deviation)", "{{instance}}", maximum=7,
                  description="Robust z of the host against its peers' median, the largest over its subsystems; "
                              "3.5 and above (RevealHostDeviation) is an outlier."),
          w=24, h=9)
    L.add(heatmap("Cross-host deviation by subsystem", "reveal_host_deviation", "{{instance}} {{subsystem}}",
                  maximum=7), w=24, h=10)
    L.add(heatmap("Detector agreement per host", "max by (instance) (reveal_anomaly_agreement)", "{{instance}}"),
          w=24, h=8)
    L.add(timeseries("CPU utilization per host", [
        (f"instance:reveal_cpu_utilization:ratio1s{{{j}}}", "{{instance}}"),
    ], unit="percentunit", minimum=0, maximum=1), w=12)
    L.add(timeseries("Memory utilization per host", [
        (f"instance:reveal_memory_utilization:ratio{{{j}}}", "{{instance}}"),
    ], unit="percentunit", minimum=0, maximum=1), w=12)
    L.add(timeseries("HugePages in use per host", [
        (f'sum by (instance, size) (reveal_memory_hugepages_pool{{{j},state="total"}} - ignoring(state) reveal_memory_hugepages_pool{{{j},state="free"}})',
         "{{instance}} {{size}}"),
    ], unit="short"), w=12)
    L.add(timeseries("Network received per host", [
        (f"instance:reveal_network_receive_bytes:rate1s{{{j}}}", "{{instance}}"),
    ], unit="Bps"), w=12)
    return dashboard(
        "reveal-cluster", "Reveal / Cluster",
        "Hosts side by side: which host deviates from its peers (the analyzer's cross-host findings) and the metrics behind it.",
        # The deviation and agreement heatmaps read the analyzer's series (no job label): all hosts.
        L, [job_variable()], refresh="10s", span="now-1h",
    )


def main():
    OUT.mkdir(exist_ok=True)
    for name, build in [("reveal-host", host), ("reveal-anomalies", anomalies), ("reveal-cluster", cluster)]:
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(build(), indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
