//! The client side: writing commands into a scanner's `.s6-svscan/control` FIFO, with
//! s6-svscanctl's way of telling "no scanner here" (exit 100) from a failure (exit 111).
//! The diagnosis is s6-svc's, shared through `tend_proto::control::send_in`.

use std::path::Path;
pub use tend_proto::control::SendError;
use tend_proto::control::{ScanCommand, send_in, send_scan};

/// Send `cmds` (possibly none: then only check that a scanner listens) to the scanner
/// running on `scandir`, in one write.
pub fn send(scandir: &Path, cmds: &[ScanCommand]) -> Result<(), SendError> {
    send_scan(scandir, cmds)
}

/// Send letters as given (tend-svscanctl's options, which getopts has checked against
/// `tend_proto::control::SCAN_LETTERS`), so `-i` reaches the scanner as `i`, as from
/// s6-svscanctl.
pub fn send_letters(scandir: &Path, letters: &[u8]) -> Result<(), SendError> {
    send_in(scandir, tend_proto::servicedir::SVSCAN, letters)
}
