//! Cross-host deviation through the running service: four synthetic hosts doing the same
//! work are written into a real Prometheus (remote write, four minutes of history); one of
//! them has ten times the dirty memory of the others. `reveal_host_deviation` names that host
//! and subsystem, and only that one.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reveal_analyzer::http::{HttpClient, HttpClientConfig};
use reveal_analyzer::outputs::remote_write::{Batch, RemoteWriter};
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::prometheus::{self, Prometheus};

const HOSTS: [&str; 4] = ["n1:9100", "n2:9100", "n3:9100", "n4:9100"];

fn noise(step: i64, channel: u64) -> f64 {
    let mut x = (step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ channel.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

fn batch(from: i64, until: i64) -> Batch {
    let mut b = Batch::default();
    for k in from..=until {
        for (h, host) in HOSTS.iter().enumerate() {
            let c = h as u64 * 10;
            b.add(
                "synth_cpu_busy_ratio",
                &[("instance", host)],
                k * 100,
                0.5 + 0.1 * noise(k, c),
            );
            let dirty = if *host == "n3:9100" { 1e9 } else { 1e8 };
            b.add(
                "synth_memory_dirty_bytes",
                &[("instance", host)],
                k * 100,
                dirty * (1.0 + 0.05 * noise(k, c + 1)),
            );
        }
    }
    b
}

#[test]
fn the_odd_host_out_is_named_by_host_deviation() {
    if prometheus::available().is_none() {
        return;
    }
    let prom = Prometheus::with_config("global:\n  scrape_interval: 1m\n").start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut w = RemoteWriter::new(
        HttpClient::new(&HttpClientConfig::default()).unwrap(),
        format!("{}/api/v1/write", prom.url()),
        1 << 22,
    );
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
            / 100
    };
    let mut next = now() - 2400;
    let feed = |w: &mut RemoteWriter, next: &mut i64| {
        let until = now();
        rt.block_on(w.write(batch(*next, until)))
            .expect("remote write");
        *next = until + 1;
    };
    feed(&mut w, &mut next);
    let config = format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {}\n\
         metrics:\n  - expr: synth_cpu_busy_ratio\n    subsystem: cpu\n    kind: dynamic\n  - expr: synth_memory_dirty_bytes\n    subsystem: memory\n    kind: dynamic\n\
         analysis:\n  warmup: 2m\n  baseline: 4m\noutputs:\n  remote_write:\n    url: {}/api/v1/write\n",
        prom.url(),
        prom.url()
    );
    let an = Analyzer::start(&config);
    let deadline = Instant::now() + Duration::from_secs(40);
    let dev = |host: &str, sub: &str| {
        prom.value(&format!(
            "max_over_time(reveal_host_deviation{{instance=\"{host}\",subsystem=\"{sub}\"}}[1m])"
        ))
        .unwrap()
    };
    loop {
        feed(&mut w, &mut next);
        if dev("n3:9100", "memory").is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no reveal_host_deviation:\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_secs(2));
    feed(&mut w, &mut next);
    let odd = dev("n3:9100", "memory").unwrap();
    assert!(odd > 10.0, "n3 memory deviation {odd}");
    for host in HOSTS.iter().filter(|h| **h != "n3:9100") {
        let d = dev(host, "memory").unwrap_or(0.0);
        assert!(d < odd / 10.0, "{host} memory deviation {d} vs n3's {odd}");
    }
    let cpu = dev("n3:9100", "cpu").unwrap_or(0.0);
    assert!(cpu < odd / 10.0, "n3 cpu deviation {cpu}");
}
