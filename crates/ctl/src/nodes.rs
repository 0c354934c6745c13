//! Questions to keel nodes over the Redis protocol.

use std::time::Duration;

use anyhow::{Context, Result};

pub struct Conn(redis::Connection);

impl Conn {
    pub fn open(addr: &str) -> Result<Conn> {
        let client = redis::Client::open(format!("redis://{addr}/"))?;
        let conn = client
            .get_connection_with_timeout(Duration::from_secs(3))
            .with_context(|| format!("connecting to {addr}"))?;
        Ok(Conn(conn))
    }

    pub fn cmd<T: redis::FromRedisValue>(&mut self, args: &[&str]) -> Result<T> {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        Ok(c.query(&mut self.0)?)
    }

    /// One `field:value` of CLUSTER INFO or an INFO section.
    pub fn info_field(&mut self, args: &[&str], field: &str) -> Result<Option<String>> {
        let text: String = self.cmd(args)?;
        Ok(text.lines().find_map(|l| {
            l.strip_prefix(field)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        }))
    }
}
