//! Waiting for input on the controlling terminal with poll(2), so a terminal that has gone
//! away (window closed, tmux server killed, ssh dropped) is seen as such. crossterm's own poll
//! treats a hung-up terminal as readable-but-empty and loops inside itself without returning,
//! which left `iosat top` spinning at full CPU after its terminal closed. Must not import
//! anything above sys/.

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

/// Wait up to `timeout` for input on standard input (the terminal `iosat top` draws on).
/// Interrupted by a signal counts as a timeout (the caller checks its stop flag). None when
/// standard input is not a terminal (the UI then reads /dev/tty and waits its own way).
pub fn wait_input(timeout: Duration) -> Option<Input> {
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(libc::STDIN_FILENO) } != 1 {
        return None;
    }
    let mut fds = libc::pollfd {
        fd: libc::STDIN_FILENO,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut fds, 1, ms) };
    Some(if n <= 0 {
        Input::Timeout
    } else if fds.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Input::Gone
    } else {
        Input::Ready
    })
}
