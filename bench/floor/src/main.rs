//! The floor of a request's cost: a server that does nothing but answer
//! each line it receives with `+PONG`, in two forms, to measure what the
//! kernel's path costs per request with no server work at all.
//!
//! - `epoll`: one thread, level-triggered epoll, one `read` and one
//!   `write` per ready connection (the shape of Redis's and keel's loops).
//! - `uring`: one thread, one io_uring: multishot accept, a `recv` in
//!   flight per connection, the `send` of its replies submitted with every
//!   other connection's in one `io_uring_enter` per round.
//!
//! Usage: keel-floor epoll|uring PORT. Replies are a few bytes: a short
//! write is not retried (it does not happen at these sizes).

use std::net::TcpListener;
use std::os::fd::{AsRawFd, IntoRawFd};

/// `+PONG` for each line of `input`, into `out`.
fn answer(input: &[u8], out: &mut Vec<u8>) {
    out.clear();
    for _ in input.iter().filter(|&&c| c == b'\n') {
        out.extend_from_slice(b"+PONG\r\n");
    }
}

fn set_nodelay(fd: i32) {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on an open socket with an int-sized option.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn serve_epoll(listener: TcpListener) {
    listener.set_nonblocking(true).unwrap();
    // SAFETY: plain epoll calls on descriptors this function owns.
    let ep = unsafe { libc::epoll_create1(0) };
    let watch = |fd: i32| unsafe {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev);
    };
    watch(listener.as_raw_fd());
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 512];
    let mut input = vec![0u8; 16384];
    let mut out = Vec::with_capacity(16384);
    loop {
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, -1) };
        for ev in &events[..n.max(0) as usize] {
            let fd = ev.u64 as i32;
            if fd == listener.as_raw_fd() {
                while let Ok((s, _)) = listener.accept() {
                    s.set_nonblocking(true).unwrap();
                    set_nodelay(s.as_raw_fd());
                    watch(s.into_raw_fd());
                }
                continue;
            }
            let got = unsafe { libc::read(fd, input.as_mut_ptr().cast(), input.len()) };
            if got == 0
                || (got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN))
            {
                unsafe { libc::close(fd) };
                continue;
            }
            if got < 0 {
                continue;
            }
            answer(&input[..got as usize], &mut out);
            unsafe { libc::write(fd, out.as_ptr().cast(), out.len()) };
        }
    }
}

fn serve_uring(listener: TcpListener) {
    use io_uring::{opcode, types, IoUring};
    struct Conn {
        fd: i32,
        input: Vec<u8>,
        out: Vec<u8>,
    }
    const ACCEPT: u64 = u64::MAX;
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_coop_taskrun()
        .setup_defer_taskrun()
        .build(4096)
        .expect("io_uring (Linux 6.1 or later)");
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let accept = opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd()))
        .build()
        .user_data(ACCEPT);
    // SAFETY: every buffer a queued entry points into lives in `conns`
    // until that entry's completion is reaped.
    unsafe { ring.submission().push(&accept).unwrap() };
    let recv = |c: &mut Conn, slot: usize| {
        opcode::Recv::new(types::Fd(c.fd), c.input.as_mut_ptr(), c.input.len() as u32)
            .build()
            .user_data((slot as u64) << 1)
    };
    let mut done = Vec::new();
    loop {
        ring.submit_and_wait(1).unwrap();
        done.clear();
        done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for &(tag, res) in &done {
            if tag == ACCEPT {
                if res >= 0 {
                    set_nodelay(res);
                    let slot = conns.iter().position(Option::is_none).unwrap_or_else(|| {
                        conns.push(None);
                        conns.len() - 1
                    });
                    let c = conns[slot].insert(Conn {
                        fd: res,
                        input: vec![0; 16384],
                        out: Vec::with_capacity(16384),
                    });
                    let e = recv(c, slot);
                    unsafe { ring.submission().push(&e).unwrap() };
                }
                continue;
            }
            let slot = (tag >> 1) as usize;
            let Some(c) = conns[slot].as_mut() else {
                continue;
            };
            let e = if tag & 1 == 0 {
                if res <= 0 {
                    unsafe { libc::close(c.fd) };
                    conns[slot] = None;
                    continue;
                }
                answer(&c.input[..res as usize], &mut c.out);
                opcode::Send::new(types::Fd(c.fd), c.out.as_ptr(), c.out.len() as u32)
                    .build()
                    .user_data(tag | 1)
            } else {
                recv(c, slot)
            };
            unsafe { ring.submission().push(&e).unwrap() };
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(form), Some(port)) = (args.next(), args.next()) else {
        eprintln!("usage: keel-floor epoll|uring PORT");
        std::process::exit(2);
    };
    let listener = TcpListener::bind(format!("127.0.0.1:{port}")).expect("bind");
    match form.as_str() {
        "epoll" => serve_epoll(listener),
        "uring" => serve_uring(listener),
        _ => {
            eprintln!("usage: keel-floor epoll|uring PORT");
            std::process::exit(2);
        }
    }
}
