//! The system error every tend library returns: what was attempted, on what, and the errno.

use nix::errno::Errno;
use std::fmt;
use std::path::{Path, PathBuf};

/// A failed system call: `unable to OP PATH: strerror`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub op: &'static str,
    pub path: Option<PathBuf>,
    pub errno: Errno,
}

impl Error {
    pub fn new(op: &'static str, errno: Errno) -> Error {
        Error {
            op,
            path: None,
            errno,
        }
    }

    pub fn at(op: &'static str, path: impl AsRef<Path>, errno: Errno) -> Error {
        Error {
            op,
            path: Some(path.as_ref().to_path_buf()),
            errno,
        }
    }

    /// Turn a std::io::Error into ours (std's text adds "(os error N)"; ours is bare).
    pub fn io(op: &'static str, path: impl AsRef<Path>, e: &std::io::Error) -> Error {
        let errno = e.raw_os_error().map(Errno::from_raw).unwrap_or(Errno::EIO);
        Error::at(op, path, errno)
    }
}

/// A std::io::Error's reason as our messages give it: the bare strerror text (std's
/// Display adds "(os error N)"), or std's own text for an error that is not the system's.
pub fn io_reason(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => Errno::from_raw(n).desc().to_string(),
        None => e.to_string(),
    }
}

impl Error {
    /// The exit code for a failed system call.
    pub fn code(&self) -> i32 {
        crate::code::SYSTEM
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(
                f,
                "unable to {} {}: {}",
                self.op,
                p.display(),
                self.errno.desc()
            ),
            None => write!(f, "unable to {}: {}", self.op, self.errno.desc()),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_grammar() {
        let e = Error::at("open", "/x/y", Errno::ENOENT);
        assert_eq!(
            e.to_string(),
            "unable to open /x/y: No such file or directory"
        );
        assert!(
            Error::new("fork", Errno::EAGAIN)
                .to_string()
                .starts_with("unable to fork: ")
        );
    }
}
