//! Prometheus text (exposition format 0.0.4) for every process of the
//! cluster: the coordinator's `/metrics` and the worker's (`worker --status
//! ADDR`) are written through one [`Exposition`], which puts the base labels
//! on every sample and adds what every process has ([`Exposition::process`]:
//! build info, resident memory, the data directory's disk use).
//!
//! The conventions (<https://prometheus.io/docs/practices/naming/>): no label
//! named `job` or `instance`, which the scraper sets itself (it renames ours
//! to `exported_job`), so the job's name is `retro_job`; counters end in
//! `_total` and only grow; no pre-computed rates (a query takes `rate()` of a
//! counter); units in the name (`_seconds`, `_bytes`).

use std::fmt::Write as _;
use std::path::Path;

/// A label value in the text format: backslash, quote and newline escaped.
pub fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Labels beyond the base ones, each `(name, value)` with the value unescaped.
pub type Labels = Vec<(&'static str, String)>;

/// One sample of a family: its labels and its value.
pub type Sample = (Labels, f64);

/// One series of a histogram: its labels and the values observed.
pub type Series = (Labels, Vec<f64>);

/// A sample without labels of its own.
pub fn one(v: f64) -> Vec<Sample> {
    vec![(Vec::new(), v)]
}

/// The upper bounds of the round-duration histograms, in seconds: a stage-1
/// round takes milliseconds, a stage-2 round a minute or two, a round of a
/// big cluster's layer up to an hour.
pub const ROUND_BUCKETS: [f64; 12] = [0.01, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0];

/// A metrics page being written.
pub struct Exposition {
    out: String,
    base: String,
    keep_empty: bool,
}

impl Exposition {
    /// A page whose every sample carries `base` (e.g. `retro_job`). With
    /// `keep_empty`, a family without samples is still declared (its HELP and
    /// TYPE), so that a scraper sees every family of the kind of job from the
    /// first scrape on.
    pub fn new(base: &[(&str, &str)], keep_empty: bool) -> Exposition {
        let base = base.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect::<Vec<_>>().join(",");
        Exposition { out: String::new(), base, keep_empty }
    }

    /// The labels of one sample, the base ones first.
    fn labels(&self, extra: &[(&'static str, String)]) -> String {
        let mut all = self.base.clone();
        for (k, v) in extra {
            if !all.is_empty() {
                all.push(',');
            }
            let _ = write!(all, "{k}=\"{}\"", label(v));
        }
        if all.is_empty() { all } else { format!("{{{all}}}") }
    }

    /// A family of `kind` (`gauge` or `counter`) and its samples.
    pub fn family(&mut self, name: &str, kind: &str, help: &str, samples: Vec<Sample>) {
        debug_assert!(kind != "counter" || name.ends_with("_total"), "counter {name} must end in _total");
        if samples.is_empty() && !self.keep_empty {
            return;
        }
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (extra, v) in samples {
            let labels = self.labels(&extra);
            let _ = writeln!(self.out, "{name}{labels} {v}");
        }
    }

    /// A histogram family: per series (its labels beyond the base ones, and
    /// its values), the cumulative `_bucket` counts over the upper bounds
    /// `bounds` (ascending) and `+Inf`, then `_sum` and `_count`.
    pub fn histogram(&mut self, name: &str, help: &str, bounds: &[f64], series: Vec<Series>) {
        if series.is_empty() && !self.keep_empty {
            return;
        }
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (extra, values) in series {
            let le = |bound: String| {
                let mut all = extra.clone();
                all.push(("le", bound));
                all
            };
            for &b in bounds {
                let below = values.iter().filter(|&&v| v <= b).count();
                let labels = self.labels(&le(b.to_string()));
                let _ = writeln!(self.out, "{name}_bucket{labels} {below}");
            }
            let labels = self.labels(&le("+Inf".into()));
            let _ = writeln!(self.out, "{name}_bucket{labels} {}", values.len());
            let labels = self.labels(&extra);
            let _ = writeln!(self.out, "{name}_sum{labels} {}", values.iter().sum::<f64>());
            let _ = writeln!(self.out, "{name}_count{labels} {}", values.len());
        }
    }

    /// What every process has: `retro_build_info{version,commit}` (always 1),
    /// `process_resident_memory_bytes` and `process_start_time_seconds` (the
    /// names Prometheus's own clients give them), and, with a data directory,
    /// `retro_data_directory_bytes`, the disk it takes. Reads the directory:
    /// call it off the async runtime's threads. `commit` is the binary's
    /// (`retro_build_info::BUILD_COMMIT`, which only the binaries' crates
    /// depend on, so that a new commit rebuilds nothing below them).
    pub fn process(&mut self, commit: &str, data_dir: Option<&Path>) {
        let build = vec![("version", env!("CARGO_PKG_VERSION").to_string()), ("commit", commit.to_string())];
        self.family(
            "retro_build_info",
            "gauge",
            "The program's version and the commit it was built from.",
            vec![(build, 1.0)],
        );
        if let Some(rss) = resident_bytes() {
            self.family("process_resident_memory_bytes", "gauge", "Resident memory of this process.", one(rss as f64));
        }
        if let Some(start) = start_time_seconds() {
            self.family(
                "process_start_time_seconds",
                "gauge",
                "When this process started, in seconds since the epoch.",
                one(start),
            );
        }
        if let Some(dir) = data_dir {
            self.family(
                "retro_data_directory_bytes",
                "gauge",
                "Disk taken by the data directory (checkpoints, state, inboxes).",
                one(crate::resources::allocated_bytes(dir) as f64),
            );
        }
    }

    /// The page.
    pub fn finish(self) -> String {
        self.out
    }
}

/// Resident memory of this process (Linux `/proc/self/statm`), if known.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * system_value(libc::_SC_PAGESIZE)?)
}

/// A positive system configuration value (`sysconf`), if the system gives one.
fn system_value(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf only reads a configuration value.
    let v = unsafe { libc::sysconf(name) };
    u64::try_from(v).ok().filter(|&v| v > 0)
}

/// When this process started, in seconds since the epoch (Linux: its start
/// in clock ticks after boot, field 22 of `/proc/self/stat`, plus the boot
/// time `btime` of `/proc/stat`, as Prometheus's own clients compute it).
fn start_time_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let ticks: f64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let boot: f64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(boot + ticks / system_value(libc::_SC_CLK_TCK)? as f64)
}

/// Serves `/metrics` (the text `page` makes, on a blocking thread since it
/// may read a data directory) and `/healthz` on `listener` until `shutdown`
/// resolves: the worker's status port. `what` names the port in the log and
/// in connection-limit warnings.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    what: &'static str,
    page: std::sync::Arc<dyn Fn() -> String + Send + Sync>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) {
    use crate::net::{ConnectionLimits, GuardedListener, HTTP_IDLE};
    let listener = GuardedListener::new(listener, what, ConnectionLimits::for_listener(HTTP_IDLE));
    crate::net::serve_http(listener, MetricsService(page), |io| io, shutdown).await;
}

/// The service behind [`serve_metrics`].
#[derive(Clone)]
struct MetricsService(std::sync::Arc<dyn Fn() -> String + Send + Sync>);

type BoxedResponse = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<hyper::Response<String>, std::convert::Infallible>> + Send>,
>;

impl tower_service::Service<hyper::Request<hyper::body::Incoming>> for MetricsService {
    type Response = hyper::Response<String>;
    type Error = std::convert::Infallible;
    type Future = BoxedResponse;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        let page = self.0.clone();
        let (get, path) = (req.method() == hyper::Method::GET, req.uri().path().to_string());
        Box::pin(async move {
            let (status, content_type, body) = match (get, path.as_str()) {
                (true, "/metrics") => match tokio::task::spawn_blocking(move || page()).await {
                    Ok(text) => (hyper::StatusCode::OK, "text/plain; version=0.0.4", text),
                    Err(e) => (hyper::StatusCode::INTERNAL_SERVER_ERROR, "text/plain", format!("{e}\n")),
                },
                (true, "/healthz") => (hyper::StatusCode::OK, "text/plain", "ok\n".to_string()),
                (false, "/metrics" | "/healthz") => {
                    (hyper::StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET only\n".to_string())
                }
                _ => (hyper::StatusCode::NOT_FOUND, "text/plain", "try /healthz or /metrics\n".to_string()),
            };
            let mut response = hyper::Response::new(body);
            *response.status_mut() = status;
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Exposition, one};

    #[test]
    fn samples_carry_the_base_labels_escaped_and_histograms_are_cumulative() {
        let mut e = Exposition::new(&[("retro_job", "st\"age")], false);
        e.family("retro_x_total", "counter", "X.", vec![(vec![("worker", "w\n1".into())], 3.0)]);
        e.family("retro_empty", "gauge", "Left out: no samples.", Vec::new());
        e.histogram("retro_round_duration_seconds", "Rounds.", &[1.0, 10.0], vec![(Vec::new(), vec![0.5, 2.0, 20.0])]);
        let text = e.finish();
        let want = "\
# HELP retro_x_total X.
# TYPE retro_x_total counter
retro_x_total{retro_job=\"st\\\"age\",worker=\"w\\n1\"} 3
# HELP retro_round_duration_seconds Rounds.
# TYPE retro_round_duration_seconds histogram
retro_round_duration_seconds_bucket{retro_job=\"st\\\"age\",le=\"1\"} 1
retro_round_duration_seconds_bucket{retro_job=\"st\\\"age\",le=\"10\"} 2
retro_round_duration_seconds_bucket{retro_job=\"st\\\"age\",le=\"+Inf\"} 3
retro_round_duration_seconds_sum{retro_job=\"st\\\"age\"} 22.5
retro_round_duration_seconds_count{retro_job=\"st\\\"age\"} 3
";
        assert_eq!(text, want);
    }

    #[test]
    fn without_base_labels_a_sample_has_no_braces_and_empty_families_can_be_kept() {
        let mut e = Exposition::new(&[], true);
        e.family("retro_a", "gauge", "A.", one(1.0));
        e.family("retro_b", "gauge", "B.", Vec::new());
        assert_eq!(
            e.finish(),
            "# HELP retro_a A.\n# TYPE retro_a gauge\nretro_a 1\n# HELP retro_b B.\n# TYPE retro_b gauge\n"
        );
    }

    #[test]
    fn the_process_families_are_there() {
        let dir = std::env::temp_dir().join(format!("metrics-dir-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/f"), vec![1u8; 10_000]).unwrap();
        let mut e = Exposition::new(&[("retro_job", "j")], false);
        e.process("abc123", Some(&dir));
        let text = e.finish();
        std::fs::remove_dir_all(&dir).unwrap();
        let value = |name: &str| -> f64 {
            let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {text}"));
            line.rsplit_once(' ').unwrap().1.parse().unwrap()
        };
        assert!(value("process_resident_memory_bytes") > 1e6, "{text}");
        assert!(value("retro_data_directory_bytes") >= 10_000.0, "{text}");
        // This process started within the last hour (and not in the future).
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        let started = value("process_start_time_seconds");
        assert!(started <= now + 1.0 && started > now - 3600.0, "started {started}, now {now}: {text}");
        let build = text.lines().find(|l| l.starts_with("retro_build_info{")).unwrap();
        let version = format!("version=\"{}\"", env!("CARGO_PKG_VERSION"));
        assert!(build.contains(&version) && build.contains("commit=\"abc123\""), "{build}");
    }
}
