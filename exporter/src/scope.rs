//! What one scrape asks for, from the query string of `/metrics`:
//!
//! - `collect[]=NAME` (repeatable): only these collectors run and are served, as
//!   node_exporter's parameter of that name; `exclude[]=NAME`: every collector but these.
//! - `cadence=fast`: the series of `--metrics.fast`, from only the collectors that have one
//!   of them (the scrape every 100 ms); `cadence=slow`: every other series and the
//!   exporter's self-metrics (the scrape every 10–15 s). `cadence=all`, or none: everything.
//!
//! Other parameters are ignored, as node_exporter ignores them.

/// Which series of the exporter a scrape serves, by cadence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Cadence {
    /// Every series (plain `/metrics`).
    #[default]
    All,
    /// The series `--metrics.fast` keeps.
    Fast,
    /// Every series it does not keep, and the self-metrics.
    Slow,
}

/// A scrape's collectors and cadence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub cadence: Cadence,
    /// `collect[]`: only these collectors; `None`: every one.
    pub collect: Option<Vec<String>>,
    /// `exclude[]`: every collector but these.
    pub exclude: Vec<String>,
}

impl Scope {
    /// Parses a query string (without the `?`). `known` is every collector name the exporter
    /// has; a `collect[]` or `exclude[]` naming another one, both of them in one request, or
    /// an unknown `cadence` is refused with the reason (the server answers 400 with it).
    pub fn from_query(query: Option<&str>, known: &[&str]) -> Result<Scope, String> {
        let mut scope = Scope::default();
        let mut cadence_seen = false;
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (k, v) = (decode(k)?, decode(v)?);
            match k.as_str() {
                "collect[]" | "exclude[]" => {
                    if !known.contains(&v.as_str()) {
                        return Err(format!("{k}: no collector named {v:?}"));
                    }
                    if k == "collect[]" {
                        scope.collect.get_or_insert_with(Vec::new).push(v);
                    } else {
                        scope.exclude.push(v);
                    }
                }
                "cadence" => {
                    if cadence_seen {
                        return Err("cadence given twice".into());
                    }
                    cadence_seen = true;
                    scope.cadence = match v.as_str() {
                        "all" => Cadence::All,
                        "fast" => Cadence::Fast,
                        "slow" => Cadence::Slow,
                        other => {
                            return Err(format!("cadence must be fast, slow or all, not {other:?}"))
                        }
                    };
                }
                _ => {}
            }
        }
        if scope.collect.is_some() && !scope.exclude.is_empty() {
            return Err("collect[] and exclude[] cannot be combined".into());
        }
        Ok(scope)
    }

    /// Whether `collect[]` and `exclude[]` let the collector run.
    pub fn wants_collector(&self, name: &str) -> bool {
        self.collect
            .as_ref()
            .is_none_or(|c| c.iter().any(|n| n == name))
            && !self.exclude.iter().any(|n| n == name)
    }
}

/// Percent-decodes one query component (`+` is a space, as in forms).
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad percent-encoding in {s:?}"))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["stat", "interrupts", "meminfo"];

    fn parse(q: &str) -> Result<Scope, String> {
        Scope::from_query(Some(q), KNOWN)
    }

    #[test]
    fn collect_and_exclude_as_node_exporter_takes_them() {
        assert_eq!(Scope::from_query(None, KNOWN).unwrap(), Scope::default());
        assert_eq!(parse("").unwrap(), Scope::default());
        // Prometheus percent-encodes the brackets of `params: {collect[]: [...]}`.
        let s = parse("collect%5B%5D=stat&collect[]=meminfo&other=1").unwrap();
        assert_eq!(
            s.collect.as_deref(),
            Some(&["stat".into(), "meminfo".into()][..])
        );
        assert!(s.wants_collector("stat") && !s.wants_collector("interrupts"));
        let s = parse("exclude%5b%5d=interrupts").unwrap();
        assert!(s.wants_collector("stat") && !s.wants_collector("interrupts"));
        assert!(parse("collect[]=nope")
            .unwrap_err()
            .contains("no collector named \"nope\""));
        assert!(parse("collect[]=stat&exclude[]=meminfo").is_err());
        assert!(parse("collect[]=%zz").is_err());
    }

    #[test]
    fn cadences() {
        assert_eq!(parse("cadence=fast").unwrap().cadence, Cadence::Fast);
        assert_eq!(parse("cadence=slow").unwrap().cadence, Cadence::Slow);
        assert_eq!(parse("cadence=all").unwrap().cadence, Cadence::All);
        let both = parse("cadence=fast&collect[]=stat").unwrap();
        assert_eq!(both.cadence, Cadence::Fast);
        assert!(!both.wants_collector("meminfo"));
        assert!(parse("cadence=often").is_err());
        assert!(parse("cadence=fast&cadence=slow").is_err());
    }
}
