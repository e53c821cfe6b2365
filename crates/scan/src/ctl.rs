//! The client side: writing letters into a scanner's `.s6-svscan/control` FIFO, with
//! s6-svscanctl's way of telling "no scanner here" (exit 100) from a failure (exit 111).

use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::sys::stat::Mode;
use std::path::Path;
use tend_sys::Error;

/// Why the letters could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CtlError {
    /// No scanner reads the FIFO (or there is no `.s6-svscan` control directory).
    NotRunning,
    /// Anything else: the directory is missing, permissions, …
    Sys(Error),
}

/// Send `letters` (possibly none: then only check that a scanner listens) to the scanner
/// running on `scandir`, in one write.
pub fn send(scandir: &Path, letters: &[u8]) -> Result<(), CtlError> {
    let fifo = scandir.join(crate::scanner::CONTROL_FIFO);
    match tend_proto::control::send(&fifo, letters) {
        Ok(()) => Ok(()),
        Err(Errno::ENXIO) => Err(CtlError::NotRunning),
        Err(Errno::ENOENT) => {
            // Missing FIFO: no scanner if the directory exists, else the directory's error.
            let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
            match open(scandir, flags, Mode::empty()) {
                Ok(fd) => {
                    let _ = nix::unistd::close(fd);
                    Err(CtlError::NotRunning)
                }
                Err(e) => Err(CtlError::Sys(Error::at("control", scandir, e))),
            }
        }
        Err(e) => Err(CtlError::Sys(Error::at("control", scandir, e))),
    }
}
