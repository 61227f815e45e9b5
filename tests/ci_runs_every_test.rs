//! `.ci/run` runs every test binary: `cargo test` leaves out the library's
//! ones that need a feature and every one of the gateway crate
//! (`gateway/tests/`), so each of those must be named in `.ci/run` (a new one
//! left out would never run in CI and no one would see it).

use std::path::Path;

/// The `[[test]]` entries of `Cargo.toml` that need a feature: their names.
fn gated_tests(manifest: &str) -> Vec<String> {
    let mut gated = Vec::new();
    for block in manifest.split("[[test]]").skip(1) {
        let block = block.split("\n[").next().unwrap_or_default();
        let value = |key: &str| {
            block.lines().find_map(|line| {
                let (name, value) = line.split_once('=')?;
                (name.trim() == key).then(|| value.trim().trim_matches('"').to_owned())
            })
        };
        if let (Some(name), Some(_)) = (value("name"), value("required-features")) {
            gated.push(name);
        }
    }
    gated
}

/// The test targets Cargo finds in `dir` (a crate's `tests/`): one for each
/// `*.rs` file, and one for each folder with a `main.rs` (a binary of
/// several modules); other folders (`support/`) hold shared code.
fn test_targets(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let is_target = if path.is_dir() {
                path.join("main.rs").is_file()
            } else {
                path.extension().is_some_and(|ext| ext == "rs")
            };
            is_target.then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    names.sort();
    names
}

/// The names among `tests` that `ci` never passes to `--test`.
fn not_run<'a>(ci: &str, tests: &'a [String]) -> Vec<&'a String> {
    tests
        .iter()
        .filter(|name| {
            !ci.contains(&format!("--test {name} ")) && !ci.contains(&format!("--test {name}\n"))
        })
        .collect()
}

#[test]
fn every_test_that_needs_a_feature_is_run_by_ci() {
    let manifest = std::fs::read_to_string("Cargo.toml").expect("Cargo.toml");
    let ci = std::fs::read_to_string(".ci/run").expect(".ci/run");
    let gated = gated_tests(&manifest);
    assert!(gated.len() >= 2, "the manifest was read: {gated:?}");
    let missing = not_run(&ci, &gated);
    assert!(missing.is_empty(), ".ci/run does not run {missing:?}");
}

#[test]
fn every_test_of_the_gateway_crate_is_run_by_ci() {
    let ci = std::fs::read_to_string(".ci/run").expect(".ci/run");
    let tests = test_targets(Path::new("gateway/tests"));
    assert!(tests.len() >= 5, "gateway/tests was read: {tests:?}");
    let missing = not_run(&ci, &tests);
    assert!(missing.is_empty(), ".ci/run does not run {missing:?}");
}

#[test]
fn the_reader_finds_a_gated_test_and_skips_an_ungated_one() {
    let manifest = "[[test]]\nname = \"a\"\nrequired-features = [\"x\"]\n\n[[test]]\nname = \"b\"\n\n[[bench]]\nname = \"c\"\nrequired-features = [\"x\"]\n";
    assert_eq!(gated_tests(manifest), ["a"]);
}

#[test]
fn the_reader_finds_files_and_folders_with_a_main_but_not_support() {
    let dir = std::env::temp_dir().join(format!("ci-runs-every-test-{}", std::process::id()));
    for file in [
        "alone.rs",
        "grouped/main.rs",
        "grouped/part.rs",
        "support/mod.rs",
    ] {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        std::fs::write(&path, "").expect("a file");
    }
    let found = test_targets(&dir);
    std::fs::remove_dir_all(&dir).expect("cleaned up");
    assert_eq!(found, ["alone", "grouped"]);
}

#[test]
fn a_target_left_out_of_ci_is_named() {
    let ci = "cargo test --test http --test stdio\n";
    let tests = ["http".to_owned(), "stdio".to_owned(), "durable".to_owned()];
    assert_eq!(not_run(ci, &tests), [&tests[2]]);
}
