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
fn the_questions_keep_the_host_and_the_channels_labels() {
    let [top, median, count] = irq().queries("instance", &["job", "cpu"], true);
    assert_eq!(
        top,
        "topk by (instance, job) (8, rate(reveal_cpu_interrupts_total[1s]))"
    );
    assert_eq!(
        median,
        "quantile by (instance, job) (0.5, rate(reveal_cpu_interrupts_total[1s]))"
    );
    assert_eq!(
        count,
        "count by (instance, job) (rate(reveal_cpu_interrupts_total[1s]))"
    );
    let [low, _, _] = irq().queries("host", &[], false);
    assert!(low.starts_with("bottomk by (host) (8, "), "{low}");
}

fn answers(extremes: &[(&str, f64)], median: f64, count: usize) -> Answers {
    Answers {
        extremes: extremes.iter().map(|(d, v)| (d.to_string(), *v)).collect(),
        median,
        count,
    }
}

#[test]
fn interrupts_pinned_to_four_cpus_name_the_four() {
    let a = answers(
        &[
            ("2", 24_500.0),
            ("0", 24_612.0),
            ("3", 24_400.0),
            ("1", 24_580.0),
            ("57", 60.0),
            ("12", 55.0),
            ("80", 52.0),
            ("9", 50.0),
        ],
        41.0,
        96,
    );
    let s = standouts(&irq(), true, a, "reveal_cpu_interrupts_total").unwrap();
    let names: Vec<&str> = s.devices.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(names, ["0", "1", "2", "3"]);
    assert_eq!(
        s.sentence(),
        "cpu 0 at 24612/s, cpu 1 at 24580/s, cpu 2 at 24500/s, cpu 3 at 24400/s while the \
         median of 96 CPUs is 41.0/s"
    );
}

#[test]
fn a_family_that_moved_as_a_whole_names_nobody() {
    // Every CPU saturated: the busiest is the median.
    let all = answers(&[("0", 1.0), ("1", 1.0), ("2", 0.99)], 0.98, 96);
    assert_eq!(
        standouts(&irq(), true, all, "reveal_cpu_busy_seconds_total"),
        None
    );
    // A family of one or two has no median to stand apart from; no answer says nothing.
    let one = answers(&[("0", 5000.0)], 5000.0, 1);
    assert_eq!(standouts(&irq(), true, one, "x_total"), None);
    let two = answers(&[("0", 5000.0), ("1", 10.0)], 2505.0, 2);
    assert_eq!(standouts(&irq(), true, two, "x_total"), None);
    assert_eq!(standouts(&irq(), true, Answers::default(), "x_total"), None);
    let nan = answers(&[("0", f64::NAN)], 3.0, 4);
    assert_eq!(standouts(&irq(), true, nan, "x_total"), None);
}

#[test]
fn the_quietest_devices_are_named_for_a_minimum() {
    let p =
        PerDevice::parse("min without (cpu) (rate(reveal_cpu_busy_seconds_total[1s]))").unwrap();
    assert!(!p.looks_up(true));
    let a = answers(&[("7", 0.0), ("8", 0.31), ("9", 0.33)], 0.35, 16);
    let s = standouts(&p, false, a, "reveal_cpu_busy_seconds_total").unwrap();
    assert_eq!(s.devices, [("7".to_string(), 0.0)]);
    assert_eq!(
        s.sentence(),
        "cpu 7 at 0 % while the median of 16 CPUs is 35.0 %"
    );
}

#[test]
fn many_apart_are_capped_and_said_so() {
    let mut ex: Vec<(String, f64)> = (0..8).map(|i| (format!("nvme{i}n1"), 0.9)).collect();
    ex.push(("nvme8n1".into(), 0.01));
    let p =
        PerDevice::parse("max without (device) (rate(reveal_storage_io_time_seconds_total[1s]))")
            .unwrap();
    let a = Answers {
        extremes: ex,
        median: 0.01,
        count: 24,
    };
    let s = standouts(&p, true, a, "reveal_storage_io_time_seconds_total").unwrap();
    assert_eq!(s.devices.len(), MAX_NAMED);
    assert!(
        s.sentence()
            .ends_with("nvme7n1 at 90.0 % and maybe more while the median of 24 devices is 1.00 %"),
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
