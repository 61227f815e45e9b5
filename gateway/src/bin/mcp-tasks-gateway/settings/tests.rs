//! The settings' own checks: precedence of the command line over the
//! file, the list and stdio options, unknown keys, the OAuth audiences.

use std::time::Duration;

use super::*;

#[test]
fn the_command_line_wins_over_the_file_and_fills_from_it() {
    let command_line = Args::parse_from(["gw", "--threshold", "250ms", "--policy", "a=never"]);
    let file: Args = toml::from_str(
        r#"
        upstream = "http://127.0.0.1:9/mcp"
        threshold = "2s"
        max-ttl = "2h"
        policy = ["b=always"]
        "#,
    )
    .unwrap();
    let merged = command_line.over(file);
    assert_eq!(merged.upstream.as_deref(), Some("http://127.0.0.1:9/mcp"));
    assert_eq!(
        merged.threshold,
        Some(Human(Some(Duration::from_millis(250))))
    );
    assert_eq!(merged.max_ttl, Some(Human(Some(Duration::from_secs(7200)))));
    assert_eq!(merged.policy, vec!["a=never".parse().unwrap()]);
}

#[test]
fn the_sqlite_file_is_read_from_the_command_line_or_the_file() {
    let file: Args = toml::from_str(r#"sqlite = "/var/lib/gw/tasks.db""#).unwrap();
    let merged = Args::parse_from(["gw"]).over(file);
    assert_eq!(merged.sqlite, Some(PathBuf::from("/var/lib/gw/tasks.db")));
    let command_line = Args::parse_from(["gw", "--sqlite", "here.db"]);
    let file: Args = toml::from_str(r#"sqlite = "there.db""#).unwrap();
    assert_eq!(
        command_line.over(file).sqlite,
        Some(PathBuf::from("here.db"))
    );
}

#[test]
fn a_stdio_command_comes_after_the_double_dash_or_from_the_file() {
    let args = Args::parse_from([
        "gw", "--env", "A=1", "--env", "B=x=y", "--cwd", "/srv", "--", "npx", "-y", "pkg", "--flag",
    ]);
    assert_eq!(args.command, ["npx", "-y", "pkg", "--flag"]);
    assert_eq!(args.env[1], "B=x=y".parse().unwrap());
    assert_eq!(args.env[1].value, "x=y");
    assert_eq!(args.cwd, Some(PathBuf::from("/srv")));
    assert!("=1".parse::<EnvVar>().is_err());
    let file: Args = toml::from_str(
        r#"
        command = ["python3", "server.py"]
        env = ["TOKEN=abc"]
        cwd = "/opt/server"
        "#,
    )
    .unwrap();
    let merged = Args::parse_from(["gw"]).over(file);
    assert_eq!(merged.command, ["python3", "server.py"]);
    assert_eq!(merged.env, vec!["TOKEN=abc".parse().unwrap()]);
    assert_eq!(merged.cwd, Some(PathBuf::from("/opt/server")));
}

#[test]
fn an_unknown_file_key_is_an_error() {
    let result: Result<Args, _> = toml::from_str("treshold = \"1s\"");
    assert!(result.is_err());
}

#[test]
fn the_oauth_audience_is_one_value_or_a_list() {
    let file: Args = toml::from_str(r#"oauth-audience = "https://mcp.example/mcp""#).unwrap();
    assert_eq!(file.oauth_audience, ["https://mcp.example/mcp"]);
    let file: Args = toml::from_str(r#"oauth-audience = ["mcp-gateway", "account"]"#).unwrap();
    assert_eq!(file.oauth_audience, ["mcp-gateway", "account"]);
    let args = Args::parse_from(["gw", "--oauth-audience", "a,b", "--oauth-audience", "c"]);
    assert_eq!(args.oauth_audience, ["a", "b", "c"]);
}
