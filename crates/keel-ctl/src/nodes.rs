//! Questions to keel nodes over the Redis protocol: one blocking
//! connection, one request at a time (keel-ctl asks a few questions per
//! node, so the protocol crate's reply parser is all it needs).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use resp::reply::Value;

pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn open(addr: &str) -> Result<Conn> {
        let sock = addr
            .parse()
            .with_context(|| format!("{addr} is not an ip:port address"))?;
        let stream = TcpStream::connect_timeout(&sock, Duration::from_secs(3))
            .with_context(|| format!("connecting to {addr}"))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
        })
    }

    /// Sends one command and reads its reply; an error reply is an error.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Value> {
        let mut out = Vec::new();
        resp::encode::command(&mut out, args);
        self.stream.write_all(&out)?;
        loop {
            if let Some((value, used)) = resp::reply::parse_reply(&self.buf)
                .map_err(|_| anyhow::anyhow!("malformed reply"))?
            {
                self.buf.drain(..used);
                if let Value::Error(e) = &value {
                    let name = String::from_utf8_lossy(args[0].as_ref()).into_owned();
                    bail!("{name}: {}", String::from_utf8_lossy(e));
                }
                return Ok(value);
            }
            let mut chunk = [0u8; 16384];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                bail!("connection closed");
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    pub fn text(&mut self, args: &[&str]) -> Result<String> {
        match self.call(args)? {
            Value::Bulk(b) | Value::Simple(b) | Value::Verbatim(b) => {
                Ok(String::from_utf8_lossy(&b).into_owned())
            }
            other => bail!("{}: unexpected reply {other:?}", args.join(" ")),
        }
    }

    /// An array of bulk strings.
    pub fn list<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Vec<Vec<u8>>> {
        match self.call(args)? {
            Value::Array(items) => Ok(items
                .into_iter()
                .filter_map(|v| match v {
                    Value::Bulk(b) => Some(b),
                    _ => None,
                })
                .collect()),
            other => bail!("unexpected reply {other:?}"),
        }
    }

    pub fn int(&mut self, args: &[&str]) -> Result<i64> {
        match self.call(args)? {
            Value::Integer(n) => Ok(n),
            other => bail!("{}: unexpected reply {other:?}", args.join(" ")),
        }
    }

    /// One `field:value` of CLUSTER INFO or an INFO section.
    pub fn info_field(&mut self, args: &[&str], field: &str) -> Result<Option<String>> {
        let text = self.text(args)?;
        Ok(text.lines().find_map(|l| {
            l.strip_prefix(field)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        }))
    }
}
