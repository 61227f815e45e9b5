//! The benchmark's own `redis-server` and `redis-benchmark` runs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::REDIS_BENCHMARK_REQUESTS;

/// `/proc/loadavg`, to show how busy the machine was.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// A `redis-server` of this run only, on a free loopback port, without
/// persistence; killed on drop (also when a measurement panics).
pub struct RedisServer {
    child: Child,
    pub port: u16,
}

impl RedisServer {
    pub fn start() -> Self {
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        // A port found free may be taken before redis binds it: try a few.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free loopback port")
                .port();
            let child = Command::new(&binary)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|error| panic!("could not start `{binary}`: {error}"));
            let mut server = Self { child, port };
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // exited: most likely the port was taken
                }
                if ping(port) {
                    return server;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            drop(server);
        }
        panic!("`{binary}` did not come up");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}

/// Runs `redis-benchmark` on `connections` connections with `pipeline`
/// requests in flight on each; returns GET and SET requests per second
/// (NaN for a test not run).
pub fn redis_benchmark(port: u16, connections: usize, pipeline: usize, tests: &str) -> (f64, f64) {
    let args = [
        "-h".to_owned(),
        "127.0.0.1".to_owned(),
        "-p".to_owned(),
        port.to_string(),
        "-t".to_owned(),
        tests.to_owned(),
        "-n".to_owned(),
        REDIS_BENCHMARK_REQUESTS.to_string(),
        "-c".to_owned(),
        connections.to_string(),
        "-P".to_owned(),
        pipeline.to_string(),
        "-q".to_owned(),
        "--csv".to_owned(),
    ];
    eprintln!("running: redis-benchmark {}", args.join(" "));
    let output = Command::new("redis-benchmark")
        .args(&args)
        .output()
        .expect("run redis-benchmark (install redis-tools / redis-server)");
    assert!(
        output.status.success(),
        "redis-benchmark failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("utf-8 csv");
    // "test","rps","avg_latency_ms",…  then  "SET","123456.79",…
    let rps = |test: &str| -> f64 {
        if !tests.contains(&test.to_ascii_lowercase()) {
            return f64::NAN;
        }
        text.lines()
            .find_map(|line| {
                let mut fields = line.split(',').map(|f| f.trim_matches('"'));
                (fields.next() == Some(test)).then(|| fields.next()?.parse().ok())?
            })
            .unwrap_or_else(|| panic!("no {test} line in redis-benchmark output:\n{text}"))
    };
    (rps("GET"), rps("SET"))
}
