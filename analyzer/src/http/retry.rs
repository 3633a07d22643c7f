//! Retrying with exponential back-off and jitter.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use super::HttpError;

/// Exponential back-off with jitter: attempt `n` waits a random time in
/// `[d/2, d]` where `d = min(initial · 2ⁿ, max)` ("equal jitter"), so many analyzers
/// retrying the same server spread out while each still backs off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    pub fn delay(&self, attempt: u32) -> Duration {
        let cap = self
            .initial
            .saturating_mul(1u32 << attempt.min(20))
            .min(self.max);
        let half = cap / 2;
        half + half.mul_f64(unit_random())
    }
}

/// A uniform number in [0, 1) from the std hasher's per-instance random keys; jitter does not
/// need a seeded or cryptographic generator.
fn unit_random() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x5eed);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Runs `op` up to `attempts` times, sleeping by `backoff` between retryable failures.
pub async fn retry<T, F, Fut>(backoff: Backoff, attempts: u32, mut op: F) -> Result<T, HttpError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, HttpError>>,
{
    let mut attempt = 0;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if e.is_retryable() && attempt + 1 < attempts => {
                tracing::debug!(error = %e, attempt, "retrying");
                tokio::time::sleep(backoff.delay(attempt)).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_within_bounds() {
        let b = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(2),
        };
        for attempt in 0..30 {
            let cap = Duration::from_millis(100)
                .saturating_mul(1 << attempt.min(20))
                .min(b.max);
            for _ in 0..20 {
                let d = b.delay(attempt);
                assert!(
                    d >= cap / 2 && d <= cap,
                    "attempt {attempt}: {d:?} not in [{:?}, {cap:?}]",
                    cap / 2
                );
            }
        }
        // Jitter actually varies.
        let samples: std::collections::BTreeSet<_> = (0..20).map(|_| b.delay(3)).collect();
        assert!(samples.len() > 1);
    }
}
