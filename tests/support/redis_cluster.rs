//! A throwaway Redis Cluster on loopback: three primaries with one replica
//! each, six `redis-server` processes killed on drop.
//!
//! The nodes are `redis-server` from `PATH` (or `$REDIS_SERVER`), joined by
//! `redis-cli --cluster create` (`$REDIS_CLI`, else the `redis-cli` next to
//! `$REDIS_SERVER` when that is a path, else the one on `PATH`). Missing
//! binaries fail the tests as in `redis_server.rs`, unless
//! `MCP_TASKS_SKIP_REDIS=1` is set.
//!
//! Each node listens on a free loopback port whose cluster bus port
//! (port + 10000) was free too, keeps its `nodes-<port>.conf` in a temporary
//! directory of its own (removed on drop), persists nothing, and takes a peer
//! for failing after [`NODE_TIMEOUT`], so that a killed primary's replica
//! takes over within a few seconds. [`RedisCluster::start`] returns once
//! every node says `cluster_state:ok`, every replica's link to its primary
//! is up, and the node asked for the topology lists each pair.

#[path = "redis_common.rs"]
mod common;

use std::fs::File;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How many nodes: three primaries and a replica each.
const NODES: usize = 6;
/// How far above a node's port its cluster bus port is.
const BUS_OFFSET: u16 = 10_000;
/// `cluster-node-timeout`: how long a silent node takes to be failing.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(1000);
/// How long `redis-cli --cluster create` may run.
const CREATE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the joined cluster may take to be healthy.
const HEALTHY_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the waits ask the nodes again.
const POLL: Duration = Duration::from_millis(50);

/// A running Redis Cluster that nothing else uses.
pub struct RedisCluster {
    /// The nodes in the order they were started.
    nodes: Vec<Node>,
    /// Holds the node directories and the `redis-cli` log.
    root: PathBuf,
    /// The replicas each node stopped by [`Self::kill`] had just before.
    former_replicas: Vec<(u16, Vec<u16>)>,
}

/// One `redis-server`, `None` once killed.
struct Node {
    port: u16,
    child: Option<Child>,
}

/// One node as a line of `CLUSTER NODES` describes it.
#[derive(Clone, Debug)]
pub struct ClusterNode {
    /// Its node id.
    pub id: String,
    /// Its client port on 127.0.0.1.
    pub port: u16,
    /// Flagged `master`.
    pub primary: bool,
    /// Flagged `fail` or `fail?`.
    pub failing: bool,
    /// The id of its primary, for a replica.
    pub primary_id: Option<String>,
    /// How many hash slots it serves.
    pub slots: usize,
    /// The node that answered `CLUSTER NODES` (flagged `myself`).
    pub myself: bool,
}

impl RedisCluster {
    /// Starts six nodes, joins them as three primaries with a replica each
    /// and waits until the cluster is healthy; `None` when Redis is missing
    /// and the tests were told to skip. Panics with the reason otherwise.
    pub fn start() -> Option<Self> {
        let root = common::fresh_dir("mcp-tasks-cluster");
        // Built up in place, so that a failure half way stops what started.
        let mut cluster = Self {
            nodes: Vec::with_capacity(NODES),
            root,
            former_replicas: Vec::new(),
        };
        let binary = common::server_binary();
        for _ in 0..NODES {
            cluster.start_node(&binary)?;
        }
        cluster.create()?;
        cluster.wait_until_healthy(HEALTHY_TIMEOUT);
        cluster.wait_until_paired(HEALTHY_TIMEOUT);
        Some(cluster)
    }

    /// The ports of all six nodes, killed ones included, in start order.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|node| node.port).collect()
    }

    /// `redis://127.0.0.1:<port>` of all six nodes, killed ones included.
    pub fn urls(&self) -> Vec<String> {
        self.ports().into_iter().map(url).collect()
    }

    /// The live primaries (neither killed nor flagged failing), by port.
    pub fn primaries(&self) -> Vec<u16> {
        self.live_ports_where(|node| node.primary)
    }

    /// The live replicas (neither killed nor flagged failing), by port.
    pub fn replicas(&self) -> Vec<u16> {
        self.live_ports_where(|node| !node.primary)
    }

    /// The live replicas of the node on `primary`, by port.
    pub fn replicas_of(&self, primary: u16) -> Vec<u16> {
        let nodes = self.nodes();
        let Some(id) = nodes
            .iter()
            .find(|node| node.port == primary)
            .map(|node| &node.id)
        else {
            panic!("no node on port {primary} in CLUSTER NODES: {nodes:?}");
        };
        self.live_ports_where(|node| node.primary_id.as_ref() == Some(id))
    }

    /// Every node as the first live node lists it (`CLUSTER NODES`).
    pub fn nodes(&self) -> Vec<ClusterNode> {
        let port = self.live().next().expect("a live node");
        nodes_seen_by(port).unwrap_or_else(|failure| panic!("{failure}"))
    }

    /// The value of `field` in the `CLUSTER INFO` of the node on `port`.
    pub fn cluster_info(&self, port: u16, field: &str) -> String {
        let info = self.command(port, &["CLUSTER", "INFO"]);
        match field_of(&info, field) {
            Some(value) => value.to_owned(),
            None => panic!("no {field} in the CLUSTER INFO of node {port}:\n{info}"),
        }
    }

    /// Sends one command to the node on `port` and returns its reply as text
    /// (see `redis_common.rs`); panics on an error reply.
    pub fn command(&self, port: u16, args: &[&str]) -> String {
        common::command(port, args).unwrap_or_else(|failure| panic!("{failure}"))
    }

    /// Waits until every live replica of the node on `primary` has all
    /// that node had written when called (its `slave_repl_offset` reaches
    /// the primary's `master_repl_offset`): replication is asynchronous, and
    /// a test about what a failover keeps of acknowledged writes without
    /// `wait_for_replicas` states this first. Panics after `timeout`.
    pub fn wait_for_replication(&self, primary: u16, timeout: Duration) {
        let offset = |port: u16, field: &str| -> u64 {
            let info = self.command(port, &["INFO", "replication"]);
            field_of(&info, field)
                .and_then(|value| value.parse().ok())
                .unwrap_or_else(|| panic!("no {field} in the INFO of node {port}:\n{info}"))
        };
        let written = offset(primary, "master_repl_offset");
        let deadline = Instant::now() + timeout;
        for replica in self.replicas_of(primary) {
            loop {
                let copied = offset(replica, "slave_repl_offset");
                if copied >= written {
                    break;
                }
                if Instant::now() >= deadline {
                    panic!(
                        "replica {replica} of {primary} at offset {copied} of {written} after {timeout:?}"
                    );
                }
                // The poll interval of a bounded wait.
                std::thread::sleep(POLL);
            }
        }
    }

    /// Stops the node on `port` with SIGKILL (it stays dead), remembering
    /// its replicas for [`Self::wait_for_failover`].
    pub fn kill(&mut self, port: u16) {
        let replicas = self.replicas_of(port);
        let Some(node) = self.nodes.iter_mut().find(|node| node.port == port) else {
            panic!("no node on port {port}");
        };
        let Some(mut child) = node.child.take() else {
            panic!("the node on port {port} was killed already");
        };
        common::kill(&mut child);
        self.former_replicas.push((port, replicas));
    }

    /// Waits until a former replica of `old_primary` (stopped by
    /// [`Self::kill`]) is a primary serving slots and every live node says
    /// `cluster_state:ok` again, and returns that replica's port. Panics
    /// with what it was still waiting for after `timeout`.
    pub fn wait_for_failover(&self, old_primary: u16, timeout: Duration) -> u16 {
        let Some((_, replicas)) = self
            .former_replicas
            .iter()
            .rev()
            .find(|(killed, _)| *killed == old_primary)
        else {
            panic!("the node on port {old_primary} was not stopped by RedisCluster::kill");
        };
        assert!(
            !replicas.is_empty(),
            "the node on port {old_primary} had no replica to take over"
        );
        let deadline = Instant::now() + timeout;
        loop {
            let waiting_for = match self.promoted(replicas) {
                Ok(new_primary) => match self.unhealthy() {
                    None => return new_primary,
                    Some(problem) => problem,
                },
                Err(problem) => problem,
            };
            if Instant::now() >= deadline {
                panic!("no failover of node {old_primary} within {timeout:?}: {waiting_for}");
            }
            // The poll interval of a bounded wait.
            std::thread::sleep(POLL);
        }
    }

    /// Starts one node on fresh ports, trying a few in case one is taken
    /// between the check and the bind; `None` when the tests skip a missing
    /// binary.
    fn start_node(&mut self, binary: &str) -> Option<()> {
        let mut last_failure = String::new();
        for _ in 0..5 {
            let port = free_port_with_bus(&self.ports());
            let dir = self.root.join(format!("node-{port}"));
            std::fs::create_dir_all(&dir).expect("create a node directory");
            let mut child = match spawn(binary, port, &dir) {
                Ok(child) => child,
                Err(error) if error.kind() == ErrorKind::NotFound => {
                    return common::missing(binary);
                }
                Err(error) => panic!("could not start `{binary}`: {error}"),
            };
            match common::wait_until_up(&mut child, port, Duration::from_secs(10)) {
                Ok(()) => {
                    self.nodes.push(Node {
                        port,
                        child: Some(child),
                    });
                    return Some(());
                }
                Err(failure) => {
                    common::kill(&mut child);
                    last_failure = failure;
                }
            }
        }
        panic!("`{binary}` did not come up as a cluster node: {last_failure}");
    }

    /// Joins the nodes with `redis-cli --cluster create`, bounded by
    /// [`CREATE_TIMEOUT`]; `None` when the tests skip a missing `redis-cli`.
    fn create(&self) -> Option<()> {
        let cli = cli_binary();
        let log_path = self.root.join("cluster-create.log");
        let log = File::create(&log_path).expect("create the redis-cli log");
        let mut command = Command::new(&cli);
        command
            .args(["--cluster", "create"])
            .args(self.ports().iter().map(|port| format!("127.0.0.1:{port}")))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("share the redis-cli log"))
            .stderr(log);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) if error.kind() == ErrorKind::NotFound => return common::missing(&cli),
            Err(error) => panic!("could not start `{cli}`: {error}"),
        };
        let deadline = Instant::now() + CREATE_TIMEOUT;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for redis-cli") {
                break status;
            }
            if Instant::now() >= deadline {
                common::kill(&mut child);
                panic!(
                    "`{cli} --cluster create` did not finish within {CREATE_TIMEOUT:?}:\n{}",
                    read_log(&log_path)
                );
            }
            // The poll interval of a bounded wait.
            std::thread::sleep(POLL);
        };
        assert!(
            status.success(),
            "`{cli} --cluster create` failed ({status}):\n{}",
            read_log(&log_path)
        );
        Some(())
    }

    /// Waits until [`Self::unhealthy`] finds nothing, or panics with what it
    /// found last after `within`.
    fn wait_until_healthy(&self, within: Duration) {
        let deadline = Instant::now() + within;
        while let Some(problem) = self.unhealthy() {
            if Instant::now() >= deadline {
                panic!("the cluster was not healthy within {within:?}: {problem}");
            }
            // The poll interval of a bounded wait.
            std::thread::sleep(POLL);
        }
    }

    /// Waits until the node that [`Self::nodes`] asks lists a replica for
    /// every primary (gossip may lag behind the replicas' own links), so
    /// that [`Self::replicas_of`] and a failover see the pairs at once.
    /// Panics after `within`.
    fn wait_until_paired(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let nodes = self.nodes();
            let unpaired = nodes.iter().find(|primary| {
                primary.primary
                    && !nodes
                        .iter()
                        .any(|node| node.primary_id.as_ref() == Some(&primary.id))
            });
            let Some(unpaired) = unpaired else {
                return;
            };
            if Instant::now() >= deadline {
                panic!(
                    "no replica of the primary on port {} is listed: {nodes:?}",
                    unpaired.port
                );
            }
            // The poll interval of a bounded wait.
            std::thread::sleep(POLL);
        }
    }

    /// The first thing that keeps the cluster from serving every slot with
    /// its replicas in sync: a live node whose `cluster_state` is not `ok`,
    /// or a live replica whose `master_link_status` is not `up`.
    fn unhealthy(&self) -> Option<String> {
        for port in self.live() {
            let checked = common::command(port, &["CLUSTER", "INFO"]).and_then(|info| {
                let state = field_of(&info, "cluster_state");
                if state != Some("ok") {
                    return Err(format!("node {port} has cluster_state {state:?}"));
                }
                let replication = common::command(port, &["INFO", "replication"])?;
                let link = field_of(&replication, "master_link_status");
                if field_of(&replication, "role") == Some("slave") && link != Some("up") {
                    return Err(format!("replica {port} has master_link_status {link:?}"));
                }
                Ok(())
            });
            if let Err(problem) = checked {
                return Some(problem);
            }
        }
        None
    }

    /// The first of `replicas` that says it is a primary serving slots.
    fn promoted(&self, replicas: &[u16]) -> Result<u16, String> {
        for &replica in replicas.iter().filter(|&&port| self.is_live(port)) {
            let nodes = nodes_seen_by(replica)?;
            if nodes
                .iter()
                .any(|node| node.myself && node.primary && node.slots > 0)
            {
                return Ok(replica);
            }
        }
        Err(format!(
            "none of the replicas {replicas:?} is a primary yet"
        ))
    }

    /// The ports of the nodes still running.
    fn live(&self) -> impl Iterator<Item = u16> + '_ {
        self.nodes
            .iter()
            .filter(|node| node.child.is_some())
            .map(|node| node.port)
    }

    fn is_live(&self, port: u16) -> bool {
        self.live().any(|live| live == port)
    }

    /// The sorted ports of the live, non-failing nodes that `keep` keeps.
    fn live_ports_where(&self, keep: impl Fn(&ClusterNode) -> bool) -> Vec<u16> {
        let mut ports: Vec<u16> = self
            .nodes()
            .into_iter()
            .filter(|node| !node.failing && self.is_live(node.port) && keep(node))
            .map(|node| node.port)
            .collect();
        ports.sort_unstable();
        ports
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                common::kill(&mut child);
            }
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `redis://127.0.0.1:<port>`.
pub fn url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}")
}

fn spawn(binary: &str, port: u16, dir: &Path) -> std::io::Result<Child> {
    let config = dir.join(format!("nodes-{port}.conf"));
    let node_timeout = NODE_TIMEOUT.as_millis().to_string();
    Command::new(binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--cluster-enabled", "yes", "--cluster-config-file"])
        .arg(config)
        .args(["--cluster-node-timeout", &node_timeout])
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(dir)
        // A replica's first sync waits 5 s for more replicas by default.
        .args(["--repl-diskless-sync-delay", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// `$REDIS_CLI`, else `redis-cli` next to a `$REDIS_SERVER` path, else
/// `redis-cli` from `PATH`.
fn cli_binary() -> String {
    if let Ok(cli) = std::env::var("REDIS_CLI") {
        return cli;
    }
    let server = PathBuf::from(common::server_binary());
    match server.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join("redis-cli").display().to_string(),
        _ => "redis-cli".to_owned(),
    }
}

/// A free loopback port whose bus port is free too, neither of them a port
/// or bus port of the nodes on `taken`.
fn free_port_with_bus(taken: &[u16]) -> u16 {
    let used: Vec<u16> = taken
        .iter()
        .flat_map(|&port| [port, port + BUS_OFFSET])
        .collect();
    for _ in 0..100 {
        let port = common::free_port();
        let Some(bus) = port.checked_add(BUS_OFFSET) else {
            continue;
        };
        if !used.contains(&port)
            && !used.contains(&bus)
            && TcpListener::bind(("127.0.0.1", bus)).is_ok()
        {
            return port;
        }
    }
    panic!("no free loopback port with a free bus port (+{BUS_OFFSET}) in 100 tries");
}

/// The `CLUSTER NODES` of the node on `port`, parsed.
fn nodes_seen_by(port: u16) -> Result<Vec<ClusterNode>, String> {
    common::command(port, &["CLUSTER", "NODES"])?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(parse_node)
        .collect()
}

/// `<id> <ip:port@bus[,hostname]> <flags> <primary id or -> <ping> <pong>
/// <epoch> <link> <slot or range>…`; a `[slot->-id]` entry is a slot being
/// moved, not one served.
fn parse_node(line: &str) -> Result<ClusterNode, String> {
    let bad = || format!("unexpected CLUSTER NODES line {line:?}");
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 8 {
        return Err(bad());
    }
    let address = fields[1].split(['@', ',']).next().unwrap_or_default();
    let port = address
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .ok_or_else(bad)?;
    let flags: Vec<&str> = fields[2].split(',').collect();
    let mut slots = 0;
    for range in fields[8..].iter().filter(|range| !range.starts_with('[')) {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        match (first.parse::<usize>(), last.parse::<usize>()) {
            (Ok(first), Ok(last)) if first <= last => slots += last - first + 1,
            _ => return Err(bad()),
        }
    }
    Ok(ClusterNode {
        id: fields[0].to_owned(),
        port,
        primary: flags.contains(&"master"),
        failing: flags.contains(&"fail") || flags.contains(&"fail?"),
        primary_id: (fields[3] != "-").then(|| fields[3].to_owned()),
        slots,
        myself: flags.contains(&"myself"),
    })
}

/// The value of `name` in an `INFO`-style text of `name:value` lines.
fn field_of<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (key, value) = line.trim_end().split_once(':')?;
        (key == name).then_some(value)
    })
}

/// The `redis-cli` log without its colour codes (it colours a pipe too).
fn read_log(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut plain = String::with_capacity(text.len());
    let mut in_escape = false;
    for character in text.chars() {
        match (in_escape, character) {
            (false, '\u{1b}') => in_escape = true,
            (false, _) => plain.push(character),
            (true, 'm') => in_escape = false,
            (true, _) => {}
        }
    }
    plain
}
