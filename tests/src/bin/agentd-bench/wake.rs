//! 11. The machine itself: what one thread waking another costs, on another CPU and on the
//!     same one. Every chunk the daemon streams wakes something (a runtime worker parked on
//!     its sockets, the client reading), so this price sets a floor under the per-turn and
//!     per-delta figures, and it differs a lot between bare metal and (nested) VMs.
//!
//! Two threads pass one byte back and forth over a Unix socket pair, each pinned to its
//! CPU. The CPU time is the whole bench process's, so the bench must be otherwise idle
//! (it is: no scenario runs beside this one).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Instant;

use anyhow::Context;
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

use crate::measure::cpu_time;
use crate::{Bench, Figure};

pub(crate) async fn wake_up(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let round_trips = bench.size(20_000, 2_000);
    let (allowed, cpus) = allowed_cpus()?;
    let first = *cpus.first().context("no CPU allowed")?;
    let mut placements = vec![("one CPU", first, first)];
    if let Some(&second) = cpus.get(1) {
        placements.insert(0, ("two CPUs", first, second));
    }
    let s = "11 wake-up";
    let mut figures = Vec::new();
    for (name, a, b) in placements {
        let (wall, cpu) =
            tokio::task::spawn_blocking(move || ping_pong(round_trips, a, b, allowed)).await??;
        figures.push(Figure::new(
            s,
            format!("round trip between two threads on {name}"),
            wall,
            "µs",
        ));
        figures.push(Figure::new(
            s,
            format!("CPU per wake-up, threads on {name}"),
            cpu,
            "µs",
        ));
    }
    Ok(figures)
}

/// `n` round trips between a thread on CPU `a` and one on CPU `b`: the wall time of one
/// round trip and the CPU time of one wake-up (half a round trip), in microseconds. The
/// calling thread (one of tokio's blocking pool) gets `allowed` back afterwards.
fn ping_pong(n: usize, a: usize, b: usize, allowed: CpuSet) -> anyhow::Result<(f64, f64)> {
    let (mut near, mut far) = UnixStream::pair().context("cannot make a socket pair")?;
    let echo = std::thread::spawn(move || -> anyhow::Result<()> {
        pin(b)?;
        let mut byte = [0u8];
        for _ in 0..n {
            far.read_exact(&mut byte)?;
            far.write_all(&byte)?;
        }
        Ok(())
    });
    let result = (|| -> anyhow::Result<(f64, f64)> {
        pin(a)?;
        let pid = std::process::id();
        let cpu_before = cpu_time(pid)?;
        let started = Instant::now();
        let mut byte = [7u8];
        for _ in 0..n {
            near.write_all(&byte)?;
            near.read_exact(&mut byte)?;
        }
        let wall = started.elapsed();
        let cpu = cpu_time(pid)? - cpu_before;
        let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / n as f64;
        Ok((per(wall), per(cpu) / 2.0))
    })();
    let restored = sched_setaffinity(Pid::from_raw(0), &allowed).context("cannot unpin a thread");
    // Closing our end ends the echo thread should we have stopped early.
    drop(near);
    let echoed = echo
        .join()
        .map_err(|_| anyhow::anyhow!("the echo thread panicked"))?;
    let result = result?;
    echoed?;
    restored?;
    Ok(result)
}

/// The CPUs this thread may run on: as a set, and their numbers.
fn allowed_cpus() -> anyhow::Result<(CpuSet, Vec<usize>)> {
    let allowed = sched_getaffinity(Pid::from_raw(0)).context("cannot read the CPUs allowed")?;
    let cpus = (0..CpuSet::count())
        .filter(|&i| allowed.is_set(i).unwrap_or(false))
        .collect();
    Ok((allowed, cpus))
}

fn pin(cpu: usize) -> anyhow::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu).context("no such CPU")?;
    sched_setaffinity(Pid::from_raw(0), &set).context("cannot pin a thread to a CPU")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ping_pong_ends_and_gives_the_thread_its_cpus_back() {
        let (allowed, cpus) = allowed_cpus().unwrap();
        let (wall, cpu) = ping_pong(200, cpus[0], cpus[0], allowed).unwrap();
        assert!(wall > 0.0 && wall.is_finite(), "round trip {wall} µs");
        assert!(cpu >= 0.0 && cpu.is_finite(), "CPU per wake-up {cpu} µs");
        assert_eq!(sched_getaffinity(Pid::from_raw(0)).unwrap(), allowed);
    }
}
