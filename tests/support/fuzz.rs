//! A mutation fuzzer on proptest: inputs are recorded fixtures (real `/proc` files, a real
//! scrape, the shipped configuration files) changed by a short list of mutations — bit flips,
//! inserted tokens that parsers treat specially, deleted, repeated or truncated spans, a line
//! grown to a megabyte, a splice of another seed. proptest draws the mutations and, when a
//! target panics, shrinks them to a minimal list that still does, so a failure names a small
//! reproducible input.
//!
//! `REVEAL_FUZZ_CASES` sets the inputs per target (default [`DEFAULT_CASES`], the short run of
//! every test suite); the long run in docs/testing.md sets it to ten million.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Inputs per target in an ordinary test run.
pub const DEFAULT_CASES: u32 = 1_000;

/// Tokens that end fields, lines, label blocks or numbers, or overflow them.
const TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b":",
    b",",
    b"\"",
    b"\\",
    b"{",
    b"}",
    b"=",
    b"#",
    b"-",
    b"0",
    b"-1",
    b"18446744073709551616",
    b"99999999999999999999999999",
    b"NaN",
    b"+Inf",
    b"1e400",
    b"0x1f",
    b"\xff\xfe",
    b"\0",
    b"\xe2\x80\x8b",
    b"# EOF\n",
    b"cpu",
];

/// One change to an input; positions are taken modulo its length.
#[derive(Debug, Clone)]
pub enum Mutation {
    Flip(usize, u8),
    Insert(usize, usize),
    Delete(usize, usize),
    Repeat(usize, usize, usize),
    Truncate(usize),
    /// A line grown by this many copies of one byte (up to a megabyte).
    Grow(usize, usize),
    /// Another seed's bytes from an offset, pasted in.
    Splice(usize, usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 0u8..8).prop_map(|(p, b)| Mutation::Flip(p, b)),
        4 => (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Mutation::Insert(p, t)),
        2 => (any::<usize>(), 1usize..64).prop_map(|(p, n)| Mutation::Delete(p, n)),
        2 => (any::<usize>(), 1usize..256, 1usize..64).prop_map(|(p, n, k)| Mutation::Repeat(p, n, k)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), prop_oneof![1usize..4096, Just(1 << 20)]).prop_map(|(p, n)| Mutation::Grow(p, n)),
        1 => (any::<usize>(), any::<usize>(), 1usize..512).prop_map(|(p, s, n)| Mutation::Splice(p, s, n)),
    ]
}

/// `seed` with `muts` applied in order (`seeds` lend the bytes of a splice).
pub fn apply(seed: &[u8], muts: &[Mutation], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for m in muts {
        let at = |p: usize, v: &Vec<u8>| if v.is_empty() { 0 } else { p % (v.len() + 1) };
        match *m {
            Mutation::Flip(p, b) if !v.is_empty() => {
                let i = p % v.len();
                v[i] ^= 1 << b;
            }
            Mutation::Flip(..) => {}
            Mutation::Insert(p, t) => {
                let i = at(p, &v);
                v.splice(i..i, TOKENS[t].iter().copied());
            }
            Mutation::Delete(p, n) => {
                let i = at(p, &v);
                let end = (i + n).min(v.len());
                v.drain(i..end);
            }
            Mutation::Repeat(p, n, k) => {
                // k copies of the span after it, inserted at once: one move of the tail,
                // not k (the tail may be megabytes).
                let i = at(p, &v);
                let end = (i + n).min(v.len());
                let copies = v[i..end].repeat(k);
                v.splice(end..end, copies);
            }
            Mutation::Truncate(p) => {
                let i = at(p, &v);
                v.truncate(i);
            }
            Mutation::Grow(p, n) => {
                let i = at(p, &v);
                let byte = if i < v.len() && v[i] != b'\n' {
                    v[i]
                } else {
                    b'7'
                };
                // Built by copies and a fill, not byte by byte (n may be a megabyte).
                let mut grown = Vec::with_capacity(v.len() + n);
                grown.extend_from_slice(&v[..i]);
                grown.resize(i + n, byte);
                grown.extend_from_slice(&v[i..]);
                v = grown;
            }
            Mutation::Splice(p, s, n) => {
                let other = &seeds[s % seeds.len()];
                if !other.is_empty() {
                    let from = (s / seeds.len()) % other.len();
                    let end = (from + n).min(other.len());
                    let i = at(p, &v);
                    v.splice(i..i, other[from..end].iter().copied());
                }
            }
        }
    }
    v
}

/// What one target's run saw.
#[derive(Debug)]
pub struct Report {
    pub cases: u32,
    pub took: Duration,
    /// The slowest single input and its length.
    pub slowest: (Duration, usize),
    pub longest_input: usize,
}

/// Inputs per target for this run.
pub fn cases() -> u32 {
    std::env::var("REVEAL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// Runs `target` on [`cases`] mutated seeds; panics (with the shrunk input's mutations) if
/// the target panics on any of them.
pub fn fuzz(name: &str, seeds: &[Vec<u8>], target: impl Fn(&[u8])) -> Report {
    assert!(!seeds.is_empty(), "{name}: no seeds");
    let n = cases();
    let mut runner = TestRunner::new(Config {
        cases: n,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    });
    let slowest = std::cell::Cell::new((Duration::ZERO, 0usize));
    let longest = std::cell::Cell::new(0usize);
    let t0 = Instant::now();
    let strategy = (0..seeds.len(), prop::collection::vec(mutation(), 0..6));
    let result = runner.run(&strategy, |(i, muts)| {
        let input = apply(&seeds[i], &muts, seeds);
        if let Some(dir) = std::env::var_os("REVEAL_FUZZ_CURRENT") {
            let _ = std::fs::write(std::path::Path::new(&dir).join(name), &input);
        }
        let start = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(&input)));
        let took = start.elapsed();
        if took > slowest.get().0 {
            slowest.set((took, input.len()));
            if let Some(dir) = std::env::var_os("REVEAL_FUZZ_SLOWEST") {
                let _ = std::fs::write(std::path::Path::new(&dir).join(name), &input);
            }
        }
        longest.set(longest.get().max(input.len()));
        outcome.map_err(|_| TestCaseError::fail(format!("{name} panicked")))
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let r = Report {
        cases: n,
        took: t0.elapsed(),
        slowest: slowest.get(),
        longest_input: longest.get(),
    };
    eprintln!(
        "fuzz {name}: {} inputs in {:.1} s; slowest {:.2} ms ({} bytes); longest input {} bytes",
        r.cases,
        r.took.as_secs_f64(),
        r.slowest.0.as_secs_f64() * 1e3,
        r.slowest.1,
        r.longest_input
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_do_what_they_say() {
        let seeds = vec![b"abc\ndef\n".to_vec(), b"XYZ".to_vec()];
        let s = &seeds[0];
        assert_eq!(apply(s, &[Mutation::Truncate(3)], &seeds), b"abc");
        assert_eq!(apply(s, &[Mutation::Delete(0, 4)], &seeds), b"def\n");
        assert_eq!(apply(s, &[Mutation::Insert(3, 4)], &seeds), b"abc:\ndef\n");
        assert_eq!(
            apply(s, &[Mutation::Repeat(0, 2, 2)], &seeds),
            b"abababc\ndef\n"
        );
        assert_eq!(apply(s, &[Mutation::Flip(0, 5)], &seeds), b"Abc\ndef\n");
        assert_eq!(apply(s, &[Mutation::Grow(1, 3)], &seeds).len(), s.len() + 3);
        assert_eq!(
            apply(s, &[Mutation::Splice(0, 1, 2)], &seeds),
            b"XYabc\ndef\n"
        );
        assert_eq!(
            apply(b"", &[Mutation::Flip(7, 1), Mutation::Delete(3, 9)], &seeds),
            b""
        );
    }

    /// Repeat and Grow, one insertion at a time: what `apply` must equal.
    fn apply_slowly(seed: &[u8], muts: &[Mutation], seeds: &[Vec<u8>]) -> Vec<u8> {
        let mut v = seed.to_vec();
        for m in muts {
            let at = |p: usize, v: &Vec<u8>| if v.is_empty() { 0 } else { p % (v.len() + 1) };
            match *m {
                Mutation::Repeat(p, n, k) => {
                    let i = at(p, &v);
                    let end = (i + n).min(v.len());
                    let span = v[i..end].to_vec();
                    for _ in 0..k {
                        v.splice(end..end, span.iter().copied());
                    }
                }
                Mutation::Grow(p, n) => {
                    let i = at(p, &v);
                    let byte = if i < v.len() && v[i] != b'\n' {
                        v[i]
                    } else {
                        b'7'
                    };
                    for _ in 0..n {
                        v.insert(i, byte);
                    }
                }
                ref other => v = apply(&v, std::slice::from_ref(other), seeds),
            }
        }
        v
    }

    proptest! {
        #![proptest_config(Config { cases: 300, failure_persistence: None, ..Config::default() })]
        #[test]
        fn bulk_insertions_equal_one_at_a_time(
            muts in prop::collection::vec(
                mutation().prop_filter("no megabyte line", |m| !matches!(m, Mutation::Grow(_, n) if *n > 4096)),
                0..6,
            ),
        ) {
            let seeds = vec![b"cpu0 1 2 3\nintr 5 6\n".to_vec(), b"# EOF\n".to_vec()];
            prop_assert_eq!(apply(&seeds[0], &muts, &seeds), apply_slowly(&seeds[0], &muts, &seeds));
        }
    }
}
