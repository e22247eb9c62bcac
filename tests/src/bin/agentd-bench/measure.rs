//! What the bench reads about processes and the machine (Linux `/proc`), and the few
//! statistics it reports.

use std::time::Duration;

use anyhow::{Context, bail};

/// A `VmRSS`-style field of `/proc/<pid>/status`, in KiB.
fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .with_context(|| format!("no {field} in {path}"))?;
    let kib = line.trim().trim_end_matches("kB").trim();
    kib.parse()
        .with_context(|| format!("{field} in {path} is not a number: {line:?}"))
}

/// Resident set size now, in bytes.
pub(crate) fn rss(pid: u32) -> anyhow::Result<u64> {
    Ok(status_kib(pid, "VmRSS")? * 1024)
}

/// Peak resident set size since the process started (`VmHWM`), in bytes.
pub(crate) fn peak_rss(pid: u32) -> anyhow::Result<u64> {
    Ok(status_kib(pid, "VmHWM")? * 1024)
}

/// User + system CPU time of a process (all its threads, also those that exited), from
/// `/proc/<pid>/stat`. Resolution: one clock tick (usually 10 ms).
pub(crate) fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    // The command name (field 2) may hold spaces: count fields after its closing ')'.
    let (_, rest) = stat
        .rsplit_once(") ")
        .with_context(|| format!("unexpected {path}: {stat:?}"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let ticks = |i: usize| -> anyhow::Result<u64> {
        let field = fields.get(i - 3).with_context(|| format!("short {path}"))?;
        field
            .parse()
            .with_context(|| format!("field {i} of {path}: {field:?}"))
    };
    let ticks = ticks(14)? + ticks(15)?;
    Ok(Duration::from_secs_f64(
        ticks as f64 / clock_ticks_per_second()?,
    ))
}

fn clock_ticks_per_second() -> anyhow::Result<f64> {
    use nix::unistd::{SysconfVar, sysconf};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(hz)) if hz > 0 => Ok(hz as f64),
        other => bail!("cannot read the clock tick rate (sysconf CLK_TCK: {other:?})"),
    }
}

/// The 1-minute load average.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// One line about the machine: CPU model, cores, memory, kernel.
pub(crate) fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
        .map_or("unknown CPU", |(_, m)| m.trim())
        .to_owned();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let kib: u64 = m
                .lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))?
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()?;
            Some(format!("{:.0} GiB RAM", kib as f64 / 1024.0 / 1024.0))
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{model}, {cores} cores, {memory}, Linux {}", kernel.trim())
}

/// The value at percentile `p` (0..=100) of `values` by nearest rank; 0 when empty.
pub(crate) fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub(crate) fn median(values: &[f64]) -> f64 {
    percentile(values, 50.0)
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `a - b` in milliseconds, negative when `b` is later.
pub(crate) fn ms_between(a: std::time::Instant, b: std::time::Instant) -> f64 {
    match a.checked_duration_since(b) {
        Some(d) => ms(d),
        None => -ms(b - a),
    }
}

pub(crate) const MIB: f64 = 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 50.0);
        assert_eq!(percentile(&values, 99.0), 99.0);
        assert_eq!(percentile(&values, 100.0), 100.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn own_process_readings() {
        let me = std::process::id();
        assert!(rss(me).unwrap() > 0);
        assert!(peak_rss(me).unwrap() >= rss(me).unwrap() / 2);
        cpu_time(me).unwrap();
    }
}
