//! Two network namespaces joined by a veth pair, packet loss injected with nftables, and a
//! steady TCP stream between them: the network faults of the end-to-end tests, on a kernel
//! without `netem` and without touching the host's own interfaces.
//!
//! The test thread *enters* a namespace ([`NetNs::enter`], `setns(2)` on the calling thread)
//! instead of prefixing every command with `ip netns exec`: a socket belongs to the namespace
//! of the thread that creates it, and a child process starts in the namespace of the thread
//! that spawns it. So inside the guard, [`crate::Proc`], [`crate::prometheus`],
//! [`crate::alertmanager`], [`crate::recorder`] and the HTTP helpers all work unchanged on
//! that namespace's own `127.0.0.1`, and the processes they start read that namespace's
//! `/proc/net/{dev,snmp,netstat}`, which are per network namespace.
//!
//! Everything is removed on drop, also when a test panics: deleting a namespace destroys its
//! veth end (and with it the peer) and its nftables tables.

use crate::in_ci;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Whether this machine can run the namespace tests: root, `ip` (iproute2) and `nft`
/// (nftables). When it cannot, says why loudly and returns `false`, or fails under CI.
pub fn available() -> bool {
    if !crate::is_root() {
        let msg = "network namespace tests need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)";
        if in_ci() {
            panic!("{msg}");
        }
        eprintln!("\n!!!!! SKIPPED: {msg} !!!!!\n");
        return false;
    }
    crate::require_tool("ip", "iproute2").is_some()
        && crate::require_tool("nft", "nftables").is_some()
}

/// Runs a command to completion; panics with its output if it fails.
fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A named network namespace (`ip netns add`), deleted on drop.
#[derive(Debug)]
pub struct NetNs {
    name: String,
}

impl NetNs {
    /// Creates `name`, with its loopback up. The name must be unique on the host (use the
    /// process id in it).
    pub fn new(name: &str) -> NetNs {
        run(Command::new("ip").args(["netns", "add", name]));
        let ns = NetNs {
            name: name.to_string(),
        };
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n <ns> <args>`.
    pub fn ip(&self, args: &[&str]) -> String {
        run(Command::new("ip").arg("-n").arg(&self.name).args(args))
    }

    /// Runs `program args` inside the namespace (`ip netns exec`) and returns its stdout;
    /// panics if it fails.
    pub fn exec(&self, program: &str, args: &[&str]) -> String {
        run(Command::new("ip")
            .args(["netns", "exec", &self.name, program])
            .args(args))
    }

    fn file(&self) -> File {
        let path = format!("/run/netns/{}", self.name);
        File::open(&path).unwrap_or_else(|e| panic!("opening {path}: {e}"))
    }

    /// Moves the calling thread into the namespace until the guard drops (then it goes back
    /// to the namespace it was in). Sockets and child processes created by this thread
    /// meanwhile belong to the namespace, and keep belonging to it after the guard drops.
    pub fn enter(&self) -> Entered {
        let here =
            File::open("/proc/thread-self/ns/net").expect("opening /proc/thread-self/ns/net");
        setns(&self.file());
        Entered { back: here }
    }

    /// Runs `f` on a fresh thread inside the namespace and returns its result: how a test
    /// binds a listener or connects a socket in a namespace it is not in.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let fd = self.file();
        std::thread::scope(|s| {
            s.spawn(move || {
                setns(&fd);
                f()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // Best effort, and never a panic inside a panic: the name goes away now, the
        // namespace itself once the last socket or process in it is gone.
        match Command::new("ip")
            .args(["netns", "del", &self.name])
            .output()
        {
            Ok(o) if o.status.success() => {}
            res => eprintln!("ip netns del {}: {res:?}", self.name),
        }
    }
}

fn setns(ns: &File) {
    rustix::thread::move_into_link_name_space(
        ns.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .unwrap_or_else(|e| panic!("setns(CLONE_NEWNET): {e}"));
}

/// The calling thread's stay in a namespace; dropping it moves the thread back.
#[must_use = "the thread leaves the namespace when the guard drops"]
#[derive(Debug)]
pub struct Entered {
    back: File,
}

impl Drop for Entered {
    fn drop(&mut self) {
        if let Err(e) = rustix::thread::move_into_link_name_space(
            self.back.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        ) {
            eprintln!("setns back to the original network namespace: {e}");
        }
    }
}

/// Namespaces `a` and `b` joined by a veth pair: `a` holds `a_addr`/30 on `a_dev`, `b`
/// holds `b_addr`/30 on `b_dev`. Fields drop in order, so `b` (and the peer) go after `a`.
#[derive(Debug)]
pub struct Pair {
    pub a: NetNs,
    pub b: NetNs,
    pub a_dev: String,
    pub b_dev: String,
    pub a_addr: Ipv4Addr,
    pub b_addr: Ipv4Addr,
}

impl Pair {
    /// Creates `<prefix>-<pid>-a` and `-b`. The devices are created directly inside the
    /// namespaces, so their short names cannot clash with the host's.
    pub fn new(prefix: &str) -> Pair {
        let pid = std::process::id();
        let a = NetNs::new(&format!("{prefix}-{pid}-a"));
        let b = NetNs::new(&format!("{prefix}-{pid}-b"));
        let (a_dev, b_dev) = ("reveal-a".to_string(), "reveal-b".to_string());
        // 10.213.0.0/30: private, and only ever seen inside these two namespaces.
        let (a_addr, b_addr) = (Ipv4Addr::new(10, 213, 0, 1), Ipv4Addr::new(10, 213, 0, 2));
        run(Command::new("ip").args([
            "link",
            "add",
            &a_dev,
            "netns",
            a.name(),
            "type",
            "veth",
            "peer",
            "name",
            &b_dev,
            "netns",
            b.name(),
        ]));
        a.ip(&["addr", "add", &format!("{a_addr}/30"), "dev", &a_dev]);
        b.ip(&["addr", "add", &format!("{b_addr}/30"), "dev", &b_dev]);
        a.ip(&["link", "set", &a_dev, "up"]);
        b.ip(&["link", "set", &b_dev, "up"]);
        Pair {
            a,
            b,
            a_dev,
            b_dev,
            a_addr,
            b_addr,
        }
    }
}

/// An nftables table in a namespace that drops a random `per_mille` of the IPv4 packets
/// from `source` arriving there; the table is deleted by [`Loss::stop`] or on drop.
#[derive(Debug)]
pub struct Loss<'a> {
    ns: &'a NetNs,
    active: bool,
}

/// The table's name: one per namespace, and these namespaces are the test's own.
const TABLE: &str = "reveal_loss";

impl<'a> Loss<'a> {
    pub fn start(ns: &'a NetNs, source: Ipv4Addr, per_mille: u32) -> Loss<'a> {
        assert!(per_mille <= 1000, "{per_mille} per mille");
        ns.exec("nft", &["add", "table", "inet", TABLE]);
        ns.exec(
            "nft",
            &[
                "add",
                "chain",
                "inet",
                TABLE,
                "input",
                "{ type filter hook input priority 0; policy accept; }",
            ],
        );
        // `numgen random mod 1000` draws uniformly in 0..1000 per packet.
        ns.exec(
            "nft",
            &[
                "add",
                "rule",
                "inet",
                TABLE,
                "input",
                "ip",
                "saddr",
                &source.to_string(),
                "numgen",
                "random",
                "mod",
                "1000",
                "<",
                &per_mille.to_string(),
                "counter",
                "drop",
            ],
        );
        Loss { ns, active: true }
    }

    /// Packets dropped so far, from the rule's counter.
    pub fn dropped(&self) -> Option<u64> {
        let listing = self.ns.exec("nft", &["list", "table", "inet", TABLE]);
        let after = listing.split("counter packets ").nth(1)?;
        after.split_whitespace().next()?.parse().ok()
    }

    /// Deletes the table: no more loss.
    pub fn stop(mut self) {
        self.ns.exec("nft", &["delete", "table", "inet", TABLE]);
        self.active = false;
    }
}

impl Drop for Loss<'_> {
    fn drop(&mut self) {
        if self.active {
            let _ = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    self.ns.name(),
                    "nft",
                    "delete",
                    "table",
                    "inet",
                    TABLE,
                ])
                .output();
        }
    }
}

/// A steady TCP stream from namespace `a` to a discarding server in namespace `b`:
/// `chunk` bytes every `period`, until [`Stream::stop`] or `limit`, whichever comes first.
pub struct Stream {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Stream {
    pub fn start(pair: &Pair, chunk: usize, period: Duration, limit: Duration) -> Stream {
        let deadline = Instant::now() + limit;
        let b_addr = pair.b_addr;
        let listener = pair
            .b
            .run(move || TcpListener::bind(SocketAddr::from((b_addr, 0))))
            .expect("binding the stream's server in namespace b");
        let server_addr = listener.local_addr().unwrap();
        let client = pair
            .a
            .run(move || TcpStream::connect_timeout(&server_addr, Duration::from_secs(5)))
            .expect("connecting from namespace a to namespace b");
        let (server, _) = listener.accept().expect("accepting the stream");
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let done = {
            let stop = stop.clone();
            move || stop.load(Ordering::Relaxed) || Instant::now() >= deadline
        };
        let reader = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut server = server;
                // A short timeout so the thread notices `stop` while the sender is stalled.
                let _ = server.set_read_timeout(Some(Duration::from_millis(200)));
                let mut buf = vec![0; 64 * 1024];
                while !done() {
                    match server.read(&mut buf) {
                        Ok(0) => return,
                        Ok(_) => {}
                        Err(e) if is_timeout(&e) => {}
                        Err(_) => return,
                    }
                }
            })
        };
        let writer = {
            let sent = sent.clone();
            std::thread::spawn(move || {
                let mut client = client;
                let _ = client.set_write_timeout(Some(Duration::from_millis(200)));
                let data = vec![0x5a; chunk];
                while !done() {
                    let mut off = 0;
                    while off < data.len() && !done() {
                        match client.write(&data[off..]) {
                            Ok(n) => off += n,
                            // Under loss the send buffer fills and the write waits: that is
                            // the fault, keep going.
                            Err(e) if is_timeout(&e) => {}
                            Err(_) => return,
                        }
                    }
                    sent.fetch_add(off as u64, Ordering::Relaxed);
                    std::thread::sleep(period);
                }
            })
        };
        Stream {
            stop,
            sent,
            threads: vec![reader, writer],
        }
    }

    /// Bytes handed to the kernel so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Stops both ends and waits for them; returns the bytes sent.
    pub fn stop(mut self) -> u64 {
        self.halt();
        self.sent()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.halt();
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_streams_loses_packets_and_is_removed_even_on_panic() {
        if !available() {
            return;
        }
        let names = std::sync::Mutex::new(None);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let pair = Pair::new("reveal-nstest");
            *names.lock().unwrap() = Some((pair.a.name().to_string(), pair.b.name().to_string()));
            {
                // Inside A, this thread sees A's veth; after the guard, the host's devices.
                let _in_a = pair.a.enter();
                let dev = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap();
                assert!(dev.contains(&format!("{}:", pair.a_dev)), "{dev}");
            }
            let dev = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap();
            assert!(!dev.contains(&format!("{}:", pair.a_dev)), "{dev}");

            let stream = Stream::start(
                &pair,
                16 * 1024,
                Duration::from_millis(10),
                Duration::from_secs(10),
            );
            let loss = Loss::start(&pair.b, pair.a_addr, 500);
            std::thread::sleep(Duration::from_secs(1));
            assert!(loss.dropped().unwrap() > 0, "no packet dropped");
            loss.stop();
            assert!(stream.stop() > 0);
            panic!("a deliberate panic: the namespaces must be removed all the same");
        }));
        let msg = outcome.unwrap_err();
        assert_eq!(
            msg.downcast_ref::<&str>(),
            Some(&"a deliberate panic: the namespaces must be removed all the same")
        );
        let (a, b) = names.lock().unwrap().clone().unwrap();
        let list = run(Command::new("ip").args(["netns", "list"]));
        assert!(
            !list
                .lines()
                .any(|l| l.starts_with(a.as_str()) || l.starts_with(b.as_str())),
            "namespaces left behind: {list}"
        );
    }
}
