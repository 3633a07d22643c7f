//! JSON-lines reports of the online service: `windows.jsonl` gets one object per flagged
//! window, `episodes.jsonl` one per closed episode. Appended, so a restart keeps history.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::core::episodes::OpenEpisode;
use crate::online::WindowScore;

pub struct Reports {
    windows: File,
    episodes: File,
}

fn append(dir: &Path, name: &str) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))
}

impl Reports {
    pub fn open(dir: &Path) -> std::io::Result<Reports> {
        std::fs::create_dir_all(dir)?;
        Ok(Reports {
            windows: append(dir, "windows.jsonl")?,
            episodes: append(dir, "episodes.jsonl")?,
        })
    }

    /// Records a flagged window (unflagged ones are the anomaly series' business).
    pub fn window(&mut self, w: &WindowScore) {
        if w.agreement > 0 {
            write_line(&mut self.windows, w);
        }
    }

    pub fn episode(&mut self, e: &OpenEpisode) {
        write_line(&mut self.episodes, e);
    }
}

fn write_line<T: serde::Serialize>(f: &mut File, v: &T) {
    // A report that cannot be written (disk full) must not stop the analysis; it is logged.
    let res = serde_json::to_vec(v)
        .map_err(std::io::Error::other)
        .and_then(|mut line| {
            line.push(b'\n');
            f.write_all(&line)
        });
    if let Err(e) = res {
        tracing::warn!(error = %e, "report line not written");
    }
}
