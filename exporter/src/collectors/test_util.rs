//! Reading a collector's samples back in unit tests.

use crate::scrape::Scrape;

/// The value of the sample named `name` whose labels include every pair of `labels`.
pub fn value(out: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let fam = out.families().find(|f| f.desc.sample_name() == name)?;
    let s = fam.samples.iter().find(|s| {
        labels
            .iter()
            .all(|(k, v)| s.labels.iter().any(|(k2, v2)| k == k2 && v == v2))
    })?;
    Some(s.value)
}

/// Every sample as (descriptor name, label values, value), in exposition order.
pub fn samples(out: &Scrape) -> Vec<(&'static str, Vec<String>, f64)> {
    out.families()
        .flat_map(|f| {
            f.samples.iter().map(move |s| {
                let labels = s.labels.iter().map(|l| l.1.clone()).collect();
                (f.desc.name, labels, s.value)
            })
        })
        .collect()
}

/// Label values as owned strings, to compare with [`samples`].
pub fn owned(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}
