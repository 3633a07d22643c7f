//! The analyzer's checkpoint: how far it has analyzed, and the episodes still open, so a
//! restarted analyzer continues where it stopped — it analyzes the gap instead of skipping
//! it, and extends (or closes) the episodes it had open instead of opening them again.
//!
//! Written atomically: the new state goes to a temporary file in the same directory, is
//! flushed to disk, and renamed over the old one, so a crash leaves either the old or the new
//! checkpoint, never half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::core::episodes::OpenEpisode;

pub const FILE_NAME: &str = "checkpoint.json";
const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub version: u32,
    /// End of the last window analyzed (ms since the epoch); 0 before the first pass.
    pub analyzed_until_ms: i64,
    pub open_episodes: Vec<OpenEpisode>,
}

impl Default for Checkpoint {
    fn default() -> Self {
        Checkpoint {
            version: VERSION,
            analyzed_until_ms: 0,
            open_episodes: Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a checkpoint: {msg}")]
    Corrupt { path: PathBuf, msg: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Largest time a checkpoint may name, either side of the epoch (±9e15 ms, the range every
/// source accepts): the service adds to and subtracts these times, which a hand-edited
/// `i64::MIN` would overflow.
const MAX_TIME_MS: i64 = 9_000_000_000_000_000;

/// Parses checkpoint text; pure, never panics.
pub fn parse_checkpoint(text: &str) -> Result<Checkpoint, String> {
    let c: Checkpoint =
        serde_json::from_str(text).map_err(|e| reveal_schema::excerpt::library_message(&e))?;
    if c.version != VERSION {
        return Err(format!(
            "version {} (this analyzer reads {VERSION})",
            c.version
        ));
    }
    let in_range = |t: i64| (-MAX_TIME_MS..=MAX_TIME_MS).contains(&t);
    if !in_range(c.analyzed_until_ms) {
        return Err(format!(
            "analyzed_until_ms {} is outside ±{MAX_TIME_MS}",
            c.analyzed_until_ms
        ));
    }
    for e in &c.open_episodes {
        if !(in_range(e.start_ms) && in_range(e.last_flagged_ms)) {
            return Err(format!(
                "episode {:?}: times {}..{} are outside ±{MAX_TIME_MS}",
                e.id, e.start_ms, e.last_flagged_ms
            ));
        }
    }
    Ok(c)
}

/// The checkpoint file in a state directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// Creates the state directory if needed.
    pub fn open(dir: &Path) -> Result<Store, CheckpointError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        Ok(Store {
            dir: dir.to_path_buf(),
        })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// The saved checkpoint; `None` on first start. A file that does not parse is an error:
    /// the caller decides whether to start fresh (see [`Store::set_aside`]).
    pub fn load(&self) -> Result<Option<Checkpoint>, CheckpointError> {
        let path = self.path();
        match std::fs::read_to_string(&path) {
            Ok(text) => parse_checkpoint(&text)
                .map(Some)
                .map_err(|msg| CheckpointError::Corrupt { path, msg }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CheckpointError::Io { path, source: e }),
        }
    }

    /// Renames an unreadable checkpoint to `checkpoint.json.corrupt` (kept for a post-mortem).
    pub fn set_aside(&self) -> Result<PathBuf, CheckpointError> {
        let to = self.dir.join(format!("{FILE_NAME}.corrupt"));
        std::fs::rename(self.path(), &to).map_err(io(&to))?;
        Ok(to)
    }

    /// Writes the checkpoint atomically (temp file, fsync, rename, fsync of the directory).
    pub fn save(&self, c: &Checkpoint) -> Result<(), CheckpointError> {
        let tmp = self.dir.join(format!(".{FILE_NAME}.tmp"));
        let text = serde_json::to_vec_pretty(c).map_err(|e| CheckpointError::Corrupt {
            path: tmp.clone(),
            msg: e.to_string(),
        })?;
        {
            let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
            f.write_all(&text).map_err(io(&tmp))?;
            f.sync_all().map_err(io(&tmp))?;
        }
        let path = self.path();
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        // The rename is durable only once the directory entry is; failure to sync a directory
        // (some filesystems refuse) leaves the checkpoint valid, just possibly not yet durable.
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("reveal-ckpt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn sample() -> Checkpoint {
        let mut c = Checkpoint {
            analyzed_until_ms: 1_700_000_003_000,
            ..Default::default()
        };
        c.open_episodes.push(OpenEpisode {
            id: "a:1@1700000000000".into(),
            instance: "a:1".into(),
            start_ms: 1_700_000_000_000,
            last_flagged_ms: 1_700_000_003_000,
            peak_agreement: 2,
            subsystem: "cpu".into(),
            subsystems: vec!["cpu".into()],
            claims: Default::default(),
            hints: Default::default(),
            severity: "warning".into(),
            summary: "s".into(),
            description: "d".into(),
            detectors: "zscore,pca".into(),
            recurring: None,
        });
        c
    }

    #[test]
    fn round_trips_and_replaces_atomically() {
        let d = dir("rt");
        let store = Store::open(&d).unwrap();
        assert_eq!(store.load().unwrap(), None);
        let mut c = sample();
        store.save(&c).unwrap();
        assert_eq!(store.load().unwrap(), Some(c.clone()));
        c.open_episodes.clear();
        store.save(&c).unwrap();
        assert_eq!(store.load().unwrap(), Some(c));
        // Only the checkpoint remains: the temporary file was renamed away.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(FILE_NAME)]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_corrupt_checkpoint_is_reported_and_can_be_set_aside() {
        let d = dir("corrupt");
        let store = Store::open(&d).unwrap();
        std::fs::write(store.path(), "{\"version\": 1, \"analyzed_until").unwrap();
        assert!(matches!(store.load(), Err(CheckpointError::Corrupt { .. })));
        let aside = store.set_aside().unwrap();
        assert!(aside.exists());
        assert_eq!(store.load().unwrap(), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn parse_refuses_other_versions_and_garbage() {
        let mut text = serde_json::to_string(&sample()).unwrap();
        assert!(parse_checkpoint(&text).is_ok());
        text = text.replace("\"version\":1", "\"version\":9");
        assert!(parse_checkpoint(&text).unwrap_err().contains("version 9"));
        for g in ["", "null", "[]", "{}", "\u{0}", "{\"version\":1}"] {
            assert!(parse_checkpoint(g).is_err(), "{g:?}");
        }
    }

    #[test]
    fn parse_refuses_times_the_service_cannot_add_to() {
        let good = sample();
        let mut c = good.clone();
        c.analyzed_until_ms = i64::MIN;
        let e = parse_checkpoint(&serde_json::to_string(&c).unwrap()).unwrap_err();
        assert!(e.contains("analyzed_until_ms"), "{e}");
        let mut c = good.clone();
        c.open_episodes[0].last_flagged_ms = i64::MAX;
        let e = parse_checkpoint(&serde_json::to_string(&c).unwrap()).unwrap_err();
        assert!(e.contains("outside"), "{e}");
        assert_eq!(
            parse_checkpoint(&serde_json::to_string(&good).unwrap()),
            Ok(good)
        );
    }
}
