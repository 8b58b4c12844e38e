//! What this process has used, for the figures runs and benchmarks print.

/// Peak resident memory of this process (Linux VmHWM), 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    /// A running process has touched at least its own stack and code.
    #[test]
    fn peak_rss_is_read_on_linux() {
        let peak = super::peak_rss_bytes();
        if cfg!(target_os = "linux") {
            assert!(peak > 100_000, "{peak}");
        }
    }
}
