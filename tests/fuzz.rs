//! Every parser of outside input under the mutation fuzzer of `tests/support/fuzz.rs`, seeded
//! from recorded fixtures: the exporter's `/proc` and `/sys` parsers (the files of three real
//! hosts), its configuration, selection and web-configuration readers, the `process_*`
//! parsers both binaries share, and the analyzer's
//! OpenMetrics, CSV and Prometheus-JSON readers and its configuration. A target passes when
//! no input makes it panic; errors are what bad input should get.
//!
//! Short run (every test suite): 1,000 inputs per target. Long run (docs/testing.md):
//! `REVEAL_FUZZ_CASES=10000000 cargo nextest run --release -p reveal-e2e --test fuzz --no-capture`.

use std::path::{Path, PathBuf};

use reveal_e2e::fuzz::fuzz;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The file `rel` of each exporter fixture host that has it.
fn proc_seeds(rel: &str) -> Vec<Vec<u8>> {
    let hosts = ["vm-debian", "numa-2socket", "old-kernel"];
    let seeds: Vec<Vec<u8>> = hosts
        .iter()
        .filter_map(|h| {
            std::fs::read(root().join("exporter/tests/fixtures").join(h).join(rel)).ok()
        })
        .collect();
    assert!(!seeds.is_empty(), "no fixture has {rel}");
    seeds
}

fn files(paths: &[&str]) -> Vec<Vec<u8>> {
    paths
        .iter()
        .map(|p| std::fs::read(root().join(p)).unwrap_or_else(|e| panic!("{p}: {e}")))
        .collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

macro_rules! proc_target {
    ($name:ident, $rel:expr, $parse:expr) => {
        #[test]
        fn $name() {
            fuzz(stringify!($name), &proc_seeds($rel), |b| {
                let _ = $parse(&text(b));
            });
        }
    };
}

use reveal_exporter::collectors as c;

proc_target!(proc_stat, "proc/stat", c::stat::parse_stat);
proc_target!(
    proc_interrupts,
    "proc/interrupts",
    c::interrupts::parse_interrupts
);
proc_target!(proc_softirqs, "proc/softirqs", c::softirqs::parse_softirqs);
proc_target!(proc_meminfo, "proc/meminfo", c::meminfo::parse_meminfo);
proc_target!(proc_vmstat, "proc/vmstat", c::vmstat::parse_vmstat);
proc_target!(
    proc_diskstats,
    "proc/diskstats",
    c::diskstats::parse_diskstats
);
proc_target!(proc_net_dev, "proc/net/dev", c::netdev::parse_netdev);
proc_target!(proc_net_snmp, "proc/net/snmp", |t: &str| {
    c::netstat::parse_snmp(t, &mut Vec::new())
});
proc_target!(proc_net_netstat, "proc/net/netstat", |t: &str| {
    c::netstat::parse_snmp(t, &mut Vec::new())
});
proc_target!(proc_net_snmp6, "proc/net/snmp6", |t: &str| {
    c::netstat::parse_snmp6(t, &mut Vec::new())
});
proc_target!(proc_net_sockstat, "proc/net/sockstat", |t: &str| {
    c::sockstat::parse_sockstat(t, &mut Vec::new())
});
proc_target!(proc_net_tcp, "proc/net/tcp", |t: &str| {
    c::tcpstat::parse_tcp_states(t, &mut [0; 11])
});

#[test]
fn sys_numa_node_files() {
    let mut seeds = Vec::new();
    for h in ["vm-debian", "numa-2socket"] {
        let node = root()
            .join("exporter/tests/fixtures")
            .join(h)
            .join("sys/devices/system/node/node0");
        for f in ["numastat", "meminfo"] {
            if let Ok(b) = std::fs::read(node.join(f)) {
                seeds.push(b);
            }
        }
    }
    fuzz("sys_numa_node_files", &seeds, |b| {
        let t = text(b);
        let _ = c::numa::parse_numastat(&t);
        let _ = c::numa::parse_node_meminfo(&t);
    });
}

/// The `process_*` self-metrics' parsers (`reveal_schema::process`, both binaries), seeded
/// with this test process' own `stat`, `status` and `limits` and the fixtures' `/proc/stat`
/// (its `btime`).
#[test]
fn process_self_files() {
    use reveal_schema::process;
    let mut seeds: Vec<Vec<u8>> = ["stat", "status", "limits"]
        .iter()
        .filter_map(|f| std::fs::read(Path::new("/proc/self").join(f)).ok())
        .collect();
    seeds.extend(proc_seeds("proc/stat"));
    fuzz("process_self_files", &seeds, |b| {
        let t = text(b);
        let _ = process::parse_stat(&t);
        let _ = process::parse_status(&t);
        let _ = process::parse_btime(&t);
        let _ = process::parse_max_fds(&t);
    });
}

/// One-value sysfs attributes: every small parser on every such seed.
#[test]
fn sys_single_values() {
    let seeds: Vec<Vec<u8>> = [
        "3400000\n",
        "12345678901\n",
        "C1E\n",
        "45000\n",
        "4: ACTIVE\n",
        "100 Gb/sec (4X EDR)\n",
        "event=0x3c\n",
        "2048kB",
        "hugepages-1048576kB",
        "0-3,8-11\n",
        "1\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz("sys_single_values", &seeds, |b| {
        let t = text(b);
        let _ = c::cpufreq::parse_khz(&t);
        let _ = c::cpuidle::parse_counter(&t);
        let _ = c::cpuidle::parse_name(&t);
        let _ = c::hugepages::parse_pool_name(&t);
        let _ = c::hugepages::parse_count(&t);
        let _ = c::hwmon::parse_millicelsius(&t);
        let _ = c::hwmon::parse_attr_text(&t);
        let _ = c::infiniband::parse_state(&t);
        let _ = c::infiniband::parse_rate(&t);
        let _ = c::infiniband::parse_counter(&t);
        let _ = c::msr::parse_pmu_event(&t);
        let _ = c::rapl::parse_microjoules(&t);
        let _ = c::perf_group::parse_cpu_list(&t);
    });
}

/// Binary reads: a perf group read and an auxiliary vector, as raw bytes.
#[test]
fn binary_records() {
    let words = |w: &[u64]| w.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    let seeds = vec![
        words(&[3, 1_000_000, 1_000_000, 10, 20, 30]),
        words(&[6, 4096, 25, 100, 0, 0]),
    ];
    fuzz("binary_records", &seeds, |b| {
        let _ = c::perf_group::parse_group_read(b, 3);
        let _ = c::sockstat::parse_auxv_page_size(b);
    });
}

#[test]
fn exporter_configuration_files() {
    let seeds = files(&[
        "exporter/examples/perf-events.yml",
        "exporter/examples/selection.yml",
    ]);
    fuzz("exporter_configuration_files", &seeds, |b| {
        let t = text(b);
        let _ = reveal_exporter::config::ExporterConfig::parse(&t);
        let _ = reveal_exporter::selection::Selection::parse(&t);
    });
}

#[test]
fn exporter_web_configuration() {
    let seeds = vec![
        b"tls_server_config:\n  cert_file: a.pem\n  key_file: a.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  min_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n  prometheus: $2b$04$qHL4URqcBc9eR/xRBSuryeWEFoMmMrZXQnoyckBcYa7CLOrFCH4uC\n".to_vec(),
    ];
    fuzz("exporter_web_configuration", &seeds, |b| {
        let _ = reveal_exporter::web::config::parse(&text(b), Path::new("/nonexistent"));
    });
}

#[test]
fn analyzer_openmetrics() {
    // The first 200 lines of a real two-second capture of the exporter, and its end.
    let full =
        std::fs::read_to_string(root().join("analyzer/tests/fixtures/capture/exporter-2s.prom"))
            .unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let head = lines[..200.min(lines.len())].join("\n") + "\n";
    let tail = lines[lines.len().saturating_sub(60)..].join("\n") + "\n";
    let seeds = vec![head.into_bytes(), tail.into_bytes()];
    let opts = reveal_analyzer::ingest::SourceOptions::default();
    fuzz("analyzer_openmetrics", &seeds, |b| {
        let t = text(b);
        let _ = reveal_analyzer::ingest::openmetrics::parse_openmetrics(&t, &opts);
        let mut out = String::new();
        reveal_analyzer::ingest::scrape::stamp(
            &t,
            1_700_000_000_000,
            1_699_999_990_000..1_700_000_000_001,
            &mut out,
        );
    });
}

#[test]
fn analyzer_csv() {
    let gz = root().join("analyzer/tests/fixtures/real/trace.csv.gz");
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(&gz)
        .output()
        .expect("gzip");
    let full = String::from_utf8_lossy(&out.stdout);
    let head: String = full.lines().take(40).map(|l| format!("{l}\n")).collect();
    let seeds = vec![
        head.into_bytes(),
        b"timestamp,host,a,b\n1,h,1.5,\n2,h,,NaN\n".to_vec(),
    ];
    let opts = reveal_analyzer::ingest::SourceOptions::default();
    fuzz("analyzer_csv", &seeds, |b| {
        let _ = reveal_analyzer::ingest::csv::parse_csv(&text(b), &opts);
    });
}

#[test]
fn analyzer_prometheus_json() {
    let seeds = vec![
        br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x","instance":"h:9100"},"values":[[1700000000.1,"0.5"],[1700000000.2,"NaN"],[1700000000.3,"+Inf"]]},{"metric":{"instance":"g:9100","cpu":"0"},"values":[[1700000000.1,"1e3"]]}]},"warnings":["w"]}"#.to_vec(),
        br#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#.to_vec(),
    ];
    fuzz("analyzer_prometheus_json", &seeds, |b| {
        let _ = reveal_analyzer::ingest::promapi::parse_query_range("up", 200, b);
        let _ = reveal_analyzer::ingest::promapi::parse_query_range("up", 503, b);
    });
}

#[test]
fn analyzer_configuration() {
    let seeds = files(&[
        "deploy/analyzer.yml",
        "deploy/analyzer-pruned.yml",
        "deploy/analyzer-node-exporter.yml",
        "deploy/analyzer-dcgm.yml",
        "analyzer/examples/analyzer.yml",
        "analyzer/tests/fixtures/real/metric-set.yml",
    ]);
    fuzz("analyzer_configuration", &seeds, |b| {
        let _ = reveal_analyzer::config::Config::parse(&text(b), Path::new("analyzer.yml"));
    });
}
