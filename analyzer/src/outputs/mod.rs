//! Where results go: anomaly series by remote write, alerts to Alertmanager, the offline
//! report (JSON lines, Markdown), the checkpoint, and the analyzer's own `/metrics`. Imports
//! core (and the HTTP client), never ingest, the configuration or the commands.
pub mod alertmanager;
pub mod checkpoint;
pub mod metrics;
pub mod remote_write;
pub mod report;
pub mod server;
