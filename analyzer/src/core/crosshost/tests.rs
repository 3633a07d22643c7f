use super::*;

const P: CrossHostParams = CrossHostParams {
    threshold: 3.5,
    k: 24,
    n: 30,
    min_relative_difference: 0.01,
    pair_relative_difference: 0.5,
    top_evidence: 5,
};

#[test]
fn robust_z_by_hand() {
    // 10, 11, 12, 13, 100: median 12, |dev| = 2,1,0,1,88 → MAD 1, scale 1.4826;
    // z(100) = 88 / 1.4826 = 59.355…, z(10) = −2 / 1.4826 = −1.349.
    let c = compare_column(&[10.0, 11.0, 12.0, 13.0, 100.0], true, &P);
    let far = c.iter().find(|c| c.host == 4).unwrap();
    assert!((far.z.unwrap() - 88.0 / 1.4826).abs() < 1e-12);
    assert_eq!(far.method, Method::RobustZ);
    assert!(far.strength > 1.0);
    let low = c.iter().find(|c| c.host == 0).unwrap();
    assert!((low.z.unwrap() + 2.0 / 1.4826).abs() < 1e-12);
    assert!(low.strength < 1.0);
    // The median host does not deviate at all.
    assert!(c.iter().all(|c| c.host != 2));
}

#[test]
fn mad_zero_falls_back_to_mean_absolute_deviation() {
    // Nine hosts, eight at 0 HugePages and one at 512: MAD 0, mean |dev| = 512/9,
    // scale = 1.2533 · 512/9, z = 9 / 1.2533 = 7.181…
    let mut v = vec![0.0; 9];
    v[3] = 512.0;
    let c = compare_column(&v, true, &P);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].host, 3);
    assert!((c[0].z.unwrap() - 9.0 / 1.2533).abs() < 1e-9);
    assert_eq!(c[0].method, Method::RobustZ);
    // Three hosts: z = 3 / 1.2533 = 2.39 < 3.5, but the others agree exactly: a
    // configuration difference, strength 1 + relative difference = 2.
    let c = compare_column(&[0.0, 512.0, 0.0], true, &P);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].method, Method::IdenticalOthers);
    assert!((c[0].z.unwrap() - 3.0 / 1.2533).abs() < 1e-9);
    assert_eq!(c[0].strength, 2.0);
}

#[test]
fn constant_noise_and_nan_make_nothing() {
    assert!(compare_column(&[7.0; 6], true, &P).is_empty());
    // Float noise far below 1% of the level is not material, whatever its z.
    assert!(compare_column(&[1.0, 1.0, 1.0, 1.0, 1.0 + 1e-12], true, &P).is_empty());
    // NaN and infinities take no part; one finite value compares with nothing.
    assert!(compare_column(&[f64::NAN, 3.0, f64::INFINITY], true, &P).is_empty());
    let c = compare_column(&[f64::NAN, 0.0, 0.0, 0.0, 0.0, 40.0], true, &P);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].host, c[0].hosts), (5, 5));
}

#[test]
fn two_hosts_use_the_relative_difference() {
    // 4 vs 10: relative difference 0.6, strength 0.6 / 0.5 = 1.2 for both, no z.
    let c = compare_column(&[4.0, 10.0], true, &P);
    assert_eq!(c.len(), 2);
    for x in &c {
        assert_eq!(x.method, Method::Pair);
        assert_eq!(x.z, None);
        assert!((x.strength - 1.2).abs() < 1e-12);
    }
    assert_eq!((c[0].value, c[0].median), (4.0, 10.0));
    // 9 vs 10: a tenth apart is not a pair deviation.
    assert!(compare_column(&[9.0, 10.0], true, &P)[0].strength < 1.0);
    // Shape features (skewness 0.1 vs −0.3) are not compared between two hosts.
    assert!(compare_column(&[0.1, -0.3], false, &P).is_empty());
}

fn window(end_ms: i64, values: Vec<f64>) -> GroupWindow {
    let hosts: Vec<String> = (0..values.len()).map(|i| format!("node{i}")).collect();
    GroupWindow {
        end_ms,
        hosts,
        columns: vec![GroupColumn {
            key: ColumnKey {
                channel: "reveal_memory_hugepages{state=\"free\"}".into(),
                feature: Feature::Mean,
            },
            subsystem: Subsystem::Memory,
            values,
        }],
    }
}

#[test]
fn persistence_k_of_n() {
    let p = CrossHostParams { k: 3, n: 5, ..P };
    let mut t = CrossHostTracker::new(p).unwrap();
    let normal = vec![100.0, 101.0, 99.0, 100.5, 99.5];
    let mut odd = normal.clone();
    odd[1] = 10.0;
    // Deviating in windows 0, 2, 3: 3 of the last 5 from window 3 on, 2 from window 5.
    let seq = [&odd, &normal, &odd, &odd, &normal, &normal, &normal];
    let mut open = Vec::new();
    for (i, v) in seq.iter().enumerate() {
        let u = t.observe(&window(i as i64 * 1000, (*v).clone()));
        open.push(!u.findings.is_empty());
        let s = u
            .scores
            .iter()
            .find(|(h, s, _)| h == "node1" && *s == Subsystem::Memory)
            .unwrap()
            .2;
        assert_eq!(s > 3.5, open[i], "window {i}: score {s}");
    }
    assert_eq!(open, [false, false, false, true, true, false, false]);
    let mut t = CrossHostTracker::new(p).unwrap();
    let mut last = CrossHostUpdate::default();
    for i in 0..4 {
        last = t.observe(&window(i * 1000, odd.clone()));
    }
    let f = &last.findings[0];
    assert_eq!((f.host.as_str(), f.subsystem), ("node1", Subsystem::Memory));
    assert_eq!((f.since_ms, f.last_ms), (2000, 3000));
    let e = &f.evidence[0];
    // Sorted 10, 99, 99.5, 100, 100.5: median 99.5; |dev| 0, 0.5, 0.5, 1, 89.5 → MAD 0.5.
    assert_eq!((e.host_value, e.group_median), (10.0, 99.5));
    assert!((e.robust_z.unwrap() + 89.5 / (1.4826 * 0.5)).abs() < 1e-9);
    assert_eq!(e.windows, 4);
    assert_eq!(
        f.summary,
        "HugePages (state free) on node1 is far below the other hosts' median \
         (10 vs 99.5; robust z = −120.7)."
    );
}

#[test]
fn bad_params_are_refused() {
    for p in [
        CrossHostParams { k: 0, ..P },
        CrossHostParams { k: 31, ..P },
        CrossHostParams {
            threshold: f64::NAN,
            ..P
        },
        CrossHostParams {
            pair_relative_difference: 0.0,
            ..P
        },
    ] {
        assert!(CrossHostTracker::new(p).is_err(), "{p:?}");
    }
}

#[test]
fn group_builder_lines_hosts_up_by_channel_feature() {
    let mut b = GroupBuilder::new(5000);
    b.add_host("a", [("m", Feature::Mean, Subsystem::Cpu, 1.0)]);
    b.add_host(
        "b",
        [
            ("n", Feature::Maximum, Subsystem::Memory, 7.0),
            ("m", Feature::Mean, Subsystem::Cpu, 2.0),
        ],
    );
    b.add_host("c", []);
    let w = b.build();
    assert_eq!(w.hosts, ["a", "b", "c"]);
    assert_eq!(w.columns.len(), 2);
    assert_eq!(w.columns[0].values[..2], [1.0, 2.0]);
    assert!(w.columns[0].values[2].is_nan());
    assert!(w.columns[1].values[0].is_nan() && w.columns[1].values[1] == 7.0);
    assert_eq!(w.columns[1].values.len(), 3);
}

#[test]
fn params_load_from_yaml_with_defaults() {
    let p: CrossHostParams = yaml_serde::from_str("k: 8\nn: 10\n").unwrap();
    assert_eq!((p.k, p.n, p.threshold), (8, 10, 3.5));
    assert!(p.check().is_ok());
    assert!(yaml_serde::from_str::<CrossHostParams>("treshold: 3").is_err());
}

/// The paper's HugePages case as four hosts see it: one host's memory utilization is far
/// above the others' in every feature of the channel, and its 1 GiB pool is unlike theirs.
#[test]
fn a_level_and_its_cause_are_two_pieces_of_evidence_and_the_cause_explains() {
    let util = "reveal_memory_utilization";
    let pool = "reveal_memory_hugepages_pool{size=\"1073741824\",state=\"total\"}";
    let mut columns: Vec<GroupColumn> = [
        Feature::Mean,
        Feature::Maximum,
        Feature::Minimum,
        Feature::LinearTrendIntercept,
        Feature::SumValues,
    ]
    .into_iter()
    .map(|feature| GroupColumn {
        key: ColumnKey {
            channel: util.into(),
            feature,
        },
        subsystem: Subsystem::Memory,
        values: vec![0.341, 0.2817, 0.2837, 0.2857],
    })
    .collect();
    columns.push(GroupColumn {
        key: ColumnKey {
            channel: pool.into(),
            feature: Feature::Mean,
        },
        subsystem: Subsystem::Memory,
        values: vec![40.0, 8.0, 8.0, 8.0],
    });
    let p = CrossHostParams { k: 2, n: 3, ..P };
    let mut t = CrossHostTracker::new(p).unwrap();
    let mut last = CrossHostUpdate::default();
    for i in 0..3 {
        last = t.observe(&GroupWindow {
            end_ms: i * 1000,
            hosts: (0..4).map(|h| format!("node{h}")).collect(),
            columns: columns.clone(),
        });
    }
    assert_eq!(last.findings.len(), 1, "{last:#?}");
    let f = &last.findings[0];
    let channels: Vec<&str> = f.evidence.iter().map(|e| e.channel.as_str()).collect();
    // Each channel once, the strongest first: the utilization (robust z 24) before the pool
    // (a configuration difference: the other three agree exactly).
    assert_eq!(channels, [util, pool]);
    assert_eq!(f.evidence[1].method, Method::IdenticalOthers);
    // The summary says both, and the alert's hint is the pool's: reserved pages, not a process.
    assert!(f.summary.starts_with(&f.evidence[0].claim), "{}", f.summary);
    assert!(f.summary.ends_with(&f.evidence[1].claim), "{}", f.summary);
    let (i, hint) = explaining(f.subsystem, &f.evidence).unwrap();
    assert_eq!(i, 1);
    assert!(hint.starts_with("the HugePages pool"), "{hint}");
}
