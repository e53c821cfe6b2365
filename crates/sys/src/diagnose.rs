//! Why an exec failed, in words: the kernel says only ENOENT, EACCES or ENOEXEC, and
//! "./run: No such file or directory" for a file that plainly exists (a CRLF `#!` line, a
//! missing interpreter or dynamic loader) is the classic "why won't it start" trap.
//!
//! [`diagnose`] looks at the file *after* execve failed, never before: the success path of
//! a spawn makes no extra system call. It reads at most the first 256 bytes (the kernel's
//! `#!` buffer) and an ELF file's program headers, and stats what they name. Every caller
//! (tend-supervise's spawn-error record and warnings, the chain-loaders' 126/127 exits,
//! tend-check, tend-init) prints the same text: [`ExecDiagnosis`]'s Display, which falls
//! back to the bare strerror text when nothing more is known.

use nix::errno::Errno;
use std::ffi::{CString, OsStr};
use std::fmt;
use std::fs::File;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What the kernel reads of a file to find a `#!` line (BINPRM_BUF_SIZE).
const HEAD: usize = 256;

/// How deep `#!` interpreters are followed (the kernel allows 4 levels too).
const MAX_DEPTH: u32 = 4;

/// Why exec of a file failed, as far as looking at it tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecDiagnosis {
    /// The `#!` line names an interpreter that does not exist; `crlf` when the name
    /// ends in a carriage return (a script saved with Windows line endings).
    InterpreterMissing { interpreter: Vec<u8>, crlf: bool },
    /// The `#!` interpreter exists but cannot be exec'd itself, for the nested reason.
    InterpreterFailed {
        interpreter: Vec<u8>,
        why: Box<ExecDiagnosis>,
    },
    /// An ELF file whose program interpreter (PT_INTERP, the dynamic loader) is missing.
    LoaderMissing { loader: Vec<u8> },
    /// A symlink whose target does not exist.
    DanglingSymlink { target: Vec<u8> },
    /// A directory.
    Directory,
    /// Not a regular file: a FIFO, a socket, a device.
    NotRegular { kind: &'static str },
    /// On a filesystem mounted noexec (mount point when found).
    NoexecMount { mount: Option<PathBuf> },
    /// No execute permission (the file's mode).
    NotExecutable { mode: u32 },
    /// An empty file.
    Empty,
    /// Neither ELF nor `#!`.
    UnknownFormat,
    /// A `#!` line that names no interpreter, or is longer than the kernel reads.
    BadShebang { too_long: bool },
    /// An ELF file for another machine.
    ForeignArch { machine: &'static str, code: u16 },
    /// An ELF file that is not a program (object file, core dump, other class).
    NotElfProgram { what: &'static str },
    /// Nothing more than the errno.
    Errno(Errno),
}

/// The machine this was built for, as ELF's e_machine.
const NATIVE_MACHINE: u16 = if cfg!(target_arch = "x86_64") {
    62
} else if cfg!(target_arch = "aarch64") {
    183
} else if cfg!(target_arch = "x86") {
    3
} else if cfg!(target_arch = "arm") {
    40
} else if cfg!(target_arch = "riscv64") {
    243
} else if cfg!(target_arch = "powerpc64") {
    21
} else if cfg!(target_arch = "s390x") {
    22
} else {
    0
};

/// Common e_machine values by name.
pub fn machine_name(code: u16) -> &'static str {
    match code {
        2 => "SPARC",
        3 => "i386",
        8 => "MIPS",
        20 => "PowerPC",
        21 => "PowerPC64",
        22 => "s390",
        40 => "ARM",
        43 => "SPARC64",
        50 => "IA-64",
        62 => "x86-64",
        183 => "AArch64",
        243 => "RISC-V",
        258 => "LoongArch",
        _ => "an unknown machine",
    }
}

/// Printable bytes: `\r`, `\n`, `\t`, `\\` and `\xNN` for the rest of the unprintable.
fn push_escaped(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\r' => f.write_str("\\r")?,
                '\n' => f.write_str("\\n")?,
                '\t' => f.write_str("\\t")?,
                '\\' => f.write_str("\\\\")?,
                c if c.is_control() => write!(f, "\\x{:02x}", c as u32)?,
                c => write!(f, "{c}")?,
            }
        }
        for &x in chunk.invalid() {
            write!(f, "\\x{x:02x}")?;
        }
    }
    Ok(())
}

struct Escaped<'a>(&'a [u8]);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        push_escaped(f, self.0)
    }
}

impl fmt::Display for ExecDiagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ExecDiagnosis::*;
        match self {
            InterpreterMissing { interpreter, crlf } => {
                write!(f, "interpreter {} not found", Escaped(interpreter))?;
                if *crlf {
                    f.write_str(" (the file has CRLF line endings)")?;
                }
                Ok(())
            }
            InterpreterFailed { interpreter, why } => {
                write!(f, "interpreter {}: {why}", Escaped(interpreter))
            }
            LoaderMissing { loader } => write!(
                f,
                "ELF interpreter {} not found (the dynamic loader it was linked for)",
                Escaped(loader)
            ),
            DanglingSymlink { target } => {
                write!(f, "dangling symlink to {}", Escaped(target))
            }
            Directory => f.write_str("is a directory"),
            NotRegular { kind } => write!(f, "is not a regular file ({kind})"),
            NoexecMount { mount: Some(m) } => write!(
                f,
                "on a filesystem mounted noexec ({})",
                Escaped(m.as_os_str().as_bytes())
            ),
            NoexecMount { mount: None } => f.write_str("on a filesystem mounted noexec"),
            NotExecutable { mode } => write!(f, "not executable (mode {:04o})", mode & 0o7777),
            Empty => f.write_str("empty file, neither ELF nor a #! script"),
            UnknownFormat => f.write_str("neither an ELF executable nor a #! script"),
            BadShebang { too_long: true } => {
                write!(f, "#! line longer than the kernel reads ({HEAD} bytes)")
            }
            BadShebang { too_long: false } => f.write_str("#! line names no interpreter"),
            ForeignArch { machine, code } => write!(
                f,
                "ELF executable for {machine} (e_machine {code}), not {}",
                machine_name(NATIVE_MACHINE)
            ),
            NotElfProgram { what } => write!(f, "ELF file but not a program here ({what})"),
            Errno(e) => f.write_str(e.desc()),
        }
    }
}

/// What kind of file a mode says (`a FIFO`, `a directory`...), for messages.
pub fn kind_of(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        libc::S_IFLNK => "a symlink",
        _ => "a special file",
    }
}

/// Why exec of `path` (relative to the current directory, as it was exec'd) failed with
/// `errno`. Only for after the failure: it reads and stats the file.
pub fn diagnose(path: &OsStr, errno: Errno) -> ExecDiagnosis {
    diagnose_at(Path::new(path), errno, 0)
}

/// The same, as text: what follows `PROG: ` in a message.
pub fn describe(path: &OsStr, errno: Errno) -> String {
    diagnose(path, errno).to_string()
}

/// For a PATH search (`candidates` in execvp's order) that failed with `errno`: the
/// candidate worth looking at (the first that exists), and its diagnosis. None when none
/// exists (plain "not found").
pub fn diagnose_search(candidates: &[CString], errno: Errno) -> Option<(PathBuf, ExecDiagnosis)> {
    candidates.iter().find_map(|c| {
        let p = Path::new(OsStr::from_bytes(c.as_bytes()));
        std::fs::symlink_metadata(p)
            .ok()
            .map(|_| (p.to_path_buf(), diagnose_at(p, errno, 0)))
    })
}

/// A PATH search's failure as text: the diagnosis of the candidate found, prefixed with
/// its path when it differs from `prog` as given; the strerror text when none exists.
pub fn describe_search(prog: &OsStr, candidates: &[CString], errno: Errno) -> String {
    match diagnose_search(candidates, errno) {
        Some((_, ExecDiagnosis::Errno(e))) => e.desc().to_string(),
        Some((p, why)) if p.as_os_str() == prog => why.to_string(),
        Some((p, why)) => format!("{}: {why}", Escaped(p.as_os_str().as_bytes())),
        None => errno.desc().to_string(),
    }
}

fn diagnose_at(path: &Path, errno: Errno, depth: u32) -> ExecDiagnosis {
    let fallback = ExecDiagnosis::Errno(errno);
    if !matches!(errno, Errno::ENOENT | Errno::EACCES | Errno::ENOEXEC) {
        return fallback;
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(_) => {
            return match std::fs::read_link(path) {
                Ok(t) => ExecDiagnosis::DanglingSymlink {
                    target: t.into_os_string().into_vec(),
                },
                Err(_) => fallback,
            };
        }
    };
    let ft = meta.file_type();
    if ft.is_dir() {
        return ExecDiagnosis::Directory;
    }
    if !ft.is_file() {
        let kind = kind_of(meta.mode());
        return ExecDiagnosis::NotRegular { kind };
    }
    if errno == Errno::EACCES {
        if let Some(d) = noexec(path) {
            return d;
        }
        if nix::unistd::access(path, nix::unistd::AccessFlags::X_OK).is_err() {
            return ExecDiagnosis::NotExecutable { mode: meta.mode() };
        }
    }
    let Ok(file) = File::open(path) else {
        return fallback;
    };
    let mut head = [0u8; HEAD];
    let n = read_at_most(&file, &mut head, 0);
    let head = &head[..n];
    if head.starts_with(b"#!") {
        return shebang(head, errno, depth).unwrap_or(fallback);
    }
    if head.starts_with(b"\x7fELF") {
        return elf(&file, head, errno).unwrap_or(fallback);
    }
    match errno {
        Errno::ENOEXEC if head.is_empty() => ExecDiagnosis::Empty,
        Errno::ENOEXEC => ExecDiagnosis::UnknownFormat,
        _ => fallback,
    }
}

fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> usize {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    got
}

/// The interpreter as the kernel parses it: after `#!` and blanks, up to a blank, NUL or
/// newline. A carriage return is part of the name.
fn shebang(head: &[u8], errno: Errno, depth: u32) -> Option<ExecDiagnosis> {
    let line = &head[2..];
    let Some(end) = line.iter().position(|&b| b == b'\n') else {
        if head.len() == HEAD {
            return Some(ExecDiagnosis::BadShebang { too_long: true });
        }
        return interpreter(line, errno, depth);
    };
    interpreter(&line[..end], errno, depth)
}

fn interpreter(line: &[u8], errno: Errno, depth: u32) -> Option<ExecDiagnosis> {
    let start = line.iter().position(|&b| b != b' ' && b != b'\t')?;
    let rest = &line[start..];
    let len = rest
        .iter()
        .position(|&b| b == b' ' || b == b'\t' || b == 0)
        .unwrap_or(rest.len());
    let interp = &rest[..len];
    if interp.is_empty() {
        return Some(ExecDiagnosis::BadShebang { too_long: false });
    }
    let ipath = Path::new(OsStr::from_bytes(interp));
    if std::fs::metadata(ipath).is_err() && std::fs::symlink_metadata(ipath).is_err() {
        // A CR ends the name only when the line has no argument after the name.
        let crlf = interp.ends_with(b"\r") || line.ends_with(b"\r");
        return Some(ExecDiagnosis::InterpreterMissing {
            interpreter: interp.to_vec(),
            crlf,
        });
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    match diagnose_at(ipath, errno, depth + 1) {
        ExecDiagnosis::Errno(_) => None,
        why => Some(ExecDiagnosis::InterpreterFailed {
            interpreter: interp.to_vec(),
            why: Box::new(why),
        }),
    }
}

/// An ELF file: the machine, the class, the type, and the program interpreter.
fn elf(file: &File, head: &[u8], errno: Errno) -> Option<ExecDiagnosis> {
    let e = match Elf::ident(head) {
        Ok(e) => e,
        Err(what) => return Some(ExecDiagnosis::NotElfProgram { what }),
    };
    if let Some(why) = e.not_runnable(head, errno) {
        return Some(why);
    }
    if errno != Errno::ENOENT || (!e.wide && head.len() < 52) || (e.wide && head.len() < 64) {
        return None;
    }
    e.missing_loader(file, head)
}

/// An ELF file's class and byte order (e_ident), which say how to read the rest.
struct Elf {
    wide: bool,
    big: bool,
}

impl Elf {
    /// The class and byte order, or what the header is instead of a program's.
    fn ident(head: &[u8]) -> Result<Elf, &'static str> {
        if head.len() < 52 {
            return Err("a truncated header");
        }
        let wide = match head[4] {
            1 => false,
            2 => true,
            _ => return Err("an unknown ELF class"),
        };
        let big = match head[5] {
            1 => false,
            2 => true,
            _ => return Err("an unknown byte order"),
        };
        Ok(Elf { wide, big })
    }

    fn u16_at(&self, b: &[u8], o: usize) -> u16 {
        let v = [b[o], b[o + 1]];
        if self.big {
            u16::from_be_bytes(v)
        } else {
            u16::from_le_bytes(v)
        }
    }

    fn u32_at(&self, b: &[u8], o: usize) -> u32 {
        let v = [b[o], b[o + 1], b[o + 2], b[o + 3]];
        if self.big {
            u32::from_be_bytes(v)
        } else {
            u32::from_le_bytes(v)
        }
    }

    fn u64_at(&self, b: &[u8], o: usize) -> u64 {
        let mut v = [0u8; 8];
        v.copy_from_slice(&b[o..o + 8]);
        if self.big {
            u64::from_be_bytes(v)
        } else {
            u64::from_le_bytes(v)
        }
    }

    /// Another machine's file, not an executable or shared object, or (ENOEXEC) the
    /// other class than the kernel's.
    fn not_runnable(&self, head: &[u8], errno: Errno) -> Option<ExecDiagnosis> {
        let machine = self.u16_at(head, 18);
        if machine != NATIVE_MACHINE && NATIVE_MACHINE != 0 {
            return Some(ExecDiagnosis::ForeignArch {
                machine: machine_name(machine),
                code: machine,
            });
        }
        let what = match self.u16_at(head, 16) {
            2 | 3 => None,
            1 => Some("a relocatable object file"),
            4 => Some("a core dump"),
            _ => Some("an unknown ELF type"),
        };
        if let Some(what) = what {
            return Some(ExecDiagnosis::NotElfProgram { what });
        }
        if errno == Errno::ENOEXEC && self.wide != cfg!(target_pointer_width = "64") {
            return Some(ExecDiagnosis::NotElfProgram {
                what: if self.wide {
                    "a 64-bit ELF file"
                } else {
                    "a 32-bit ELF file this kernel cannot run"
                },
            });
        }
        None
    }

    /// The program interpreter (PT_INTERP) named by the program headers, when it does
    /// not exist.
    fn missing_loader(&self, file: &File, head: &[u8]) -> Option<ExecDiagnosis> {
        let (phoff, phentsize, phnum) = if self.wide {
            (
                self.u64_at(head, 32),
                self.u16_at(head, 54),
                self.u16_at(head, 56),
            )
        } else {
            (
                u64::from(self.u32_at(head, 28)),
                self.u16_at(head, 42),
                self.u16_at(head, 44),
            )
        };
        let mut ph = [0u8; 56];
        let size = usize::from(phentsize).min(ph.len());
        let need = if self.wide { 40 } else { 24 };
        if size < need {
            return None;
        }
        // A bounded walk: at most 64 program headers are looked at.
        for i in 0..u64::from(phnum.min(64)) {
            let off = phoff.checked_add(i * u64::from(phentsize))?;
            if read_at_most(file, &mut ph[..size], off) < size {
                return None;
            }
            if self.u32_at(&ph, 0) != 3 {
                continue; // not PT_INTERP
            }
            let (at, len) = if self.wide {
                (self.u64_at(&ph, 8), self.u64_at(&ph, 32))
            } else {
                (
                    u64::from(self.u32_at(&ph, 4)),
                    u64::from(self.u32_at(&ph, 16)),
                )
            };
            return loader_missing(file, at, len);
        }
        None
    }
}

/// The interpreter's name, `len` bytes (at most 256) at `at`, when no such file exists.
fn loader_missing(file: &File, at: u64, len: u64) -> Option<ExecDiagnosis> {
    let mut name = [0u8; 256];
    let len = usize::try_from(len).ok()?.min(name.len());
    let got = read_at_most(file, &mut name[..len], at);
    let name = &name[..got];
    let name = name.split(|&b| b == 0).next().unwrap_or(name);
    let p = Path::new(OsStr::from_bytes(name));
    if !name.is_empty() && std::fs::metadata(p).is_err() {
        return Some(ExecDiagnosis::LoaderMissing {
            loader: name.to_vec(),
        });
    }
    None
}

/// EACCES on a noexec filesystem: find the mount point by walking up while the device
/// stays the same.
fn noexec(path: &Path) -> Option<ExecDiagnosis> {
    let vfs = nix::sys::statvfs::statvfs(path).ok()?;
    if !vfs.flags().contains(nix::sys::statvfs::FsFlags::ST_NOEXEC) {
        return None;
    }
    let mount = (|| {
        let full = std::fs::canonicalize(path).ok()?;
        let dev = std::fs::metadata(&full).ok()?.dev();
        let mut at = full.parent()?.to_path_buf();
        loop {
            let Some(parent) = at.parent() else {
                return Some(at);
            };
            if std::fs::metadata(parent).ok()?.dev() != dev {
                return Some(at);
            }
            at = parent.to_path_buf();
        }
    })();
    Some(ExecDiagnosis::NoexecMount { mount })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tend-diag-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// ETXTBSY is retried: a test running beside this one may fork while this one's
    /// script is open for writing, and its child holds the fd until it execs.
    fn exec_errno(p: &Path) -> Errno {
        let prog = crate::exec::Prepared::new(&[p.as_os_str().to_os_string()], &[]).unwrap();
        for _ in 0..100 {
            match crate::process::spawn(&prog, &Default::default()) {
                Err(crate::process::SpawnError::Exec(Errno::ETXTBSY)) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(crate::process::SpawnError::Exec(e)) => return e,
                other => panic!("{p:?} spawned: {other:?}"),
            }
        }
        panic!("{p:?} stayed busy for a second")
    }

    fn check(p: &Path, want: &str) {
        let e = exec_errno(p);
        assert_eq!(diagnose(p.as_os_str(), e).to_string(), want, "{p:?} ({e})");
    }

    fn script(p: &Path, body: &[u8], mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(p, body).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn scripts() {
        let d = scratch("scripts");
        script(&d.join("crlf"), b"#!/bin/sh\r\necho hi\r\n", 0o755);
        check(
            &d.join("crlf"),
            "interpreter /bin/sh\\r not found (the file has CRLF line endings)",
        );
        script(&d.join("missing"), b"#! /nonexistent/interp -x\n", 0o755);
        check(
            &d.join("missing"),
            "interpreter /nonexistent/interp not found",
        );
        script(&d.join("plain"), b"echo no shebang\n", 0o755);
        check(
            &d.join("plain"),
            "neither an ELF executable nor a #! script",
        );
        script(&d.join("empty"), b"", 0o755);
        check(&d.join("empty"), "empty file, neither ELF nor a #! script");
        script(&d.join("nox"), b"#!/bin/sh\n", 0o644);
        // root may exec nothing without an x bit either
        check(&d.join("nox"), "not executable (mode 0644)");
        let nested = d.join("nested");
        script(
            &nested,
            format!("#!{}\n", d.join("crlf").display()).as_bytes(),
            0o755,
        );
        let e = exec_errno(&nested);
        assert!(
            diagnose(nested.as_os_str(), e).to_string().ends_with(
                "crlf: interpreter /bin/sh\\r not found (the file has CRLF line endings)"
            ),
            "{}",
            diagnose(nested.as_os_str(), e)
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn files_and_links() {
        let d = scratch("files");
        std::fs::create_dir(d.join("dir")).unwrap();
        check(&d.join("dir"), "is a directory");
        std::os::unix::fs::symlink("/nowhere/at/all", d.join("dangling")).unwrap();
        check(&d.join("dangling"), "dangling symlink to /nowhere/at/all");
        check(&d.join("absent"), "No such file or directory");
        nix::unistd::mkfifo(
            &d.join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o755),
        )
        .unwrap();
        check(&d.join("fifo"), "is not a regular file (a FIFO)");
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn elf_header(machine: u16, interp: Option<&[u8]>) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2; // 64-bit
        h[5] = 1; // little-endian
        h[6] = 1;
        h[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        if let Some(i) = interp {
            h[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
            h[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
            h[56..58].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
            let mut ph = vec![0u8; 56];
            ph[0..4].copy_from_slice(&3u32.to_le_bytes()); // PT_INTERP
            ph[4..8].copy_from_slice(&4u32.to_le_bytes());
            ph[8..16].copy_from_slice(&120u64.to_le_bytes()); // p_offset
            ph[32..40].copy_from_slice(&(i.len() as u64 + 1).to_le_bytes()); // p_filesz
            ph[40..48].copy_from_slice(&(i.len() as u64 + 1).to_le_bytes());
            h.extend_from_slice(&ph);
            h.extend_from_slice(i);
            h.push(0);
        }
        h
    }

    #[test]
    fn elf_files() {
        let d = scratch("elf");
        let foreign = if NATIVE_MACHINE == 183 { 62 } else { 183 };
        script(&d.join("foreign"), &elf_header(foreign, None), 0o755);
        let want = format!(
            "ELF executable for {} (e_machine {foreign}), not {}",
            machine_name(foreign),
            machine_name(NATIVE_MACHINE)
        );
        check(&d.join("foreign"), &want);
        if NATIVE_MACHINE == 62 {
            script(
                &d.join("musl"),
                &elf_header(62, Some(b"/lib/ld-musl-nonexistent.so.1")),
                0o755,
            );
            check(
                &d.join("musl"),
                "ELF interpreter /lib/ld-musl-nonexistent.so.1 not found (the dynamic loader it was linked for)",
            );
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn other_errnos_are_left_alone() {
        assert_eq!(
            diagnose(OsStr::new("/"), Errno::E2BIG),
            ExecDiagnosis::Errno(Errno::E2BIG)
        );
    }
}
