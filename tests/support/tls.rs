//! Certificates and password hashes for the TLS tests, made fresh for each test with the
//! `openssl` command (Debian's openssl package).

use std::path::Path;
use std::process::Command;

/// bcrypt (cost 4) of `reveal-test-password`, made with Python's `crypt` module.
pub const HASH: &str = "$2b$04$uZmB73Jh9FSjaAdemXnDm.L4up.Q08e25j5EyYYU1YKLQdoLbz/Z2";

pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for the name `reveal-test` only (not 127.0.0.1), and a client
/// certificate, all EC P-256.
pub fn certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=reveal-test-ca",
    ]);
    openssl(dir, &ca);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:reveal-test\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    for who in ["server", "client"] {
        let (key, csr, pem, ext) = (
            format!("{who}.key"),
            format!("{who}.csr"),
            format!("{who}.pem"),
            format!("{who}.ext"),
        );
        let subj = format!("/CN=reveal-{who}");
        let mut req = vec!["req"];
        req.extend(ec);
        req.extend([
            "-keyout",
            key.as_str(),
            "-out",
            csr.as_str(),
            "-subj",
            subj.as_str(),
        ]);
        openssl(dir, &req);
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                "2",
                "-extfile",
                &ext,
            ],
        );
    }
}
