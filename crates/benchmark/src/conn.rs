//! Sockets: TCP or unix-domain streams behind one type, the blocking
//! connect + handshake (AUTH, CLIENT TRACKING, HELLO 3, SELECT) every
//! benchmark connection does before it goes non-blocking.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

use anyhow::{anyhow, Result};

use crate::cli::{Config, Target};

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<crate::tls::TlsStream>),
}

impl Stream {
    pub fn connect(target: &Target) -> io::Result<Stream> {
        match &target.socket {
            Some(path) => Ok(Stream::Unix(UnixStream::connect(path)?)),
            None => {
                let s = TcpStream::connect((target.host.as_str(), target.port))?;
                // As hiredis does: latency matters more than packet count.
                s.set_nodelay(true)?;
                if crate::tls::enabled() {
                    let t = crate::tls::TlsStream::connect(s, &target.host)?;
                    return Ok(Stream::Tls(Box::new(t)));
                }
                Ok(Stream::Tcp(s))
            }
        }
    }

    pub fn set_nonblocking(&self, nb: bool) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(nb),
            Stream::Unix(s) => s.set_nonblocking(nb),
            Stream::Tls(s) => s.socket().set_nonblocking(nb),
        }
    }

    pub fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.socket().as_raw_fd(),
        }
    }

    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }

    #[inline]
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    pub fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
            Stream::Tls(s) => s.write(buf).map(|_| ()),
        }
    }
}

/// Commands every benchmark connection sends first, in redis-benchmark's
/// order: AUTH, CLIENT TRACKING on, HELLO 3, SELECT.
pub fn handshake_commands(cfg: &Config, cluster_client: bool) -> Vec<Vec<Vec<u8>>> {
    let mut cmds = Vec::new();
    if let Some(pass) = &cfg.auth {
        let mut c = vec![b"AUTH".to_vec()];
        if let Some(user) = &cfg.user {
            c.push(user.as_bytes().to_vec());
        }
        c.push(pass.as_bytes().to_vec());
        cmds.push(c);
    }
    if cfg.tracking {
        cmds.push(vec![
            b"CLIENT".to_vec(),
            b"TRACKING".to_vec(),
            b"on".to_vec(),
        ]);
    }
    if cfg.resp3 {
        cmds.push(vec![b"HELLO".to_vec(), b"3".to_vec()]);
    }
    if cfg.dbnum != 0 && !cluster_client {
        cmds.push(vec![b"SELECT".to_vec(), cfg.dbnum.to_string().into_bytes()]);
    }
    cmds
}

/// Sends `cmds` on a blocking stream and reads one reply per command;
/// an error reply aborts with redis-benchmark's message.
pub fn handshake(stream: &mut Stream, cmds: &[Vec<Vec<u8>>], target: &Target) -> Result<()> {
    if cmds.is_empty() {
        return Ok(());
    }
    let mut out = Vec::new();
    for c in cmds {
        resp::encode::command(&mut out, c);
    }
    stream.write_all(&out)?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut got = 0;
    while got < cmds.len() {
        match resp::parse_reply(&buf)? {
            Some((v, n)) => {
                buf.drain(..n);
                match v {
                    resp::Value::Push(_) => continue,
                    resp::Value::Error(e) => {
                        return Err(anyhow!(
                            "Node {} replied with error:\n{}",
                            target.label(),
                            String::from_utf8_lossy(&e)
                        ))
                    }
                    _ => got += 1,
                }
            }
            None => {
                let n = stream.read(&mut chunk)?;
                if n == 0 {
                    return Err(anyhow!("Server {} closed the connection", target.label()));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
    Ok(())
}

/// Connects, performs the handshake, and switches to non-blocking mode.
pub fn open(target: &Target, cmds: &[Vec<Vec<u8>>]) -> Result<Stream> {
    let mut s = Stream::connect(target)
        .map_err(|e| anyhow!("Could not connect to Redis at {}: {}", target.label(), e))?;
    handshake(&mut s, cmds, target)?;
    s.set_nonblocking(true)?;
    Ok(s)
}
