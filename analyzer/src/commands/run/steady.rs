//! The time the analyzer stamps on what it sends (alert re-sends and their `endsAt`), kept
//! from stepping back with the wall clock.
//!
//! NTP may step a clock back (a VM resumed with a fast clock, a bad time source corrected).
//! Windows are never analyzed twice, so analysis waits until the wall clock passes the last
//! analyzed window again (`Service::run`); meanwhile open alerts must still be re-sent, each
//! with an `endsAt` ahead of Alertmanager's clock, or Alertmanager resolves them while their
//! episodes are still open. This clock carries its last reading forward by the monotonic
//! clock while the wall clock is behind it, and follows the wall clock again once it is ahead.

use std::time::{Instant, SystemTime};

#[derive(Debug, Clone, Copy)]
pub(crate) struct SteadyClock {
    wall: SystemTime,
    mono: Instant,
}

impl SteadyClock {
    pub(crate) fn new() -> Self {
        SteadyClock {
            wall: SystemTime::now(),
            mono: Instant::now(),
        }
    }

    /// The wall clock, or, while it is behind where it was, its last reading plus the
    /// monotonic time since.
    pub(crate) fn now(&mut self) -> SystemTime {
        self.at(SystemTime::now(), Instant::now())
    }

    fn at(&mut self, wall: SystemTime, mono: Instant) -> SystemTime {
        let carried = self.wall + mono.saturating_duration_since(self.mono);
        if wall >= carried {
            self.wall = wall;
            self.mono = mono;
            return wall;
        }
        carried
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn follows_the_wall_clock_forward_and_carries_on_when_it_steps_back() {
        let (t0, m0) = (
            SystemTime::UNIX_EPOCH + Duration::from_secs(1000),
            Instant::now(),
        );
        let mut c = SteadyClock { wall: t0, mono: m0 };
        let s = Duration::from_secs;
        // Forward, and forward steps: the wall clock.
        assert_eq!(c.at(t0 + s(1), m0 + s(1)), t0 + s(1));
        assert_eq!(c.at(t0 + s(100), m0 + s(2)), t0 + s(100));
        // Stepped back by 60 s: 100 s carried on by the monotonic clock.
        assert_eq!(c.at(t0 + s(41), m0 + s(3)), t0 + s(101));
        assert_eq!(c.at(t0 + s(71), m0 + s(33)), t0 + s(131));
        // The wall clock passes the carried time: followed again.
        assert_eq!(c.at(t0 + s(200), m0 + s(40)), t0 + s(200));
        assert_eq!(c.at(t0 + s(201), m0 + s(41)), t0 + s(201));
    }
}
