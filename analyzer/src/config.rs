//! The YAML configuration of `reveal-analyzer run` (every key and default is documented in
//! `docs/analyzer-config.md`; `analyzer/examples/analyzer.yml` is a complete example).
//!
//! Loading refuses a bad file with its path, line and reason: yaml_serde's errors carry the
//! location of syntax and type errors and unknown keys (`deny_unknown_fields` everywhere),
//! and the semantic checks below look up the line of the key they complain about with
//! [`key_lines`], a small scanner over block-style YAML.

use reveal_schema::Excerpt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::core::detect::ParamError;
use crate::core::window::WindowConfig;
use crate::http::{
    Authorization, BasicAuth, ByteSize, HttpClientConfig, Secret, TlsConfig,
    DEFAULT_BODY_SIZE_LIMIT,
};

mod lines;
pub use crate::core::duration::{parse_duration, PromDuration};
pub use crate::core::matrix::SUBSYSTEMS;
pub use crate::ingest::kinds::{MetricKind, MetricSpec};
pub use lines::key_lines;
use lines::locate;

/// Declares a config block with the Prometheus-style HTTP client keys inline (as Prometheus
/// writes them under `remote_write:` or `alertmanagers:`), plus `http_client()` to extract them.
macro_rules! with_http_client {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Deserialize, PartialEq)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$fm])* pub $f: $t,)*
            pub basic_auth: Option<BasicAuth>,
            pub bearer_token: Option<Secret>,
            pub bearer_token_file: Option<PathBuf>,
            pub authorization: Option<Authorization>,
            #[serde(default)]
            pub tls_config: TlsConfig,
            #[serde(default = "default_timeout")]
            pub timeout: PromDuration,
            /// The most of a reply that is read; the block's own default when unset.
            pub body_size_limit: Option<ByteSize>,
        }
        impl $name {
            pub fn http_client(&self) -> HttpClientConfig {
                HttpClientConfig {
                    basic_auth: self.basic_auth.clone(),
                    bearer_token: self.bearer_token.clone(),
                    bearer_token_file: self.bearer_token_file.clone(),
                    authorization: self.authorization.clone(),
                    tls_config: self.tls_config.clone(),
                    timeout: self.timeout,
                    body_size_limit: self.body_size_limit.unwrap_or(Self::BODY_SIZE_LIMIT),
                    ..HttpClientConfig::default()
                }
            }
        }
    };
}

fn default_timeout() -> PromDuration {
    PromDuration(Duration::from_secs(10))
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address of the analyzer's own `/metrics`, `/-/healthy`, `/-/ready`.
    #[serde(default = "default_listen")]
    pub listen_address: SocketAddr,
    /// Directory of the checkpoint (last analyzed time, open episodes).
    #[serde(default = "default_state_dir")]
    pub state_dir: PathBuf,
    pub source: SourceConfig,
    /// The metric set: what to read and how each channel is treated.
    pub metrics: Vec<MetricSpec>,
    #[serde(default)]
    pub analysis: AnalysisConfig,
    #[serde(default)]
    pub outputs: OutputsConfig,
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 19191))
}
fn default_state_dir() -> PathBuf {
    PathBuf::from("reveal-analyzer-state")
}

/// Exactly one of the two sources.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    pub prometheus: Option<PrometheusSource>,
    pub scrape: Option<ScrapeSource>,
}

with_http_client! {
    /// Range queries against Prometheus or any engine with its HTTP API.
    pub struct PrometheusSource {
        pub url: String,
        /// Label that tells hosts apart in query results.
        #[serde(default = "default_host_label")]
        pub host_label: String,
        /// This analyzer's share of the hosts, `i/k`, when k analyzers split them
        /// (`reveal-analyzer run --shard` overrides it); every host when unset.
        #[serde(default)]
        pub shard: Option<crate::ingest::shard::Shard>,
    }
}

impl PrometheusSource {
    /// Range-query answers: as large as a Prometheus with default limits sends.
    pub const BODY_SIZE_LIMIT: ByteSize = DEFAULT_BODY_SIZE_LIMIT;
}

fn default_host_label() -> String {
    "instance".to_string()
}

with_http_client! {
    /// Direct scrape of exporters into memory, for a single host without Prometheus.
    pub struct ScrapeSource {
        /// `/metrics` URLs; each is one host, named by its `host:port`.
        pub targets: Vec<String>,
        #[serde(default = "default_step")]
        pub interval: PromDuration,
    }
}

impl ScrapeSource {
    /// An exporter's page: a few megabytes on the largest hosts.
    pub const BODY_SIZE_LIMIT: ByteSize = ByteSize::mib(64);
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AnalysisConfig {
    /// Sample spacing the series are resampled to.
    pub step: PromDuration,
    /// Window length and stride between window starts.
    pub window: PromDuration,
    pub stride: PromDuration,
    /// How far behind real time the newest analyzed window ends, so late scrapes land first.
    pub delay: PromDuration,
    /// Trailing history the detectors are fitted on.
    pub baseline: PromDuration,
    /// How often the baseline is refitted.
    pub refit_every: PromDuration,
    /// History needed before the first fit; until then the analyzer reports warm-up.
    pub warmup: PromDuration,
    /// Seed of the randomized detectors.
    pub seed: u64,
    /// How long a host may have no series before it is forgotten: its baseline and model
    /// freed, as for a node taken out of the cluster. Its open episode ends sooner, after
    /// `episodes.close_after` strides without series. A host that comes back later warms up
    /// again like a new one.
    pub forget_host_after: PromDuration,
    /// When flagged windows become an episode (and an alert).
    pub episodes: EpisodeConfig,
    /// Parameters of the three detectors: absent or `default` for the defaults
    /// (docs/detection.md), `literal` for the paper's configuration, or a map of parameters.
    #[serde(deserialize_with = "detectors_spec")]
    pub detectors: Option<crate::core::detect::DetectorsConfig>,
    /// Device families (docs/detection.md, "Families and siblings").
    pub families: FamiliesConfig,
}

/// `analysis.families`: which per-device channels are folded into families.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FamiliesConfig {
    /// Families with fewer devices keep one channel per device; 0 folds none.
    pub min_devices: usize,
    /// Labels that name a device, added to the built-in ones (`cpu`, `gpu`, `device`, `port`,
    /// `node`, `irq`, …): a metric whose devices are named by another label (`disk`, `hca`).
    pub device_labels: Vec<String>,
}

impl Default for FamiliesConfig {
    fn default() -> Self {
        FamiliesConfig {
            min_devices: crate::core::families::DEFAULT_MIN_DEVICES,
            device_labels: Vec::new(),
        }
    }
}

impl FamiliesConfig {
    pub fn params(&self) -> crate::core::families::FamilyParams {
        let mut p = crate::core::families::FamilyParams {
            min_devices: if self.min_devices == 0 {
                usize::MAX
            } else {
                self.min_devices
            },
            ..Default::default()
        };
        for l in &self.device_labels {
            if !p.device_labels.contains(l) {
                p.device_labels.push(l.clone());
            }
        }
        p
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EpisodeConfig {
    /// Detectors (of three) that must flag a window for it to count toward an episode.
    pub min_agreement: u32,
    /// Consecutive counted windows that open an episode. The default, 4, is one more than the
    /// windows a single sample is seen in (a 3 s window every 1 s): one odd scrape, a 100 ms
    /// write-back caught in one sample, never opens an alert on its own.
    pub open_after: u32,
    /// Consecutive counted windows that open an episode when they are not all clear (see
    /// `clear`): a marginal deviation must hold this long, longer than the host's ordinary
    /// transients (a write-back, a burst of reads, I/O wait), before it becomes an alert.
    /// The default, 8, is a deviation that held about 6 s (its alert comes about 8 s after it
    /// began). Below `open_after` it is `open_after`.
    pub confirm_after: u32,
    /// Score / threshold that one agreeing detector must reach in every one of `open_after`
    /// counted windows for the episode to open that soon (3, the magnitude at which severity
    /// counts a detector as strong: `core::episodes::tracker::STRONG`). A critical window
    /// (every detector agrees, or two at `STRONG`) is clear too.
    pub clear: f64,
    /// Consecutive uncounted windows that close it.
    pub close_after: u32,
}

impl EpisodeConfig {
    /// Quiet windows that close an episode by default
    /// ([`crate::core::episodes::DEFAULT_CLOSE_AFTER`]).
    pub const DEFAULT_CLOSE_AFTER: u32 = crate::core::episodes::DEFAULT_CLOSE_AFTER;
}

impl Default for EpisodeConfig {
    fn default() -> Self {
        EpisodeConfig {
            min_agreement: 2,
            open_after: 4,
            confirm_after: 8,
            clear: crate::core::episodes::tracker::STRONG,
            close_after: Self::DEFAULT_CLOSE_AFTER,
        }
    }
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            step: default_step(),
            window: PromDuration(Duration::from_secs(3)),
            stride: PromDuration(Duration::from_secs(1)),
            delay: PromDuration(Duration::from_millis(200)),
            baseline: PromDuration(Duration::from_secs(30 * 60)),
            refit_every: PromDuration(Duration::from_secs(5 * 60)),
            warmup: PromDuration(Duration::from_secs(5 * 60)),
            seed: 42,
            forget_host_after: PromDuration(Duration::from_secs(10 * 60)),
            episodes: EpisodeConfig::default(),
            detectors: None,
            families: FamiliesConfig::default(),
        }
    }
}

impl AnalysisConfig {
    /// The window geometry these settings ask for, with the default completeness rule.
    pub fn window_config(&self) -> WindowConfig {
        let ms = |d: PromDuration| i64::try_from(d.0.as_millis()).unwrap_or(i64::MAX);
        WindowConfig {
            step_ms: ms(self.step),
            window_ms: ms(self.window),
            stride_ms: ms(self.stride),
            ..WindowConfig::default()
        }
    }
}

/// `analysis.detectors`: a preset name or a map of parameters.
fn detectors_spec<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<crate::core::detect::DetectorsConfig>, D::Error> {
    use serde::de::Error;
    let v = yaml_serde::Value::deserialize(d)?;
    match v {
        yaml_serde::Value::Null => Ok(None),
        yaml_serde::Value::String(name) => match name.as_str() {
            "default" => Ok(Some(crate::core::detect::DetectorsConfig::default())),
            "literal" => Ok(Some(crate::core::detect::DetectorsConfig::literal())),
            other => Err(D::Error::custom(format!(
                "unknown detector preset `{other}` (expected `default`, `literal` or a map of parameters)"
            ))),
        },
        other => crate::core::detect::DetectorsConfig::deserialize(other)
            .map(Some)
            .map_err(D::Error::custom),
    }
}

/// Most samples one window may hold per channel (`analysis.window` / `analysis.step`): the
/// default is 30, a 10-minute window at 100 ms is 6,000. Beyond this a window's samples of
/// hundreds of channels no longer fit in memory comfortably.
pub const MAX_WINDOW_STEPS: u32 = 100_000;

/// Most windows a baseline may hold (`analysis.baseline` / `analysis.stride`): the default is
/// 1,800; a day at a 5 s stride is 17,280. Each window keeps a row of several hundred features
/// (about 6 KB), and every refit scores all of them several times over.
pub const MAX_BASELINE_WINDOWS: u32 = 50_000;

fn default_step() -> PromDuration {
    PromDuration(Duration::from_millis(100))
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OutputsConfig {
    pub remote_write: Option<RemoteWriteConfig>,
    pub alertmanager: Option<AlertmanagerConfig>,
    /// Directory for JSON-lines reports of flagged windows and episodes.
    pub reports_dir: Option<PathBuf>,
}

with_http_client! {
    pub struct RemoteWriteConfig {
        /// e.g. `http://prometheus:9090/api/v1/write`.
        pub url: String,
    }
}

impl RemoteWriteConfig {
    /// Replies are a status and at most an error message.
    pub const BODY_SIZE_LIMIT: ByteSize = ByteSize::mib(16);
}

with_http_client! {
    pub struct AlertmanagerConfig {
        /// Alertmanager base URLs (`http://am:9093`); every alert goes to each.
        pub urls: Vec<String>,
        /// Open alerts are re-sent this often; `endsAt` is four intervals ahead, so an
        /// alert whose analyzer died resolves on its own.
        #[serde(default = "default_resend")]
        pub resend_interval: PromDuration,
        /// Alerts waiting for an unreachable Alertmanager; beyond this the oldest are dropped
        /// (and counted).
        #[serde(default = "default_queue")]
        pub queue_capacity: usize,
    }
}

impl AlertmanagerConfig {
    /// Replies are a status and at most an error message.
    pub const BODY_SIZE_LIMIT: ByteSize = ByteSize::mib(16);
}

fn default_resend() -> PromDuration {
    PromDuration(Duration::from_secs(10))
}
fn default_queue() -> usize {
    10_000
}

/// A refused configuration: where and why.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {msg}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub msg: String,
}

impl Config {
    /// The labels the metric set's entries declare as naming a device (`device_label`).
    pub fn device_labels(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for l in self.metrics.iter().filter_map(|m| m.device_label.as_ref()) {
            if !out.contains(l) {
                out.push(l.clone());
            }
        }
        out
    }

    /// Reads, parses and checks a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: None,
            msg: e.to_string(),
        })?;
        Config::parse(&text, path)
    }

    /// Parses and checks config text; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        if let Some(line) = reveal_schema::nesting::too_deep(text) {
            return Err(ConfigError {
                file: path.to_path_buf(),
                line: Some(line),
                msg: reveal_schema::nesting::message(line),
            });
        }
        let config: Config = yaml_serde::from_str(text).map_err(|e| {
            let line = e.location().map(|l| l.line());
            let mut msg = reveal_schema::excerpt::library_message(&e);
            // yaml_serde appends " at line L column C"; the line is already in front.
            if let Some(i) = msg.find(" at line ") {
                msg.truncate(i);
            }
            ConfigError {
                file: path.to_path_buf(),
                line,
                msg,
            }
        })?;
        config.check().map_err(|(key, msg)| ConfigError {
            file: path.to_path_buf(),
            line: locate(&key_lines(text), &key),
            msg: format!("{key}: {msg}"),
        })?;
        Ok(config)
    }

    /// Semantic checks; the error names the key path (`analysis.window`, `metrics.2.subsystem`).
    /// Refuses what the analyzer cannot run: each refusal names the key and says why.
    pub fn check(&self) -> Result<(), (String, String)> {
        let err = |k: &str, m: String| Err((k.to_string(), m));
        match (&self.source.prometheus, &self.source.scrape) {
            (Some(p), None) => {
                check_url(&p.url).or_else(|m| err("source.prometheus.url", m))?;
                if !is_label_name(&p.host_label) {
                    return err(
                        "source.prometheus.host_label",
                        format!("{:?} is not a label name", p.host_label),
                    );
                }
                check_http(&p.http_client(), "source.prometheus")?;
            }
            (None, Some(s)) => {
                if s.targets.is_empty() {
                    return err("source.scrape.targets", "needs at least one target".into());
                }
                for (i, t) in s.targets.iter().enumerate() {
                    check_url(t).or_else(|m| err(&format!("source.scrape.targets.{i}"), m))?;
                }
                if s.interval.0.is_zero() {
                    return err("source.scrape.interval", "must be positive".into());
                }
                check_http(&s.http_client(), "source.scrape")?;
            }
            _ => return err("source", "set exactly one of prometheus and scrape".into()),
        }
        if self.metrics.is_empty() {
            return err("metrics", "the metric set is empty".into());
        }
        for (i, m) in self.metrics.iter().enumerate() {
            if m.expr.trim().is_empty() {
                return err(&format!("metrics.{i}.expr"), "empty expression".into());
            }
            if !SUBSYSTEMS.contains(&m.subsystem.as_str()) {
                return err(
                    &format!("metrics.{i}.subsystem"),
                    format!(
                        "{:?} is not one of {}",
                        Excerpt(&m.subsystem),
                        SUBSYSTEMS.join(", ")
                    ),
                );
            }
        }
        let a = &self.analysis;
        if a.step.0.is_zero() {
            return err("analysis.step", "must be positive".into());
        }
        if a.stride.0.is_zero() {
            return err("analysis.stride", "must be positive".into());
        }
        if a.window.0 < a.step.0 * 3 {
            return err(
                "analysis.window",
                format!("{} holds fewer than 3 steps of {}", a.window, a.step),
            );
        }
        if a.window.0 > a.step.0 * MAX_WINDOW_STEPS {
            return err(
                "analysis.window",
                format!(
                    "{} holds more than {MAX_WINDOW_STEPS} steps of {}: every window's samples of every channel are held in memory at once",
                    a.window, a.step
                ),
            );
        }
        if a.window.0 < a.stride.0 {
            return err(
                "analysis.window",
                format!("window {} is shorter than stride {}: data between windows would never be analyzed", a.window, a.stride),
            );
        }
        if let Err(e) = a.window_config().check() {
            // The engine lays windows with exactly this geometry and analyzes nothing when it
            // is refused, so what it refuses must not pass here.
            let ms = |d: PromDuration| d.0.as_millis();
            let off = |d: PromDuration| ms(d).checked_rem(ms(a.step)) != Some(0);
            let whole =
                |d: PromDuration| format!("{d} is not a whole number of steps of {}", a.step);
            return if off(a.window) {
                err("analysis.window", whole(a.window))
            } else if off(a.stride) {
                err("analysis.stride", whole(a.stride))
            } else {
                err("analysis", e.to_string())
            };
        }
        if a.baseline.0 < a.window.0 {
            return err(
                "analysis.baseline",
                format!("{} is shorter than one window", a.baseline),
            );
        }
        if a.baseline.0 > a.stride.0 * MAX_BASELINE_WINDOWS {
            return err(
                "analysis.baseline",
                format!(
                    "{} holds more than {MAX_BASELINE_WINDOWS} windows {} apart: the baseline keeps every window's features in memory and refits on all of them; lengthen the stride or shorten the baseline",
                    a.baseline, a.stride
                ),
            );
        }
        if a.warmup.0 > a.baseline.0 {
            return err(
                "analysis.warmup",
                format!("{} is longer than the baseline {}", a.warmup, a.baseline),
            );
        }
        if a.warmup.0 < a.window.0 {
            return err(
                "analysis.warmup",
                format!("{} is shorter than one window", a.warmup),
            );
        }
        let e = a.episodes;
        if !(1..=3).contains(&e.min_agreement) {
            return err(
                "analysis.episodes.min_agreement",
                format!("{} is not between 1 and 3", e.min_agreement),
            );
        }
        if e.open_after == 0 {
            return err("analysis.episodes.open_after", "must be at least 1".into());
        }
        if !(e.clear.is_finite() && e.clear >= 1.0) {
            return err(
                "analysis.episodes.clear",
                format!("{} is not a number of at least 1", e.clear),
            );
        }
        if e.close_after == 0 {
            return err("analysis.episodes.close_after", "must be at least 1".into());
        }
        if a.refit_every.0.is_zero() {
            return err("analysis.refit_every", "must be positive".into());
        }
        if a.forget_host_after.0 < a.stride.0 * e.close_after {
            return err(
                "analysis.forget_host_after",
                format!(
                    "{} is shorter than the {} strides that end a silent host's episode \
                     (episodes.close_after)",
                    a.forget_host_after, e.close_after
                ),
            );
        }
        if let Some(d) = &a.detectors {
            // Checked at every fit too, but there a refused detector is only left out with a
            // log line; here the whole file is refused before anything runs.
            let checks = [
                ("zscore", d.zscore.check()),
                ("pca", d.pca.check()),
                ("iforest", d.iforest.check()),
            ];
            for (detector, check) in checks {
                if let Err(e) = check {
                    let (name, msg) = match e {
                        ParamError::OutOfRange { name, range, value } => {
                            (name, format!("must be in {range}, got {value}"))
                        }
                        ParamError::Unsupported { name, reason } => (name, reason.to_string()),
                    };
                    return err(&format!("analysis.detectors.{detector}.{name}"), msg);
                }
            }
        }
        if let Some(rw) = &self.outputs.remote_write {
            check_url(&rw.url).or_else(|m| err("outputs.remote_write.url", m))?;
            check_http(&rw.http_client(), "outputs.remote_write")?;
        }
        if let Some(am) = &self.outputs.alertmanager {
            if am.urls.is_empty() {
                return err("outputs.alertmanager.urls", "needs at least one URL".into());
            }
            for (i, u) in am.urls.iter().enumerate() {
                check_url(u).or_else(|m| err(&format!("outputs.alertmanager.urls.{i}"), m))?;
            }
            if am.resend_interval.0.is_zero() {
                return err(
                    "outputs.alertmanager.resend_interval",
                    "must be positive".into(),
                );
            }
            if am.queue_capacity == 0 {
                return err(
                    "outputs.alertmanager.queue_capacity",
                    "must be positive".into(),
                );
            }
            check_http(&am.http_client(), "outputs.alertmanager")?;
        }
        Ok(())
    }
}

fn check_http(c: &HttpClientConfig, prefix: &str) -> Result<(), (String, String)> {
    c.check().map_err(|(k, m)| {
        let key = match k {
            "password_file" => format!("{prefix}.basic_auth.password_file"),
            "credentials_file" | "type" => format!("{prefix}.authorization.{k}"),
            _ => format!("{prefix}.{k}"),
        };
        (key, m)
    })
}

fn check_url(u: &str) -> Result<(), String> {
    let url =
        reqwest::Url::parse(u).map_err(|e| format!("{u:?} is not a URL: {e}", u = Excerpt(u)))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "{u:?} is not an http(s) URL with a host",
            u = Excerpt(u)
        ));
    }
    Ok(())
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

#[cfg(test)]
mod tests;
