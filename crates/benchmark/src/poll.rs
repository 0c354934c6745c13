//! Minimal edge-triggered epoll wrapper: the only unsafe code in the crate.
//!
//! Each connection is registered once for IN|OUT|RDHUP edge-triggered, so
//! the hot path never calls epoll_ctl (redis-benchmark's ae loop re-arms the
//! write handler for every request).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub const READABLE: u32 =
    (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
pub const WRITABLE: u32 = libc::EPOLLOUT as u32;

pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    pub fn new(capacity: usize) -> io::Result<Epoll> {
        // SAFETY: plain syscall; the returned fd is checked and then owned.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll {
            // SAFETY: fd is a fresh, valid descriptor we own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(16)],
        })
    }

    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token,
        };
        // SAFETY: ev is a valid epoll_event for the duration of the call.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn delete(&self, fd: RawFd) {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as above; failure (already closed) is harmless.
        unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
    }

    /// Waits up to `timeout_ms` (-1: forever); returns the number of events.
    pub fn wait(&mut self, timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: the buffer holds events.len() initialised entries.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(e);
        }
        Ok(n as usize)
    }

    /// (token, event flags) of the i-th ready event.
    #[inline]
    pub fn event(&self, i: usize) -> (u64, u32) {
        // Copy out of the (packed) struct before reading fields.
        let ev = self.events[i];
        (ev.u64, ev.events)
    }
}

/// CPU time (user, system) in seconds of the calling thread.
pub fn thread_cpu() -> (f64, f64) {
    rusage(libc::RUSAGE_THREAD)
}

/// CPU time (user, system) in seconds of the whole process.
pub fn process_cpu() -> (f64, f64) {
    rusage(libc::RUSAGE_SELF)
}

fn rusage(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage for getrusage to fill.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

/// Whether stdout is a terminal (the progress line is only shown then).
pub fn stdout_is_tty() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(1) == 1 }
}

/// A timerfd for sub-millisecond open-loop scheduling: epoll_wait's
/// millisecond timeout would make every send up to 1 ms late, and since
/// latency is measured from the intended send time that lateness would be
/// charged to the server.
pub struct Timer {
    fd: OwnedFd,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscalls; the fd is checked and then owned.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // Default timer slack is 50 µs; ask for 1 µs on this thread.
        // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        Ok(Timer {
            // SAFETY: fd is a fresh, valid descriptor we own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Fires once, `after_ns` from now (at least 1 ns).
    pub fn arm(&self, after_ns: u64) -> io::Result<()> {
        let after_ns = after_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (after_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (after_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: spec is valid; old value not requested.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Consumes the expiration count so the edge re-arms.
    pub fn drain(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into buf; EAGAIN is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    }
}
