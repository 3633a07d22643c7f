//! Disk load for the end-to-end fault tests: a write burst and a light background, both
//! bounded in time and size, with O_DIRECT so the disk (not the page cache) sees them.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Writes 16 MiB with O_DIRECT every 50 ms (a few hundred MB/s) to one temp file, rewritten
/// in place so the disk holds 16 MiB at most, until `stop` or `limit`, whichever comes first.
pub fn write_burst(
    dir: std::path::PathBuf,
    stop: Arc<AtomicBool>,
    limit: Duration,
) -> std::thread::JoinHandle<u32> {
    std::thread::spawn(move || {
        let file = dir.join("burst");
        let start = Instant::now();
        let mut runs = 0;
        while !stop.load(Ordering::Relaxed) && start.elapsed() < limit {
            let ok = Command::new("dd")
                .args([
                    "if=/dev/zero",
                    "bs=1M",
                    "count=16",
                    "oflag=direct",
                    "conv=notrunc",
                ])
                .arg(format!("of={}", file.display()))
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            runs += u32::from(ok);
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_file(&file);
        runs
    })
}

/// 1 MiB with O_DIRECT every 2 s until `stop` (at most 5 minutes).
pub fn background_io(
    dir: std::path::PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let file = dir.join("background");
        let start = Instant::now();
        while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(300) {
            let _ = Command::new("dd")
                .args([
                    "if=/dev/zero",
                    "bs=1M",
                    "count=1",
                    "oflag=direct",
                    "conv=notrunc",
                ])
                .arg(format!("of={}", file.display()))
                .stderr(std::process::Stdio::null())
                .status();
            for _ in 0..20 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let _ = std::fs::remove_file(&file);
    })
}
