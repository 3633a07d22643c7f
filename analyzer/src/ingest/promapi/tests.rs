use super::*;

const OK: &str = r#"{"status":"success","data":{"resultType":"matrix","result":[
 {"metric":{"__name__":"reveal_cpu_procs_running","instance":"a:19190","job":"reveal"},
  "values":[[1700000000,"3"],[1700000000.1,"4"],[1700000000.2,"NaN"]]},
 {"metric":{"instance":"b:19190"},"values":[[1700000000.1,"+Inf"],[1700000000.2,"-Inf"],[1700000000.3,"1e-3"]]}
]},"warnings":["PromQL info: metric might not be a counter"]}"#;

#[test]
fn parses_a_matrix_with_special_values_and_warnings() {
    let m = parse_query_range("q", 200, OK.as_bytes()).unwrap();
    assert_eq!(m.series.len(), 2);
    assert_eq!(
        m.warnings,
        vec!["PromQL info: metric might not be a counter"]
    );
    let a = &m.series[0];
    assert_eq!(a.labels["instance"], "a:19190");
    assert_eq!(a.samples[0], (1_700_000_000_000, 3.0));
    assert_eq!(a.samples[1], (1_700_000_000_100, 4.0));
    assert!(a.samples[2].1.is_nan());
    let b = &m.series[1];
    assert_eq!(b.samples[0].1, f64::INFINITY);
    assert_eq!(b.samples[1].1, f64::NEG_INFINITY);
    assert_eq!(b.samples[2], (1_700_000_000_300, 0.001));
}

#[test]
fn api_errors_are_typed_and_classified() {
    let body = br#"{"status":"error","errorType":"bad_data","error":"1:6: parse error: unexpected end of input"}"#;
    let e = parse_query_range("rate(", 400, body).unwrap_err();
    assert!(
        matches!(&e, PromError::Api { error_type, .. } if error_type == "bad_data"),
        "{e}"
    );
    assert!(!e.is_retryable());
    let body = br#"{"status":"error","errorType":"timeout","error":"query timed out"}"#;
    assert!(parse_query_range("q", 503, body)
        .unwrap_err()
        .is_retryable());
}

#[test]
fn garbage_is_a_parse_error_never_a_panic() {
    let cases: &[(&[u8], u16)] = &[
        (b"", 200),
        (b"<html><body>502 Bad Gateway</body></html>", 502),
        (b"{\"status\":\"success\"}", 200),
        (b"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}", 200),
        (b"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{},\"values\":[[1,\"x\"]]}]}}", 200),
        (b"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":1}}]}}", 200),
        (b"\xff\xfe\x00garbage", 200),
        (b"[1,2,3]", 200),
    ];
    for (body, status) in cases {
        let e = parse_query_range("q", *status, body).expect_err("garbage accepted");
        assert_eq!(e.is_retryable(), *status >= 500, "{e}");
    }
    // Random bytes, and random truncations of a valid answer.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for n in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 300) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|i| (x.rotate_left(i as u32 % 64) & 0xff) as u8)
            .collect();
        let _ = parse_query_range("q", 200, &bytes);
        let cut = &OK.as_bytes()[..(n * 7) % OK.len()];
        let _ = parse_query_range("q", 200, cut);
    }
}

#[test]
fn timestamps_beyond_the_grid_range_are_parse_errors() {
    for t in ["1e300", "-1e300", "9.1e12"] {
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{}},"values":[[{t},"1"]]}}]}}}}"#
        );
        let e = parse_query_range("q", 200, body.as_bytes()).expect_err(t);
        assert!(
            matches!(&e, PromError::Parse { msg, .. } if msg.contains("out of range")),
            "{e}"
        );
    }
}

#[test]
fn long_ranges_are_split_on_the_step_grid() {
    let parts = split_range(0, 25_000 * 100, 100);
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[0], (0, 9_999 * 100));
    assert_eq!(parts[1].0, 10_000 * 100);
    assert_eq!(parts.last().unwrap().1, 25_000 * 100);
    for (s, e) in &parts {
        assert!((e - s) / 100 < MAX_POINTS);
        assert_eq!(s % 100, 0);
    }
    assert_eq!(split_range(500, 500, 100), vec![(500, 500)]);
    assert!(split_range(600, 500, 100).is_empty());
}

#[test]
fn form_values_are_percent_encoded() {
    let client = crate::http::HttpClient::new(&Default::default()).unwrap();
    let p = PromClient::new(client, "http://prometheus:9090/");
    let req = p
        .query_request(
            "rate(x{a=\"b c\"}[1s])",
            1_700_000_000_123,
            1_700_000_001_000,
            100,
        )
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(
        req.url().as_str(),
        "http://prometheus:9090/api/v1/query_range"
    );
    assert_eq!(
        req.headers()["content-type"],
        "application/x-www-form-urlencoded"
    );
    assert_eq!(
        req.body().and_then(|b| b.as_bytes()).unwrap(),
        b"query=rate%28x%7Ba%3D%22b+c%22%7D%5B1s%5D%29&start=1700000000.123&end=1700000001.000&step=100ms"
    );
    assert_eq!(secs(1_700_000_000_123), "1700000000.123");
}
