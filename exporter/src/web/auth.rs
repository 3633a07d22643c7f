//! HTTP basic authentication against `basic_auth_users` (bcrypt hashes).
//!
//! bcrypt is slow on purpose (tens of milliseconds at the usual cost of 10), and Prometheus
//! sends the same credentials with every scrape, ten times a second at 100 ms: a verified
//! (user, hash, password) triple is remembered by its SHA-256, so each is checked with bcrypt
//! once. An unknown user is checked against a fixed hash, so a wrong user name takes as long
//! as a wrong password and user names cannot be probed by timing.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use base64::Engine;

/// What an `Authorization` header proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// No credentials, malformed ones, an unknown user or a wrong password: 401.
    Denied,
}

/// A bcrypt hash (cost 10) of a password nobody has, checked for unknown users.
const DECOY: &str = "$2b$10$7TvwLQI2kWfQxJ/RtbgBBeUv7w8VmFnlrx0cXGZwYV8ey7TZVK2Zu";

/// Verified credentials remembered at most; the set is emptied when full.
const CACHE_MAX: usize = 1024;

#[derive(Default)]
pub struct Verifier {
    verified: Mutex<HashSet<[u8; 32]>>,
}

/// User and password of a `Basic` header value.
pub fn credentials(header: Option<&str>) -> Option<(String, String)> {
    let h = header?.trim();
    let (scheme, rest) = h.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

fn digest(user: &str, hash: &str, password: &str) -> [u8; 32] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [user, hash, password] {
        ctx.update(&(part.len() as u64).to_le_bytes());
        ctx.update(part.as_bytes());
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

impl Verifier {
    /// `Allowed` if these exact credentials were verified before (no bcrypt), else `None`.
    pub fn check_cached(
        &self,
        users: &BTreeMap<String, String>,
        header: Option<&str>,
    ) -> Option<Verdict> {
        let (user, password) = credentials(header)?;
        let hash = users.get(&user)?;
        let key = digest(&user, hash, &password);
        self.verified
            .lock()
            .expect("not poisoned")
            .contains(&key)
            .then_some(Verdict::Allowed)
    }

    /// Checks `header` against `users`; bcrypt runs (on the caller's thread) only for
    /// credentials not verified before.
    pub fn check(&self, users: &BTreeMap<String, String>, header: Option<&str>) -> Verdict {
        let Some((user, password)) = credentials(header) else {
            return Verdict::Denied;
        };
        let (hash, known) = match users.get(&user) {
            Some(h) => (h.as_str(), true),
            None => (DECOY, false),
        };
        let key = digest(&user, hash, &password);
        if known && self.verified.lock().expect("not poisoned").contains(&key) {
            return Verdict::Allowed;
        }
        let ok = bcrypt::verify(password.as_bytes(), hash).unwrap_or(false) && known;
        if !ok {
            return Verdict::Denied;
        }
        let mut v = self.verified.lock().expect("not poisoned");
        if v.len() >= CACHE_MAX {
            v.clear();
        }
        v.insert(key);
        Verdict::Allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user: &str, password: &str) -> String {
        let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {b}")
    }

    #[test]
    fn the_right_password_passes_and_anything_else_is_denied() {
        let hash = bcrypt::hash("hunter2", 4).unwrap();
        let users = BTreeMap::from([("prometheus".to_string(), hash)]);
        let v = Verifier::default();
        let ok = basic("prometheus", "hunter2");
        assert_eq!(v.check(&users, Some(&ok)), Verdict::Allowed);
        // Remembered: the second check needs no bcrypt, and still passes.
        assert_eq!(v.check(&users, Some(&ok)), Verdict::Allowed);
        for h in [
            basic("prometheus", "hunter3"),
            basic("grafana", "hunter2"),
            basic("prometheus", ""),
            "Bearer hunter2".to_string(),
            "Basic !!!".to_string(),
            "Basic".to_string(),
        ] {
            assert_eq!(v.check(&users, Some(&h)), Verdict::Denied, "{h}");
        }
        assert_eq!(v.check(&users, None), Verdict::Denied);
    }

    #[test]
    fn a_changed_hash_is_checked_again() {
        let v = Verifier::default();
        let old = BTreeMap::from([("p".to_string(), bcrypt::hash("one", 4).unwrap())]);
        assert_eq!(v.check(&old, Some(&basic("p", "one"))), Verdict::Allowed);
        let new = BTreeMap::from([("p".to_string(), bcrypt::hash("two", 4).unwrap())]);
        assert_eq!(v.check(&new, Some(&basic("p", "one"))), Verdict::Denied);
        assert_eq!(v.check(&new, Some(&basic("p", "two"))), Verdict::Allowed);
    }

    #[test]
    fn the_decoy_is_a_valid_hash() {
        assert!(DECOY.parse::<bcrypt::HashParts>().is_ok());
        assert!(!bcrypt::verify("", DECOY).unwrap());
    }
}
