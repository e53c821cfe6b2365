//! The error texts of djb's `error_str`, which runit's sv prints in its report lines
//! (`file does not exist`, not strerror's `No such file or directory`): scripts that read
//! sv's output see the same words from tend-sv.

use nix::errno::Errno;

/// runit's text for `e`; strerror's, in lower case, for the errnos its table lacks.
pub fn error_str(e: Errno) -> std::borrow::Cow<'static, str> {
    let s = match e {
        Errno::EINTR => "interrupted system call",
        Errno::ENOMEM => "out of memory",
        Errno::ENOENT => "file does not exist",
        Errno::ETXTBSY => "text busy",
        Errno::EIO => "input/output error",
        Errno::EEXIST => "file already exists",
        Errno::ETIMEDOUT => "timed out",
        Errno::EINPROGRESS => "operation in progress",
        Errno::EAGAIN => "temporary failure",
        Errno::EPIPE => "broken pipe",
        Errno::EPERM => "permission denied",
        Errno::EACCES => "access denied",
        Errno::ENXIO => "device not configured",
        Errno::EPROTO => "protocol error",
        Errno::EISDIR => "is a directory",
        Errno::ECONNREFUSED => "connection refused",
        Errno::ENOTDIR => "not a directory",
        Errno::ESRCH => "no such process",
        Errno::ENOEXEC => "exec format error",
        Errno::EBADF => "file descriptor not open",
        Errno::ELOOP => "symbolic link loop",
        Errno::ENAMETOOLONG => "file name too long",
        other => return other.desc().to_lowercase().into(),
    };
    s.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(error_str(Errno::ENOENT), "file does not exist");
        assert_eq!(error_str(Errno::EACCES), "access denied");
        assert_eq!(error_str(Errno::EROFS), "read-only file system");
    }
}
