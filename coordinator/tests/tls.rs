//! TLS between workers and the coordinator: certificates made by the test (a
//! CA and a server certificate for `localhost`); a worker that trusts the CA
//! solves stage 1 with the embedded run's bytes, while a plain-text worker and
//! one that trusts another CA never join.

use crate::common::*;
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

/// Writes `ca.pem`, `cert.pem`, `key.pem` (server for `localhost`) and `other-ca.pem`.
fn make_certificates(dir: &TempDir) {
    let ca = |name: &str| {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), rcgen::Issuer::new(params, key))
    };
    let (ca_pem, issuer) = ca("retro test CA");
    let (other_pem, _) = ca("someone else's CA");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap().signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("ca.pem"), ca_pem).unwrap();
    std::fs::write(dir.join("other-ca.pem"), other_pem).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    // One certificate for every worker's Peer service, by the name peers check.
    let wkey = rcgen::KeyPair::generate().unwrap();
    let wcert =
        rcgen::CertificateParams::new(vec!["retro-worker".to_string()]).unwrap().signed_by(&wkey, &issuer).unwrap();
    std::fs::write(dir.join("worker-cert.pem"), wcert.pem()).unwrap();
    std::fs::write(dir.join("worker-key.pem"), wkey.serialize_pem()).unwrap();
}

/// The TLS plan in `dir` and a coordinator running it for `workers` workers.
fn tls_coordinator(dir: &TempDir, workers: usize) -> (Proc, String) {
    let plan = std::fs::read_to_string(repo().join("plans/stage1.toml")).unwrap();
    let plan = plan.replace(
        "[cluster]",
        &format!("[cluster]\ntls_cert = {:?}\ntls_key = {:?}", dir.join("cert.pem"), dir.join("key.pem")),
    );
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(dir.join("plan.toml")).arg("--output").arg(dir.join("tb"));
    c.arg("--checkpoints").arg(dir.join("ck")).args(["--listen", "127.0.0.1:0", "--expect-workers"]);
    c.arg(workers.to_string()).env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    let coord = Proc::start("coordinator", c, dir.join("coord.log"));
    let addr = listening_address(&coord);
    let port = addr.rsplit(':').next().unwrap().to_string();
    (coord, format!("localhost:{port}"))
}

fn embedded_sums() -> std::collections::BTreeMap<String, String> {
    let dir = TempDir::new("tls-embedded");
    let out = run(embedded_command(&dir), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    checksums(&dir.join("tb"))
}

fn worker_with(dir: &TempDir, addr: &str, name: &str, tls: &[&str]) -> Command {
    let mut c = Command::new(worker());
    c.args(["--connect", addr, "--listen", "127.0.0.1:0", "--data"]).arg(dir.join(name)).args(tls);
    c.env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    c
}

#[test]
fn workers_must_trust_the_coordinators_certificate() {
    let want = embedded_sums();
    let dir = TempDir::new("tls");
    make_certificates(&dir);
    let (mut coord, tls_addr) = tls_coordinator(&dir, 1);

    // Neither plain text nor a stranger's CA gets in.
    let other = dir.join("other-ca.pem");
    for (name, args) in [("plain", vec![]), ("wrong-ca", vec!["--tls-ca", other.to_str().unwrap()])] {
        let p = Proc::start(name, worker_with(&dir, &tls_addr, name, &args), dir.join(&format!("{name}.log")));
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = p.logs();
        assert!(!log.contains("joined as worker"), "{name} got in:\n{log}");
        // Plain text to a TLS port fails as a connection or protocol error (which
        // one depends on timing); either way the worker says so.
        let said_why =
            log.contains(&format!("coordinator {tls_addr} unreachable while")) || log.contains("refused this worker");
        assert!(said_why, "{name} should say why:\n{log}");
        if name == "wrong-ca" {
            assert!(log.contains("certificate"), "{log}");
        }
        drop(p);
    }
    assert!(!coord.logs().contains("joined (epoch"), "{}", coord.logs());

    let ca = dir.join("ca.pem");
    let args = ["--tls-ca", ca.to_str().unwrap()];
    let mut w = Proc::start("worker", worker_with(&dir, &tls_addr, "w", &args), dir.join("w.log"));
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    assert!(w.wait(LIMIT).success(), "{}", w.logs());
    assert_eq!(checksums(&dir.join("tb")), want);
}

/// Two workers: TLS to the coordinator and between themselves (the update
/// streams), one worker certificate for both; the same bytes as embedded.
#[test]
fn workers_talk_tls_to_each_other() {
    let want = embedded_sums();
    let dir = TempDir::new("tls-peers");
    make_certificates(&dir);
    let (mut coord, tls_addr) = tls_coordinator(&dir, 2);
    let (ca, cert, key) = (dir.join("ca.pem"), dir.join("worker-cert.pem"), dir.join("worker-key.pem"));
    let args = [
        "--tls-ca",
        ca.to_str().unwrap(),
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--threads",
        "1",
    ];
    let mut workers: Vec<Proc> = (1..=2)
        .map(|i| {
            let name = format!("w{i}");
            Proc::start(&name, worker_with(&dir, &tls_addr, &name, &args), dir.join(&format!("{name}.log")))
        })
        .collect();
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for w in &mut workers {
        assert!(w.wait(LIMIT).success(), "{}", w.logs());
    }
    assert_eq!(checksums(&dir.join("tb")), want);
}
