//! TLS: `serve --tls-cert/--tls-key` with certificates made here (rcgen: a test CA and
//! leaf certificates it signs), our CLI client over `https://` with `--ca-cert` or
//! `SSL_CERT_FILE`, the gateway in front of an `https://` upstream, plain HTTP on the TLS
//! port, a stalled handshake, and the certificate swapped on SIGHUP.
#![allow(missing_docs)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SerialNumber,
};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::json;

use crate::client_support::{cli, json_out, run, stderr};
use crate::common::Stdio;
use crate::gateway_common::{HttpUpstream, task_result, text_of};
use crate::http_common::Server;

const LIMIT: Duration = Duration::from_secs(30);

/// A test CA in a scratch directory, and the leaf certificates it signs.
struct Pki {
    dir: tempfile::TempDir,
    ca: CertifiedIssuer<'static, KeyPair>,
}

/// A leaf certificate's files and DER.
struct Leaf {
    cert: PathBuf,
    key: PathBuf,
    der: CertificateDer<'static>,
}

impl Pki {
    fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "mcp-tasks test CA");
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        Self { dir, ca }
    }

    fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn ca_der(&self) -> CertificateDer<'static> {
        self.ca.der().clone()
    }

    /// A certificate for 127.0.0.1 and localhost with this serial and common name, written
    /// to `server.crt` / `server.key` (replacing what was there).
    fn issue(&self, serial: u64, name: &str) -> Leaf {
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        params.serial_number = Some(SerialNumber::from(serial));
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        let leaf = Leaf {
            cert: self.dir.path().join("server.crt"),
            key: self.dir.path().join("server.key"),
            der: cert.der().clone(),
        };
        // Each file replaced whole (a rename), as a certificate renewal does.
        for (path, text) in [(&leaf.cert, cert.pem()), (&leaf.key, key.serialize_pem())] {
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, path).unwrap();
        }
        leaf
    }
}

fn serve_tls(leaf: &Leaf, extra: &[&str]) -> Server {
    let mut args = vec![
        "--tls-cert",
        leaf.cert.to_str().unwrap(),
        "--tls-key",
        leaf.key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Server::start_env(&args, &[("RUST_LOG", "info")])
}

fn https_url(addr: SocketAddr) -> String {
    format!("https://{addr}/mcp")
}

/// A TLS connection of a rustls client trusting only `ca`.
fn tls_connect(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(LIMIT))?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock)?;
    }
    Ok(tls)
}

/// One `GET /healthz` on a keep-alive connection: the status line.
fn healthz<S: Read + Write>(s: &mut S) -> String {
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    // The probe's body is short; the response is read until its blank line and body.
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") || !ends_body(&got) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed mid-response: {got:?}");
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    text.lines().next().unwrap_or_default().to_owned()
}

/// Whether `got` holds a whole response with a `Content-Length` body.
fn ends_body(got: &[u8]) -> bool {
    let text = String::from_utf8_lossy(got);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    body.len() >= len
}

/// The certificate the server presents to a new connection.
fn presented(addr: SocketAddr, ca: &CertificateDer<'static>) -> CertificateDer<'static> {
    let tls = tls_connect(addr, ca).expect("TLS handshake");
    tls.conn.peer_certificates().expect("a certificate")[0].clone()
}

fn hangup(server: &Server) {
    let ok = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -HUP failed");
}

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn our_client_runs_a_task_over_https_with_the_ca_from_a_flag_or_ssl_cert_file() {
    let pki = Pki::new();
    let leaf = pki.issue(1, "mcp-tasks test server");
    let srv = serve_tls(&leaf, &[]);
    let url = https_url(srv.addr);
    let ca = pki.ca_file();
    let ca = ca.to_str().unwrap();

    let o = run(cli(&[
        "call",
        "sleep",
        "--arg",
        "ms=100",
        "--task",
        "--json",
        "--url",
        &url,
        "--ca-cert",
        ca,
    ])
    .env_remove("SSL_CERT_FILE")
    .env_remove("SSL_CERT_DIR"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "completed", "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "slept 100", "{v}");

    let o = run(cli(&["call", "echo", "--arg", "text=hi", "--url", &url])
        .env("SSL_CERT_FILE", ca)
        .env_remove("SSL_CERT_DIR"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // Without the CA the server is not trusted: a clear failure, not a hang.
    let o = run(cli(&["call", "echo", "--arg", "text=hi", "--url", &url])
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR"));
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o).to_lowercase();
    assert!(err.contains("certificate"), "{err}");

    // A --ca-cert that holds no certificate is refused before anything is sent.
    let bogus = pki.dir.path().join("bogus.pem");
    std::fs::write(&bogus, "not a certificate\n").unwrap();
    let o = run(&mut cli(&[
        "call",
        "echo",
        "--arg",
        "text=hi",
        "--url",
        &url,
        "--ca-cert",
        bogus.to_str().unwrap(),
    ]));
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("CA certificate"), "{}", stderr(&o));
}

#[test]
fn plain_http_on_the_tls_port_fails_cleanly_and_the_server_keeps_serving() {
    let pki = Pki::new();
    let leaf = pki.issue(1, "mcp-tasks test server");
    let srv = serve_tls(&leaf, &[]);

    for _ in 0..3 {
        let mut tcp = TcpStream::connect(srv.addr).unwrap();
        tcp.set_read_timeout(Some(LIMIT)).unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        // The server answers with at most a TLS alert, never HTTP, and closes.
        let mut got = Vec::new();
        let started = Instant::now();
        let _ = tcp.read_to_end(&mut got);
        assert!(started.elapsed() < LIMIT, "the connection was not closed");
        assert!(!got.starts_with(b"HTTP/"), "{got:?}");
        assert!(got.is_empty() || got[0] == 0x15, "not a TLS alert: {got:?}");
    }
    // Our client pointed at the TLS port with http:// fails, with an exit code.
    let o = run(&mut cli(&[
        "call",
        "echo",
        "--arg",
        "text=hi",
        "--timeout",
        "20s",
        "--url",
        &format!("http://{}/mcp", srv.addr),
    ]));
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));

    let mut tls = tls_connect(srv.addr, &pki.ca_der()).expect("TLS handshake");
    assert_eq!(healthz(&mut tls), "HTTP/1.1 200 OK");
}

#[test]
fn a_stalled_handshake_is_closed_after_the_timeout_and_frees_its_slot() {
    let pki = Pki::new();
    let leaf = pki.issue(1, "mcp-tasks test server");
    let srv = serve_tls(
        &leaf,
        &["--tls-handshake-timeout", "1s", "--max-connections", "1"],
    );

    // The first bytes of a ClientHello, then nothing.
    let mut stalled = TcpStream::connect(srv.addr).unwrap();
    stalled.set_read_timeout(Some(LIMIT)).unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).unwrap();
    let started = Instant::now();
    // The only connection slot is held by the stalled handshake; this client waits in
    // the listen backlog until the handshake times out.
    let waiting = {
        let addr = srv.addr;
        let ca = pki.ca_der();
        std::thread::spawn(move || {
            let mut tls = tls_connect(addr, &ca).expect("TLS handshake");
            (healthz(&mut tls), Instant::now())
        })
    };
    let mut got = Vec::new();
    let _ = stalled.read_to_end(&mut got);
    let closed = started.elapsed();
    assert!(closed < LIMIT, "the stalled handshake was never closed");
    assert!(
        closed >= Duration::from_millis(900),
        "closed before the timeout: {closed:?}"
    );
    let (status, served_at) = waiting.join().unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(served_at.duration_since(started) >= Duration::from_millis(900));
}

#[test]
fn sighup_swaps_the_certificate_and_keeps_the_old_one_when_the_new_is_bad() {
    let pki = Pki::new();
    let first = pki.issue(1001, "mcp-tasks first");
    let srv = serve_tls(&first, &[]);
    let ca = pki.ca_der();
    assert_eq!(presented(srv.addr, &ca), first.der);

    // A connection open across the reload keeps working.
    let mut open = tls_connect(srv.addr, &ca).unwrap();
    assert_eq!(healthz(&mut open), "HTTP/1.1 200 OK");

    let second = pki.issue(1002, "mcp-tasks second");
    assert_ne!(second.der, first.der);
    hangup(&srv);
    until("the second certificate", || {
        presented(srv.addr, &ca) == second.der
    });
    assert!(
        second
            .der
            .windows(b"mcp-tasks second".len())
            .any(|w| w == b"mcp-tasks second")
    );
    assert_eq!(healthz(&mut open), "HTTP/1.1 200 OK");

    // A key that does not belong to the certificate: logged, the second one stays.
    let key = KeyPair::generate().unwrap();
    std::fs::write(&second.key, key.serialize_pem()).unwrap();
    hangup(&srv);
    until("the reload error", || {
        srv.stderr().contains("TLS certificate reload failed")
    });
    assert_eq!(presented(srv.addr, &ca), second.der);
    // Not a key byte in the log.
    let pem = key.serialize_pem();
    let body = pem.lines().nth(1).unwrap();
    assert!(!srv.stderr().contains(body));

    // A missing file too.
    std::fs::remove_file(&second.cert).unwrap();
    hangup(&srv);
    until("the second reload error", || {
        srv.stderr()
            .matches("TLS certificate reload failed")
            .count()
            >= 2
    });
    assert_eq!(presented(srv.addr, &ca), second.der);
    let mut tls = tls_connect(srv.addr, &ca).unwrap();
    assert_eq!(healthz(&mut tls), "HTTP/1.1 200 OK");
}

#[test]
fn the_gateway_reaches_an_https_upstream() {
    let pki = Pki::new();
    let leaf = pki.issue(1, "mcp-tasks upstream");
    let up = HttpUpstream::start(&[
        "--tls-cert",
        leaf.cert.to_str().unwrap(),
        "--tls-key",
        leaf.key.to_str().unwrap(),
    ]);
    assert!(up.url.starts_with("https://127.0.0.1:"), "{}", up.url);
    let ca = pki.ca_file();
    let mut s = Stdio::spawn_args(
        &[
            "serve",
            "--stdio",
            "--store",
            "memory",
            "--upstream-url",
            &up.url,
        ],
        &[("SSL_CERT_FILE", ca.to_str().unwrap())],
    );
    s.initialize();
    let task = s.create_task("sleep", json!({"ms": 100}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = task_result(&mut s, &id)["result"].clone();
    assert_eq!(text_of(&r), "slept 100");
    let plain = s.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "over tls"}}),
    );
    assert_eq!(text_of(&plain), "over tls");
}
