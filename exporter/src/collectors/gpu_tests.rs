//! The gpu collector with recorded samples: replayed, asked for the driver's totals, its slow
//! fields refreshed, and on this host (no driver: unsupported).

use super::*;

struct Replay(Vec<GpuSample>);

impl GpuSource for Replay {
    fn samples(&mut self, _: Needs) -> Result<Vec<GpuSample>, CollectError> {
        Ok(self.0.clone())
    }
}

/// The samples of a recorded fixture, `exporter/tests/fixtures/nvml/NAME`.
fn recorded(name: &str) -> Vec<GpuSample> {
    let p = format!("{}/tests/fixtures/nvml/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn replayed_samples_go_through_the_collector() {
    let gpus = recorded("t4-1gpu.json");
    let mut c = GpuCollector::with_source(Box::new(Replay(gpus.clone())));
    let mut out = Scrape::new();
    c.update(&mut out).unwrap();
    let mut direct = Scrape::new();
    gpu_map::push_sample(&gpus[0], &mut direct);
    assert!(out.sample_count() > 0);
    assert_eq!(out.sample_count(), direct.sample_count());
}

/// A source that has the counters per location and link and answers the totals when
/// asked for them, as the driver does; it keeps what it was asked.
struct Driver {
    gpus: Vec<GpuSample>,
    asked: Vec<Needs>,
}

impl GpuSource for Driver {
    fn samples(&mut self, needs: Needs) -> Result<Vec<GpuSample>, CollectError> {
        self.asked.push(needs);
        Ok(self.gpus.iter().map(|g| answer(g, needs)).collect())
    }
}

fn answer(g: &GpuSample, needs: Needs) -> GpuSample {
    let mut g = g.clone();
    if needs.ecc != Detail::Each {
        let mut totals: Vec<gpu_map::EccCount> = Vec::new();
        for e in &g.ecc {
            match totals
                .iter_mut()
                .find(|t| t.error_type == e.error_type && t.counter == e.counter)
            {
                Some(t) => t.count += e.count,
                None => totals.push(gpu_map::EccCount {
                    location: gpu_map::TOTAL.into(),
                    ..e.clone()
                }),
            }
        }
        g.ecc = if needs.ecc == Detail::Totals {
            totals
        } else {
            vec![]
        };
    }
    if needs.nvlink != Detail::Each {
        let mut totals: Vec<(String, u64)> = Vec::new();
        for (c, n) in g.nvlinks.iter().flat_map(|l| &l.errors) {
            match totals.iter_mut().find(|t| t.0 == *c) {
                Some(t) => t.1 += n,
                None => totals.push((c.clone(), *n)),
            }
        }
        g.nvlinks.clear();
        if needs.nvlink == Detail::Totals {
            g.nvlink_error_totals = totals;
        }
    }
    g
}

#[test]
fn a_page_that_sums_the_counters_asks_for_the_totals_and_serves_the_same_sums() {
    use crate::collectors::test_util::samples;
    use crate::scrape::Page;
    use std::sync::Arc;
    let gpus = recorded("a100-sxm4-2gpu.json");
    assert!(gpus
        .iter()
        .all(|g| !g.ecc.is_empty() && !g.nvlinks.is_empty()));
    let at = |desc: &crate::scrape::Desc, label: &str| {
        desc.labels.iter().position(|l| *l == label).unwrap()
    };
    // The 100 ms page's: ECC summed over the locations, NVLink errors over the links,
    // the links' state not served.
    let summed = Arc::new(Page {
        skip: vec![&gpu_map::NVLINK_ACTIVE],
        sums: vec![
            (&gpu_map::ECC, vec![at(&gpu_map::ECC, "location")]),
            (
                &gpu_map::NVLINK_ERRORS,
                vec![at(&gpu_map::NVLINK_ERRORS, "link")],
            ),
        ],
        ..Page::default()
    });
    let scrape = |source: Box<dyn GpuSource>, page: &Arc<Page>| {
        let mut c = GpuCollector::with_source(source);
        let mut out = Scrape::new();
        out.set_page(page.clone());
        c.update(&mut out).unwrap();
        let mut s = samples(&out);
        s.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        s
    };
    let mut driver = Driver {
        gpus: gpus.clone(),
        asked: vec![],
    };
    let mut out = Scrape::new();
    out.set_page(summed.clone());
    let needs = Needs::of(&out);
    assert_eq!(
        needs,
        Needs {
            ecc: Detail::Totals,
            nvlink: Detail::Totals
        }
    );
    driver.samples(needs).unwrap();
    assert_eq!(driver.asked, [needs]);
    let from_totals = scrape(Box::new(driver), &summed);
    let one_by_one = scrape(Box::new(Replay(gpus.clone())), &summed);
    assert!(from_totals
        .iter()
        .any(|s| s.0 == gpu_map::NVLINK_ERRORS.name));
    assert!(from_totals.iter().any(|s| s.0 == gpu_map::ECC.name));
    assert_eq!(from_totals, one_by_one);
    // A page that serves them one by one, or the links' state, asks for each; one that
    // serves none asks for none.
    let mut out = Scrape::new();
    assert_eq!(Needs::of(&out), Needs::default());
    out.set_page(Arc::new(Page {
        skip: vec![&gpu_map::ECC, &gpu_map::NVLINK_ERRORS],
        ..Page::default()
    }));
    assert_eq!(
        Needs::of(&out),
        Needs {
            ecc: Detail::None,
            nvlink: Detail::Each
        }
    );
}

#[test]
fn slow_fields_are_read_once_per_board_and_energy_once_per_interval() {
    let t0 = Instant::now();
    let (mut max_reads, mut energy_reads) = (0, 0);
    let mut slow = Slow::default();
    let at = |slow: &mut Slow, uuid: &str, ms: u64, max_reads: &mut u32, e: &mut u32| {
        slow.refresh(
            uuid,
            t0 + Duration::from_millis(ms),
            || {
                *max_reads += 1;
                (Some(1980), Some(3201))
            },
            || {
                *e += 1;
                Some(1000 + ms)
            },
        );
    };
    // Scrapes every 100 ms for 2.5 s: max clocks once, energy at 0, 1000 and 2000 ms.
    for ms in (0..=2500).step_by(100) {
        at(&mut slow, "GPU-a", ms, &mut max_reads, &mut energy_reads);
    }
    assert_eq!((max_reads, energy_reads), (1, 3));
    assert_eq!(slow.max_clocks, (Some(1980), Some(3201)));
    assert_eq!(
        slow.energy,
        Some(3000),
        "the last read is served between reads"
    );
    // Another board at the index: its max clocks and energy are read at once.
    at(&mut slow, "GPU-b", 2600, &mut max_reads, &mut energy_reads);
    assert_eq!((max_reads, energy_reads), (2, 4));
    assert_eq!(slow.energy, Some(3600));
}

/// Without the driver (this host has none) the collector is built, and reports
/// unsupported with the reason; with a driver it must read at least one GPU.
#[test]
fn nvml_missing_is_unsupported_not_fatal() {
    let mut c = GpuCollector::new(&Settings::default());
    let mut out = Scrape::new();
    match c.update(&mut out) {
        Err(e) => {
            assert!(e.is_unsupported(), "{e}");
            eprintln!("gpu collector unsupported here, as expected without a driver: {e}");
        }
        Ok(()) => assert!(out.sample_count() > 0, "NVML loaded but no GPU series"),
    }
}
