//! Sending letters to `supervise/control`, with s6-svc's diagnosis of what went wrong.
//!
//! s6 2.11 (`s6_svc_writectl`): open the FIFO write-only and non-blocking. ENXIO means
//! nobody reads it: the supervisor is not listening. ENOENT, ENOTDIR or EISDIR mean the
//! path is wrong somewhere; then the service directory is opened: if that fails it is a
//! plain system error (e.g. a nonexistent servicedir), if `supervise/` is missing the
//! supervisor is not listening (it never ran), otherwise `supervise/` is broken.

use std::path::Path;
use tend_proto::ControlCommand;
use tend_proto::servicedir;

/// Why letters could not be sent (`NotListening`, `Broken`, `Sys`).
pub use tend_proto::control::SendError;

/// Write `letters` to `servicedir/supervise/control` in one write(2). An empty string
/// still opens the FIFO, so it checks that a supervisor listens.
pub fn send(servicedir: &Path, letters: &[u8]) -> Result<(), SendError> {
    tend_proto::control::send_in(servicedir, servicedir::SUPERVISE, letters)
}

/// Send typed commands (at most 8, in one write), as [`send`] sends letters.
pub fn command(servicedir: &Path, cmds: &[ControlCommand]) -> Result<(), SendError> {
    tend_proto::control::send_commands(servicedir, cmds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::errno::Errno;
    use nix::sys::stat::Mode;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tend-client-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn diagnoses_like_s6() {
        let d = scratch("ctl");
        assert_eq!(
            send(&d.join("nonexistent"), b"u"),
            Err(SendError::Sys(Errno::ENOENT))
        );
        assert_eq!(send(&d, b"u"), Err(SendError::NotListening));
        std::fs::create_dir(d.join(tend_proto::servicedir::SUPERVISE)).unwrap();
        assert_eq!(send(&d, b"u"), Err(SendError::Broken(Errno::ENOENT)));
        nix::unistd::mkfifo(
            &d.join(tend_proto::servicedir::CONTROL),
            Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        assert_eq!(send(&d, b"u"), Err(SendError::NotListening));
        std::fs::remove_dir_all(d.join(tend_proto::servicedir::SUPERVISE)).unwrap();
        std::fs::write(d.join(tend_proto::servicedir::SUPERVISE), b"").unwrap();
        assert_eq!(send(&d, b"u"), Err(SendError::Broken(Errno::ENOTDIR)));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
