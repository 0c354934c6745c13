//! keel-ctl as an operator runs it. (Its verbs against running nodes and
//! etcd are exercised by keel-server's cluster tests, which run this
//! binary; this test also makes `cargo test` build it for them.)

use std::process::Command;

#[test]
fn help_lists_every_verb() {
    let out = Command::new(env!("CARGO_BIN_EXE_keel-ctl"))
        .arg("--help")
        .output()
        .expect("run keel-ctl");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for verb in [
        "create",
        "check",
        "info",
        "add-node",
        "del-node",
        "failover",
        "rebalance",
        "fix",
        "reshard",
    ] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(verb)),
            "{verb} missing from:\n{text}"
        );
    }
}

#[test]
fn an_unreachable_etcd_is_an_error_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_keel-ctl"))
        .args(["--etcd", "127.0.0.1:1", "check"])
        .output()
        .expect("run keel-ctl");
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.starts_with("[ERR]"), "{text}");
}
