//! A FIFO output that a stop can end: opened once a reader has it open, and written as the
//! reader takes the bytes, neither wait beyond a stop's reach. A blocking open(2) or write(2)
//! would wait in the kernel, where a signal (which only requests the stop) does not reach it;
//! here the descriptor does not block, and each wait is a `poll` of a few milliseconds between
//! looks at the stop.

#![allow(unsafe_code)]

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use trawl_stop::Stop;

/// How long one wait lasts before the stop is looked at again.
const POLL: Duration = Duration::from_millis(10);

/// A character device or FIFO written in place; with a stop, a FIFO opened `O_NONBLOCK` whose
/// writes wait for room in the pipe only until the stop is requested.
pub(crate) struct StreamFile {
    file: std::fs::File,
    /// Some while the descriptor does not block.
    stop: Option<Stop>,
}

/// Opens the FIFO `to` for writing once a reader has it open (ENXIO until then, the open
/// tried again every [`POLL`]); None if `stop` is requested first.
pub(crate) fn open(to: &Path, stop: &Stop) -> io::Result<Option<StreamFile>> {
    loop {
        match crate::open_stream(to, libc::O_NONBLOCK) {
            Ok(file) => {
                return Ok(Some(StreamFile {
                    file,
                    stop: Some(stop.clone()),
                }));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
            Err(e) => return Err(e),
        }
        if stop.is_stopping() {
            return Ok(None);
        }
        std::thread::sleep(POLL);
    }
}

impl StreamFile {
    /// A file opened blocking, written as it is.
    pub(crate) fn blocking(file: std::fs::File) -> StreamFile {
        StreamFile { file, stop: None }
    }

    pub(crate) fn file(&self) -> &std::fs::File {
        &self.file
    }

    /// The file, made blocking first (for a caller that writes it itself, by copies the
    /// kernel does).
    pub(crate) fn file_mut(&mut self) -> io::Result<&mut std::fs::File> {
        if self.stop.take().is_some() {
            let fd = self.file.as_raw_fd();
            // SAFETY: fcntl F_GETFL on a descriptor `self.file` owns and keeps open for the
            // call; it reads the descriptor's status flags and touches no memory of ours.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            // SAFETY: as above; F_SETFL sets those flags, less O_NONBLOCK.
            if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(&mut self.file)
    }
}

/// Waits at most [`POLL`] for room to write in the pipe behind `file`.
fn wait_writable(file: &std::fs::File) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: poll on one pollfd that lives on this stack for the call, its descriptor owned
    // by `file` and open.
    let r = unsafe { libc::poll(&mut pfd, 1, POLL.as_millis() as libc::c_int) };
    match r < 0 {
        true => match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            e => Err(e),
        },
        false => Ok(()),
    }
}

impl Write for StreamFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match self.file.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return r,
            }
            let Some(stop) = &self.stop else {
                return Err(io::ErrorKind::WouldBlock.into());
            };
            if stop.is_stopping() {
                // Not `Interrupted`, which `write_all` would try again.
                return Err(io::Error::other(
                    "stopped while the FIFO's reader was not reading",
                ));
            }
            wait_writable(&self.file)?;
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
