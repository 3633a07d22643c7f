//! `reveal_schema::catalog` (the exporter's metrics as data, read by the analyzer and by the
//! selection parser) lists exactly the metrics the exporter's descriptors define.
//!
//! After adding, removing or relabelling a metric, regenerate the table with
//! `REVEAL_BLESS=1 cargo nextest run -p reveal-exporter --test schema_catalog`.

use reveal_exporter::runner::known_descs;

/// The Rust source of `schema/src/catalog/table.rs` for the exporter's descriptors.
fn table_source() -> String {
    let mut out = String::from(
        "//! Generated from the exporter's descriptors by the exporter's `schema_catalog` test\n\
         //! (`REVEAL_BLESS=1 cargo nextest run -p reveal-exporter --test schema_catalog`);\n\
         //! do not edit by hand.\n\
         \n\
         use super::Metric;\n\
         \n\
         pub(super) static METRICS: &[Metric] = &[\n",
    );
    for d in known_descs() {
        let labels: Vec<String> = d.labels.iter().map(|l| format!("{l:?}")).collect();
        out.push_str(&format!(
            "    Metric {{\n        name: {:?},\n        labels: &[{}],\n    }},\n",
            d.sample_name(),
            labels.join(", ")
        ));
    }
    out.push_str("];\n");
    out
}

#[test]
fn the_schema_catalog_lists_every_metric_of_the_exporter() {
    let want: Vec<(String, Vec<&str>)> = known_descs()
        .map(|d| (d.sample_name(), d.labels.to_vec()))
        .collect();
    let have: Vec<(String, Vec<&str>)> = reveal_schema::catalog::METRICS
        .iter()
        .map(|m| (m.name.to_string(), m.labels.to_vec()))
        .collect();
    if want == have {
        return;
    }
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/src/catalog/table.rs");
    if std::env::var_os("REVEAL_BLESS").is_some() {
        std::fs::write(&path, table_source()).unwrap();
        eprintln!("wrote {}; rebuild to use it", path.display());
        return;
    }
    let missing: Vec<_> = want.iter().filter(|w| !have.contains(w)).collect();
    let extra: Vec<_> = have.iter().filter(|h| !want.contains(h)).collect();
    panic!(
        "reveal_schema::catalog differs from the exporter's descriptors \
         (missing or changed: {missing:?}; not emitted: {extra:?}; or the order differs). \
         Regenerate {} with REVEAL_BLESS=1 cargo nextest run -p reveal-exporter --test \
         schema_catalog",
        path.display()
    );
}
