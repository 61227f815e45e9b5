//! Watching another process through `/proc` (Linux only): resident set,
//! peak resident set, open file descriptors, threads and CPU time, sampled
//! on a plain thread so that a busy runtime does not delay the samples.
#![allow(dead_code)] // the flood bench is the only user so far

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One reading of a process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    /// Time since the sampler started.
    pub at: Duration,
    /// `VmRSS`, KiB.
    pub rss_kib: u64,
    /// `VmHWM` (peak resident set since the process started), KiB.
    pub hwm_kib: u64,
    /// `Threads`.
    pub threads: u64,
    /// Entries of `/proc/PID/fd`.
    pub fds: u64,
    /// User + system CPU time, seconds.
    pub cpu_secs: f64,
}

/// Reads `/proc/PID/{status,fd,stat}` once; `None` when the process is gone.
pub fn read(pid: u32, at: Duration) -> Option<Reading> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| dir.count() as u64)
        .unwrap_or(0);
    Some(Reading {
        at,
        rss_kib: field("VmRSS"),
        hwm_kib: field("VmHWM"),
        threads: field("Threads"),
        fds,
        cpu_secs: cpu_secs(pid).unwrap_or(0.0),
    })
}

/// `utime + stime` of `/proc/PID/stat`, in seconds.
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime + stime) as f64 / ticks as f64)
}

/// Samples a process every `every` until stopped.
pub struct Sampler {
    started: Instant,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Reading>>,
}

impl Sampler {
    /// Starts sampling `pid` (the first reading is taken at once).
    pub fn start(pid: u32, every: Duration) -> Self {
        let started = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut readings = Vec::new();
            loop {
                if let Some(reading) = read(pid, started.elapsed()) {
                    readings.push(reading);
                }
                if flag.load(Ordering::Relaxed) {
                    return readings;
                }
                std::thread::sleep(every);
            }
        });
        Self {
            started,
            stop,
            thread,
        }
    }

    /// When the sampler started: the origin of [`Reading::at`].
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Stops after one last reading; returns all readings, oldest first.
    pub fn stop(self) -> Vec<Reading> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// Sockets of this host in `TIME_WAIT` whose local or remote port is `port`
/// (`/proc/net/tcp` and `tcp6`).
pub fn time_wait_sockets(port: u16) -> usize {
    let port = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .map(|table| {
            table
                .lines()
                .skip(1)
                .filter(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    fields.len() > 3
                        && fields[3] == "06"
                        && (fields[1].ends_with(&port) || fields[2].ends_with(&port))
                })
                .count()
        })
        .sum()
}
