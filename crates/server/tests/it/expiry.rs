//! Key expiry: lazy (on access) and active (the background cycle).

use std::time::{Duration, Instant};

use crate::harness::*;
use crate::{ck, eqb, q};

#[tokio::test]
async fn lazy_expiry_on_access() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SET k v PX 50", ok());
    ck!(c, "SET k2 v", ok());
    ck!(c, "PEXPIRE k2 50", int(1));
    ck!(c, "SET k3 v PX 50", ok());
    ck!(c, "SET k4 v PX 50", ok());
    ck!(c, "SET keep v", ok());
    ck!(c, "GET k", bulk("v"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    ck!(c, "GET k", nil());
    ck!(c, "EXISTS k2", int(0));
    ck!(c, "TTL k3", int(-2));
    ck!(c, "STRLEN k4", int(0));
    ck!(c, "KEYS k*", arr(vec![b("keep")]));
    ck!(c, "RENAME k3 x", err("ERR no such key"));
    ck!(c, "INCR k4", int(1));
    ck!(c, "TTL k4", int(-1));
    ck!(c, "SET k v NX", ok());
    ck!(c, "TTL k", int(-1));
}

#[tokio::test]
async fn active_expiry_removes_untouched_keys() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut raw = s.raw();
    // 1000 keys with PX 100, pipelined in one write; never read again.
    let mut wire = Vec::new();
    for i in 0..1000 {
        resp::encode::command(
            &mut wire,
            &[
                "SET".to_string(),
                format!("vol:{i}"),
                "v".into(),
                "PX".into(),
                "100".into(),
            ],
        );
    }
    raw.send(&wire);
    for _ in 0..1000 {
        eqb!(raw.read_reply(), b"+OK\r\n");
    }
    ck!(c, "SET persistent v", ok());
    let start = Instant::now();
    loop {
        let n = as_int(&q!(c, "DBSIZE"));
        if n == 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_millis(2500),
            "DBSIZE still {n} after {:?}: keys with PX 100 are not actively expired",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let info = q!(c, "INFO stats");
    let info = text(info.as_ref().unwrap());
    assert_eq!(
        info_field(&info, "expired_keys").as_deref(),
        Some("1000"),
        "{info}"
    );
    let ks = q!(c, "INFO keyspace");
    let ks = text(ks.as_ref().unwrap());
    assert!(ks.contains("db0:keys=1,expires=0,avg_ttl=0\r\n"), "{ks}");
    ck!(c, "GET persistent", bulk("v"));
}
