use super::*;

fn iv(v: &[(i64, i64)]) -> Vec<Interval> {
    v.iter()
        .map(|&(start_ms, end_ms)| Interval { start_ms, end_ms })
        .collect()
}

#[test]
fn hand_computed_case() {
    // A: [0,10) [20,30) [50,60); B: [5,25) [70,80).
    // Intersection: [5,10) + [20,25) = 10. L(A) = 30, L(B) = 30.
    // IoU = 10 / (30 + 30 − 10) = 0.2. byCount A→B: 2 of 3 segments hit;
    // byLength A→B = 10/30. B→A: [5,25) hits, [70,80) does not: 1/2; 10/30.
    let g = agreement(iv(&[(0, 10), (20, 30), (50, 60)]), iv(&[(5, 25), (70, 80)]));
    assert_eq!(
        (g.length_a_ms, g.length_b_ms, g.intersection_ms),
        (30, 30, 10)
    );
    assert_eq!(g.iou, Some(0.2));
    assert_eq!(g.hit_by_count, Some(2.0 / 3.0));
    assert_eq!(g.hit_by_length, Some(1.0 / 3.0));
    assert_eq!(g.hit_by_count_b, Some(0.5));
    assert_eq!(g.hit_by_length_b, Some(1.0 / 3.0));
}

#[test]
fn merging_and_touching() {
    // Overlapping windows [0,3000) [1000,4000) [2000,5000) are one segment of 5000 ms.
    assert_eq!(
        merge(iv(&[(2000, 5000), (0, 3000), (1000, 4000), (7, 7)])),
        iv(&[(0, 5000)])
    );
    // Touching half-open intervals merge on one side but do not "hit" across sides.
    let g = agreement(iv(&[(0, 10)]), iv(&[(10, 20)]));
    assert_eq!(g.iou, Some(0.0));
    assert_eq!(g.hit_by_count, Some(0.0));
    // Identical sets agree fully; empty sets give n/a, not a number.
    let g = agreement(iv(&[(0, 10), (30, 40)]), iv(&[(30, 40), (0, 10)]));
    assert_eq!(
        (g.iou, g.hit_by_count, g.hit_by_length),
        (Some(1.0), Some(1.0), Some(1.0))
    );
    let g = agreement(vec![], vec![]);
    assert_eq!((g.iou, g.hit_by_count), (None, None));
    let g = agreement(vec![], iv(&[(0, 5)]));
    assert_eq!(
        (g.iou, g.hit_by_count, g.hit_by_count_b),
        (Some(0.0), None, Some(0.0))
    );
}

#[test]
fn one_long_segment_against_many_short_ones() {
    // A: [0,100); B: [10,20) [40,50) [90,120). Intersection 10+10+10 = 30;
    // union = 100 + 50 − 30 = 120 → IoU 0.25; A's one segment is hit (1.0) though only
    // 30% of its length is; all of B's three segments hit A; B's length 30/50 = 0.6.
    let g = agreement(iv(&[(0, 100)]), iv(&[(10, 20), (40, 50), (90, 120)]));
    assert_eq!(g.iou, Some(0.25));
    assert_eq!((g.hit_by_count, g.hit_by_length), (Some(1.0), Some(0.3)));
    assert_eq!(
        (g.hit_by_count_b, g.hit_by_length_b),
        (Some(1.0), Some(0.6))
    );
}

#[test]
fn hosts_do_not_meet_each_other() {
    let a: HostIntervals = [("h1".to_string(), iv(&[(0, 10)]))].into();
    let b: HostIntervals = [("h2".to_string(), iv(&[(0, 10)]))].into();
    let c = compare(&a, &b);
    assert_eq!(c.hosts.len(), 2);
    assert_eq!(c.overall.iou, Some(0.0));
    assert_eq!(c.overall.hit_by_count, Some(0.0));
    // Two hosts: h1 agrees fully, h2 half by length; overall sums lengths.
    let a: HostIntervals = [
        ("h1".to_string(), iv(&[(0, 10)])),
        ("h2".to_string(), iv(&[(0, 10)])),
    ]
    .into();
    let b: HostIntervals = [
        ("h1".to_string(), iv(&[(0, 10)])),
        ("h2".to_string(), iv(&[(5, 15)])),
    ]
    .into();
    let c = compare(&a, &b);
    // Intersection 10 + 5 = 15; union 20 + 20 − 15 = 25.
    assert_eq!(c.overall.iou, Some(15.0 / 25.0));
    assert_eq!(c.overall.hit_by_count, Some(1.0));
    assert_eq!(c.overall.hit_by_length, Some(0.75));
}

#[test]
fn reads_reports_and_csv() {
    let report = concat!(
        r#"{"type":"host","host":"n1","summary":{}}"#,
        "\n",
        r#"{"type":"window","host":"n1","window":3,"start_ms":3000,"end_ms":6000}"#,
        "\n",
        r#"{"type":"episode","host":"n1","first_window":3,"last_window":4,"start_ms":3000,"end_ms":7000}"#,
        "\n"
    );
    let m = parse_intervals(report).unwrap();
    assert_eq!(m["n1"], iv(&[(3000, 7000)]));
    // Windows only: they are used.
    let m =
        parse_intervals(r#"{"type":"window","host":"n1","start_ms":3000,"end_ms":6000}"#).unwrap();
    assert_eq!(m["n1"], iv(&[(3000, 6000)]));
    let m = parse_intervals("start,end,host\n1700000000.5,1700000003,n2\n10,20\n").unwrap();
    assert_eq!(m["n2"], iv(&[(1_700_000_000_500, 1_700_000_003_000)]));
    assert_eq!(
        m[DEFAULT_HOST],
        iv(&[(10_000, 20_000)]),
        "the file is in seconds"
    );
    let m = parse_intervals("1700000000500,1700000003000\n").unwrap();
    assert_eq!(
        m[DEFAULT_HOST],
        iv(&[(1_700_000_000_500, 1_700_000_003_000)])
    );
    assert_eq!(parse_intervals("").unwrap().len(), 0);
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    for bad in [
        "1,2,3,4",
        "10,5",
        "0,1\nx,y",
        "{\"type\":\"episode\"}",
        "{not json",
        "{\"type\":\"episode\",\"start_ms\":9,\"end_ms\":1}",
        "1e300,1e301",
    ] {
        assert!(parse_intervals(bad).is_err(), "{bad:?}");
    }
    for s in [
        "\u{0}",
        ",,",
        "\u{feff}{",
        "NaN,inf",
        "-",
        "9999999999999999999,1",
    ] {
        let _ = parse_intervals(s);
    }
}

proptest::proptest! {
    #[test]
    fn never_panics(s in "\\PC{0,200}") {
        let _ = parse_intervals(&s);
    }

    #[test]
    fn measures_stay_in_range(
        a in proptest::collection::vec((0i64..1000, 0i64..100), 0..20),
        b in proptest::collection::vec((0i64..1000, 0i64..100), 0..20),
    ) {
        let to = |v: &Vec<(i64, i64)>| {
            v.iter().map(|&(s, l)| Interval { start_ms: s, end_ms: s + l }).collect::<Vec<_>>()
        };
        let g = agreement(to(&a), to(&b));
        for x in [g.iou, g.hit_by_count, g.hit_by_length, g.hit_by_count_b, g.hit_by_length_b]
            .into_iter()
            .flatten()
        {
            proptest::prop_assert!((0.0..=1.0).contains(&x));
        }
        let r = agreement(to(&b), to(&a));
        proptest::prop_assert_eq!(g.iou, r.iou);
        proptest::prop_assert_eq!(g.hit_by_count, r.hit_by_count_b);
    }
}
