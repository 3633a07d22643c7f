use super::*;

fn irq() -> PerDevice {
    PerDevice::parse("max without (cpu) (rate(reveal_cpu_interrupts_total[1s]))").unwrap()
}

#[test]
fn aggregations_over_one_device_label_are_read() {
    assert_eq!(
        irq(),
        PerDevice {
            agg: Agg::Max,
            label: "cpu".into(),
            inner: "rate(reveal_cpu_interrupts_total[1s])".into(),
        }
    );
    let busy = PerDevice::parse(
        r#"sum without(cpu)(rate(reveal_cpu_time_seconds_total{mode!="idle"}[1s]))"#,
    )
    .unwrap();
    assert_eq!(busy.agg, Agg::Sum);
    assert_eq!(
        busy.inner,
        r#"rate(reveal_cpu_time_seconds_total{mode!="idle"}[1s])"#
    );
    // A label value holding a parenthesis does not end the body early.
    let q = PerDevice::parse(r#"min without (gpu) (foo{model="A (rev 2)"})"#).unwrap();
    assert_eq!(
        (q.agg, q.inner.as_str()),
        (Agg::Min, r#"foo{model="A (rev 2)"}"#)
    );
}

#[test]
fn other_shapes_name_no_device() {
    for expr in [
        "rate(reveal_cpu_context_switches_total[1s])",
        "sum by (cpu) (rate(x_total[1s]))",
        "max without (cpu, mode) (rate(x_total[1s]))",
        "max without (cpu) (rate(x_total[1s])) / 2",
        "max without (cpu) (rate(x_total[1s])",
        "count without (cpu) (x)",
        "max without () (x)",
        "maximum without (cpu) (x)",
    ] {
        assert_eq!(PerDevice::parse(expr), None, "{expr}");
    }
}

#[test]
fn the_questions_compare_each_device_with_itself_before_the_episode() {
    let [during, before, count, moved] =
        irq().queries("instance", &["job", "cpu"], true, 5_000, 5_000);
    let inner = "rate(reveal_cpu_interrupts_total[1s])";
    let d = format!("avg_over_time(({inner})[5000ms:1s])");
    let b = format!("avg_over_time(({inner})[60000ms:1s] offset 5000ms)");
    assert_eq!(moved, format!("topk by (instance, job) (8, {d} - {b})"));
    assert_eq!(during, format!("{d} and on (instance, job, cpu) ({moved})"));
    assert_eq!(before, format!("{b} and on (instance, job, cpu) ({moved})"));
    assert_eq!(count, format!("count by (instance, job) ({inner})"));
    let [_, _, _, low] = irq().queries("host", &[], false, 0, -3);
    assert!(
        low.starts_with("bottomk by (host) (8, avg_over_time(("),
        "{low}"
    );
    assert!(
        low.contains("[1000ms:1s]") && low.contains("offset 0ms)"),
        "{low}"
    );
}

fn answers(moved: &[(&str, f64, f64)], count: usize) -> Answers {
    Answers {
        moved: moved
            .iter()
            .map(|(d, n, b)| (d.to_string(), *n, *b))
            .collect(),
        count,
    }
}

#[test]
fn interrupts_pinned_to_four_cpus_name_the_four() {
    let a = answers(
        &[
            ("2", 24_500.0, 40.0),
            ("0", 24_612.0, 41.0),
            ("3", 24_400.0, 45.0),
            ("1", 24_580.0, 38.0),
            // Always the busiest, and no busier now: not named.
            ("12", 4_200.0, 4_000.0),
            ("57", 60.0, 41.0),
        ],
        96,
    );
    let s = standouts(&irq(), true, a, "reveal_cpu_interrupts_total").unwrap();
    let names: Vec<&str> = s.devices.iter().map(|(d, _, _)| d.as_str()).collect();
    assert_eq!(names, ["0", "1", "2", "3"]);
    assert_eq!(
        s.sentence(),
        "cpu 0 at 24612/s (41.0/s before), cpu 1 at 24580/s (38.0/s before), cpu 2 at 24500/s \
         (40.0/s before), cpu 3 at 24400/s (45.0/s before) of 96 CPUs"
    );
}

#[test]
fn devices_that_are_always_the_busiest_or_moved_together_name_nobody() {
    // The usual busiest CPUs, a little busier: no device moved by itself.
    let usual = answers(&[("0", 4_200.0, 4_000.0), ("12", 4_100.0, 3_950.0)], 96);
    assert_eq!(standouts(&irq(), true, usual, "x_total"), None);
    // Every CPU saturated: more than half of them moved.
    let all: Vec<(String, f64, f64)> = (0..8).map(|c| (c.to_string(), 1.0, 0.2)).collect();
    let all = Answers {
        moved: all,
        count: 8,
    };
    assert_eq!(
        standouts(&irq(), true, all, "reveal_cpu_busy_seconds_total"),
        None
    );
    // A family of one or two has no siblings to move apart from; no answer says nothing.
    let two = answers(&[("0", 5000.0, 10.0)], 2);
    assert_eq!(standouts(&irq(), true, two, "x_total"), None);
    assert_eq!(standouts(&irq(), true, Answers::default(), "x_total"), None);
    let nan = answers(&[("0", f64::NAN, 3.0)], 4);
    assert_eq!(standouts(&irq(), true, nan, "x_total"), None);
}

#[test]
fn a_device_that_fell_is_named_for_a_minimum() {
    let p =
        PerDevice::parse("min without (cpu) (rate(reveal_cpu_busy_seconds_total[1s]))").unwrap();
    assert!(!p.looks_up(true));
    let a = answers(&[("7", 0.0, 0.34), ("8", 0.31, 0.33)], 16);
    let s = standouts(&p, false, a, "reveal_cpu_busy_seconds_total").unwrap();
    assert_eq!(s.devices, [("7".to_string(), 0.0, 0.34)]);
    assert_eq!(s.sentence(), "cpu 7 at 0 % (34.0 % before) of 16 CPUs");
}

#[test]
fn many_that_moved_are_capped_and_said_so() {
    let mut moved: Vec<(String, f64, f64)> =
        (0..9).map(|i| (format!("nvme{i}n1"), 0.9, 0.02)).collect();
    moved.push(("nvme9n1".into(), 0.03, 0.02));
    let p =
        PerDevice::parse("max without (device) (rate(reveal_storage_io_time_seconds_total[1s]))")
            .unwrap();
    let a = Answers { moved, count: 24 };
    let s = standouts(&p, true, a, "reveal_storage_io_time_seconds_total").unwrap();
    assert_eq!(s.devices.len(), MAX_NAMED);
    assert!(
        s.sentence()
            .ends_with("nvme7n1 at 90.0 % (2.00 % before) and maybe more of 24 devices"),
        "{}",
        s.sentence()
    );
}

#[test]
fn channels_are_found_in_claims_and_descriptions() {
    let d = r#"reveal_cpu_interrupts_rate{job="reveal"} (cpu): standard deviation higher than its baseline (z = 41.8); reveal_gpu_clock_hertz{gpu="5",model="NVIDIA A100 (SXM4)"} (gpu): gpu 5 at 1.30 GHz while its 7 siblings are at 1.41 GHz; its lowest device; reveal_cpu_interrupts_rate_busiest_cpu{job="reveal"} (cpu): maximum higher than its baseline (z = 40.1)"#;
    let cpu: Vec<_> = channels_in(d, "cpu").collect();
    let names: Vec<&str> = cpu.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(
        names,
        [
            "reveal_cpu_interrupts_rate",
            "reveal_cpu_interrupts_rate_busiest_cpu"
        ]
    );
    assert_eq!(cpu[1].1, [("job".to_string(), "reveal".to_string())]);
    let gpu: Vec<_> = channels_in(d, "gpu").collect();
    assert_eq!(gpu.len(), 1);
    assert_eq!(gpu[0].1[1].1, "NVIDIA A100 (SXM4)");
    assert!(cpu.iter().all(|c| c.2));
    assert_eq!(channels_in("no claim here", "cpu").count(), 0);
    let fell = "x_rate (network): mean level lower than its baseline (z = -9.0)";
    assert!(!channels_in(fell, "network").next().unwrap().2);
}
