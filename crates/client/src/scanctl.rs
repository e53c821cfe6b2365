//! The client side: writing letters into a scanner's `.s6-svscan/control` FIFO, with
//! s6-svscanctl's way of telling "no scanner here" (exit 100) from a failure (exit 111).
//! The diagnosis is s6-svc's, shared through `tend_proto::control::send_in`.

use std::path::Path;
pub use tend_proto::control::SendError;

/// Send `letters` (possibly none: then only check that a scanner listens) to the scanner
/// running on `scandir`, in one write.
pub fn send(scandir: &Path, letters: &[u8]) -> Result<(), SendError> {
    tend_proto::control::send_in(scandir, tend_proto::servicedir::SVSCAN, letters)
}
