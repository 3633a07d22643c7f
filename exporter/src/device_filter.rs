//! The device filter of collectors with one series per device (`diskstats`, `netdev`), as
//! node_exporter's `--collector.*.device-exclude`: a regular expression of device names to
//! leave out, compiled once when the flags are parsed.

/// A regular expression over device names; the empty pattern matches nothing.
#[derive(Debug, Clone)]
pub struct DeviceFilter(Option<regex::Regex>);

impl DeviceFilter {
    /// Compiles `pattern`; an empty pattern excludes no device.
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        if pattern.is_empty() {
            return Ok(DeviceFilter(None));
        }
        regex::Regex::new(pattern).map(|r| DeviceFilter(Some(r)))
    }

    /// A filter that excludes nothing.
    pub fn none() -> Self {
        DeviceFilter(None)
    }

    /// The flag's value parser: a pattern that does not compile is a usage error at start.
    pub fn parse_flag(pattern: &str) -> Result<Self, String> {
        DeviceFilter::new(pattern).map_err(|e| e.to_string())
    }

    pub fn matches(&self, name: &str) -> bool {
        self.0.as_ref().is_some_and(|r| r.is_match(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_pattern_keeps_everything_and_bad_ones_are_refused() {
        assert!(!DeviceFilter::new("").unwrap().matches("loop0"));
        assert!(!DeviceFilter::none().matches(""));
        let f = DeviceFilter::new("^lo$").unwrap();
        assert!(f.matches("lo") && !f.matches("lo0"));
        assert!(DeviceFilter::new("(").is_err());
        assert!(DeviceFilter::parse_flag("(").unwrap_err().contains("regex"));
    }
}
