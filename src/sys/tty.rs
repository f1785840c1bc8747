//! Standard output's terminal width (TIOCGWINSZ), and waiting for input on the controlling terminal
//! with poll(2), so a terminal that has gone away (window closed, tmux server killed, ssh dropped)
//! is seen as such. crossterm's own poll treats a hung-up terminal as readable-but-empty and loops
//! inside itself without returning, which left `iosat top` spinning at full CPU after its terminal
//! closed. The same wait also ends when another thread rings a [`Wake`] (a pipe), so the UI sleeps
//! until there is input or something to draw.
//! Imports only: sys/, error, units.

use std::time::Duration;

/// What the terminal did within the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Bytes are waiting to be read.
    Ready,
    /// Nothing arrived.
    Timeout,
    /// The terminal hung up or its descriptor failed: no input will ever come.
    Gone,
}

/// True when standard output is a terminal (not a pipe or a file).
pub fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal()
}

/// Standard output's terminal width in columns; None when standard output is not a terminal
/// (a pipe, a file) or the terminal does not say (a pty whose size was never set).
pub fn stdout_columns() -> Option<usize> {
    if !stdout_is_terminal() {
        return None;
    }
    columns_of(libc::STDOUT_FILENO)
}

/// Standard error's terminal width (the sweep's redrawn progress line), as
/// [`stdout_columns`].
pub fn stderr_columns() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    columns_of(libc::STDERR_FILENO)
}

fn columns_of(fd: libc::c_int) -> Option<usize> {
    // SAFETY: winsize is plain integers; TIOCGWINSZ fills it for a terminal.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// A doorbell another thread rings to end a [`wait_input`] early (a pipe: `iosat top`'s
/// sampling thread rings it when a report is in the channel, so the UI sleeps until there is
/// something to draw instead of waking 20 times a second to look).
pub struct Wake {
    read: std::os::fd::OwnedFd,
    write: std::os::fd::OwnedFd,
}

impl Wake {
    pub fn new() -> std::io::Result<Wake> {
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors on success, which are owned from here on.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors are fresh and owned by nothing else.
        Ok(unsafe {
            Wake {
                read: std::os::fd::OwnedFd::from_raw_fd(fds[0]),
                write: std::os::fd::OwnedFd::from_raw_fd(fds[1]),
            }
        })
    }

    /// Ring (never blocks: a full pipe is already ringing).
    pub fn ring(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: one byte from a valid buffer to a descriptor we own.
        unsafe { libc::write(self.write.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }

    /// Empty the pipe after a ring was seen.
    fn drain(&self) {
        use std::os::fd::AsRawFd;
        let mut buf = [0u8; 64];
        // SAFETY: reads into a valid buffer of its length; the descriptor is non-blocking.
        while unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {
        }
    }
}

/// Wait up to `timeout` for input on standard input (the terminal `iosat top` draws on), or
/// for `wake` to ring (that returns Timeout: nothing to read from the terminal). Interrupted by
/// a signal counts as a timeout (the caller checks its stop flag). None when standard input is
/// not a terminal (the UI then reads /dev/tty and waits its own way).
pub fn wait_input(timeout: Duration, wake: Option<&Wake>) -> Option<Input> {
    use std::os::fd::AsRawFd;
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(libc::STDIN_FILENO) } != 1 {
        return None;
    }
    let mut fds = [
        libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.map_or(-1, |w| w.read.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: two valid pollfds for the duration of the call (a negative fd is ignored).
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
    if n > 0 && fds[1].revents != 0 {
        if let Some(w) = wake {
            w.drain();
        }
    }
    let tty = fds[0].revents;
    Some(if n <= 0 || tty == 0 {
        Input::Timeout
    } else if tty & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Input::Gone
    } else {
        Input::Ready
    })
}
