//! envdir: one environment variable per file of a directory, as s6-envdir reads them.
//!
//! A file whose name starts with `.` or contains `=` is skipped. An empty file unsets its
//! variable. Otherwise the value is the first line (trailing spaces, tabs and carriage
//! returns removed unless `nochomp`; `\v` and `\f` are kept, as s6-envdir keeps them), or with `verbatim` the whole file (its last newline removed unless
//! `nochomp`); NUL bytes become `nullis`. Unless `noclamp`, only the first 4095 bytes of a
//! file are read (s6's 4096-byte buffer, one byte kept for its terminator; measured).

use crate::environ::{self, Env};
use crate::sys::Error;
use nix::errno::Errno;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// s6-envdir reads at most this many bytes of a file unless told not to.
pub const CLAMP: usize = 4095;

/// How files are turned into values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// `-f`: the whole file, not only its first line.
    pub verbatim: bool,
    /// `-n`: keep trailing blanks and carriage returns (line mode) or the last newline
    /// (verbatim mode).
    pub nochomp: bool,
    /// `-L`: no 4095-byte clamp.
    pub noclamp: bool,
    /// `-c`: what a NUL byte becomes (default newline).
    pub nullis: u8,
    /// Whose rules: s6-envdir's, or runit's `chpst -e`.
    pub rules: Rules,
}

/// Whose reading of a directory's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rules {
    /// s6-envdir: the options above.
    #[default]
    S6,
    /// runit's `chpst -e` (and its `envdir`): the first line of the whole file (no
    /// clamp), only trailing spaces and tabs removed (a `\r` stays), NUL becomes newline,
    /// an empty file unsets; a subdirectory is skipped instead of failing the read.
    Runit,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            verbatim: false,
            nochomp: false,
            noclamp: false,
            nullis: b'\n',
            rules: Rules::S6,
        }
    }
}

/// One change to the environment: set to a value, or unset (`None`).
pub type Change = (OsString, Option<OsString>);

/// Whether a directory entry names a variable.
pub fn is_variable(name: &[u8]) -> bool {
    !name.is_empty() && name[0] != b'.' && !name.contains(&b'=')
}

/// The bytes s6-envdir removes from the end of a first line: space, tab and carriage
/// return (measured over every byte value against s6-envdir 2.11.3; `\v` and `\f` stay).
pub fn is_chomped(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

/// The value a file's contents give (`None`: unset). `contents` is what was read, already
/// clamped.
pub fn value(contents: &[u8], opts: &Options) -> Option<Vec<u8>> {
    if contents.is_empty() {
        return None;
    }
    let mut v: Vec<u8> = if opts.verbatim {
        let mut end = contents.len();
        if !opts.nochomp && contents[end - 1] == b'\n' {
            end -= 1;
        }
        contents[..end].to_vec()
    } else {
        let line = match contents.iter().position(|&b| b == b'\n') {
            Some(i) => &contents[..i],
            None => contents,
        };
        let mut end = line.len();
        let chomped = |b: u8| match opts.rules {
            Rules::S6 => is_chomped(b),
            Rules::Runit => b == b' ' || b == b'\t',
        };
        if !opts.nochomp {
            while end > 0 && chomped(line[end - 1]) {
                end -= 1;
            }
        }
        line[..end].to_vec()
    };
    for b in v.iter_mut() {
        if *b == 0 {
            *b = opts.nullis;
        }
    }
    Some(v)
}

/// Read a file's contents, at most `CLAMP` bytes unless `noclamp`. Opened non-blocking so
/// a FIFO without a writer reads as empty instead of hanging.
fn read_file(path: &Path, opts: &Options) -> Result<Vec<u8>, Error> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io("open", path, &e))?;
    let mut buf = Vec::new();
    let r = if opts.noclamp || opts.rules == Rules::Runit {
        (&f).read_to_end(&mut buf)
    } else {
        f.take(CLAMP as u64).read_to_end(&mut buf)
    };
    match r {
        Ok(_) => Ok(buf),
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(buf),
        Err(e) => Err(Error::io("read", path, &e)),
    }
}

/// The changes a directory asks for, sorted by name (so the result does not depend on
/// readdir order). A missing directory is an error with errno ENOENT.
pub fn read(dir: &Path, opts: &Options) -> Result<Vec<Change>, Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("open directory", dir, &e))?;
    let mut changes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read directory", dir, &e))?;
        let name = entry.file_name();
        if !is_variable(name.as_bytes()) {
            continue;
        }
        let contents = match read_file(&entry.path(), opts) {
            Err(e) if e.errno == Errno::EISDIR && opts.rules == Rules::Runit => continue,
            r => r?,
        };
        changes.push((name, value(&contents, opts).map(OsString::from_vec)));
    }
    changes.sort();
    Ok(changes)
}

/// Apply changes to an environment.
pub fn apply(env: &mut Env, changes: &[Change]) {
    for (name, v) in changes {
        match v {
            Some(v) => environ::set(env, name, v),
            None => environ::unset(env, name),
        }
    }
}

/// Whether an error means "the directory does not exist" (what `-I` forgives).
pub fn is_missing(e: &Error) -> bool {
    e.errno == Errno::ENOENT && e.op == "open directory"
}

/// `-c`'s argument: its first byte; an empty argument is refused (s6 fails with EINVAL).
pub fn nullis(arg: &OsStr) -> Option<u8> {
    arg.as_bytes().first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(c: &[u8], o: &Options) -> Option<Vec<u8>> {
        value(c, o)
    }

    const F: Options = Options {
        verbatim: true,
        nochomp: false,
        noclamp: false,
        nullis: b'\n',
        rules: Rules::S6,
    };

    #[test]
    fn runit_rules() {
        let o = Options {
            rules: Rules::Runit,
            ..Options::default()
        };
        assert_eq!(v(b"", &o), None);
        assert_eq!(v(b"val \t \nx", &o), Some(b"val".to_vec()));
        assert_eq!(v(b"val\r\n", &o), Some(b"val\r".to_vec()));
        assert_eq!(v(b"a\0b \n", &o), Some(b"a\nb".to_vec()));
        assert_eq!(v(b"\n", &o), Some(b"".to_vec()));
    }

    #[test]
    fn names() {
        assert!(is_variable(b"PATH"));
        assert!(!is_variable(b".hidden"));
        assert!(!is_variable(b"A=B"));
        assert!(!is_variable(b""));
    }

    #[test]
    fn first_line_chomped() {
        let o = Options::default();
        assert_eq!(v(b"", &o), None);
        assert_eq!(v(b"\n", &o), Some(b"".to_vec()));
        assert_eq!(v(b"  \t \n", &o), Some(b"".to_vec()));
        assert_eq!(v(b"tr  \n  \n", &o), Some(b"tr".to_vec()));
        assert_eq!(v(b"x \r\x0b\x0c \t\n", &o), Some(b"x \r\x0b\x0c".to_vec()));
        assert_eq!(v(b"val\r\n", &o), Some(b"val".to_vec()));
        assert_eq!(v(b"v  \t\r \n", &o), Some(b"v".to_vec()));
        assert_eq!(v(b"v\x0b\r", &o), Some(b"v\x0b".to_vec()));
        assert_eq!(v(b" lead", &o), Some(b" lead".to_vec()));
        assert_eq!(v(b"a\0b\nsecond\n", &o), Some(b"a\nb".to_vec()));
        assert_eq!(v(b"\0\0", &o), Some(b"\n\n".to_vec()));
    }

    #[test]
    fn nochomp_keeps_blanks_not_newline() {
        let o = Options {
            nochomp: true,
            ..Options::default()
        };
        assert_eq!(v(b"tr  \n  \n", &o), Some(b"tr  ".to_vec()));
        assert_eq!(v(b"val\r\n", &o), Some(b"val\r".to_vec()));
        assert_eq!(v(b"\n", &o), Some(b"".to_vec()));
    }

    #[test]
    fn verbatim() {
        assert_eq!(v(b"one\ntwo\n\n", &F), Some(b"one\ntwo\n".to_vec()));
        assert_eq!(v(b"tr  \n  \n", &F), Some(b"tr  \n  ".to_vec()));
        assert_eq!(v(b"\n", &F), Some(b"".to_vec()));
        let fnc = Options { nochomp: true, ..F };
        assert_eq!(v(b"one\ntwo\n\n", &fnc), Some(b"one\ntwo\n\n".to_vec()));
        assert_eq!(v(b"a\0b\n", &fnc), Some(b"a\nb\n".to_vec()));
    }

    #[test]
    fn nullis_replaces_nul() {
        let o = Options {
            nullis: b'x',
            ..Options::default()
        };
        assert_eq!(v(b"a\0b\n", &o), Some(b"axb".to_vec()));
        assert_eq!(nullis(OsStr::new("xyz")), Some(b'x'));
        assert_eq!(nullis(OsStr::new("")), None);
    }

    #[test]
    fn apply_sets_and_unsets() {
        let mut env: Env = vec![("A".into(), "1".into()), ("B".into(), "2".into())];
        apply(
            &mut env,
            &[("A".into(), None), ("C".into(), Some("3".into()))],
        );
        assert_eq!(
            env,
            vec![("B".into(), "2".into()), ("C".into(), "3".into())] as Env
        );
    }
}
