//! The toolkit's exit codes (s6's where s6 documents one), in the lowest crate so every
//! library error can say which one it means (`code()`); `tend_cli::code` re-exports them.

/// Success.
pub const OK: i32 = 0;
/// A negative answer (not running, not found).
pub const NO: i32 = 1;
/// A wait timed out.
pub const TIMEOUT: i32 = 99;
/// Wrong usage, or input the program refuses (s6 2.11 also uses it for "supervisor not
/// listening").
pub const USAGE: i32 = 100;
/// A system call failed.
pub const SYSTEM: i32 = 111;
/// exec failed: the file is there but cannot be run.
pub const EXEC_FAILED: i32 = 126;
/// exec failed: the file was not found.
pub const EXEC_NOT_FOUND: i32 = 127;
