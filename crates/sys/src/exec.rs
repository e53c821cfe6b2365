//! Replacing the process image: PATH search done before any fork, then `execve`.

use nix::errno::Errno;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// A program ready to be exec'd: candidate paths (PATH already searched), argv and envp,
/// all as C strings, so nothing needs to allocate after a fork.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub candidates: Vec<CString>,
    pub argv: Vec<CString>,
    /// The environment as `NAME=value` C strings; unused when `inherit_env` is set.
    pub envp: Vec<CString>,
    /// Exec with the process's own environment as it is at spawn time (`environ`), not a
    /// copy: a long-lived supervisor keeps no copy of the environment on its heap.
    pub inherit_env: bool,
}

fn cstring(b: &[u8]) -> Result<CString, Errno> {
    CString::new(b).map_err(|_| Errno::EINVAL)
}

/// The current environment as `NAME=value` pairs.
pub fn current_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os().collect()
}

impl Prepared {
    /// Prepare `argv` (argv[0] is the program) with the environment `env`. The PATH
    /// search uses `env`'s PATH, or `/usr/bin:/bin` when it has none.
    pub fn new(argv: &[OsString], env: &[(OsString, OsString)]) -> Result<Prepared, Errno> {
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_os_str());
        Prepared::build(
            argv,
            path,
            env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())),
        )
    }

    /// Like `new`, with the process's own environment, which is not copied: the child
    /// gets `environ` as it is when it is spawned (`inherit_env`).
    pub fn with_current_env(argv: &[OsString]) -> Result<Prepared, Errno> {
        let path = std::env::var_os("PATH");
        let mut p = Prepared::build(
            argv,
            path.as_deref(),
            std::iter::empty::<(&OsStr, &OsStr)>(),
        )?;
        p.inherit_env = true;
        Ok(p)
    }

    /// The NULL-terminated `envp` array for execve: pointers into `envp`, or into the
    /// process's environment when `inherit_env`. Valid while `self` (or the environment)
    /// is not changed.
    pub(crate) fn envp_pointers(&self) -> Vec<*const libc::c_char> {
        if self.inherit_env {
            environ_pointers()
        } else {
            pointers(&self.envp)
        }
    }

    /// Try `name` beside our own executable before the candidates found on PATH: the
    /// toolkit's daemons start its other programs, and an install (or a test build) keeps
    /// them in one directory that need not be on PATH. Nothing changes if our own path is
    /// unknown.
    pub fn prefer_beside_self(&mut self, name: &OsStr) {
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(std::path::Path::to_path_buf))
            && let Ok(c) = cstring(dir.join(name).as_os_str().as_bytes())
        {
            self.candidates.insert(0, c);
        }
    }

    fn build<K: AsRef<OsStr>, V: AsRef<OsStr>>(
        argv: &[OsString],
        path: Option<&OsStr>,
        env: impl Iterator<Item = (K, V)>,
    ) -> Result<Prepared, Errno> {
        let prog = argv.first().ok_or(Errno::EINVAL)?;
        let candidates = search(prog, path)?;
        let argv = argv
            .iter()
            .map(|a| cstring(a.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let envp = env
            .map(|(k, v)| {
                let (k, v) = (k.as_ref().as_bytes(), v.as_ref().as_bytes());
                let mut b = Vec::with_capacity(k.len() + v.len() + 2);
                b.extend_from_slice(k);
                b.push(b'=');
                b.extend_from_slice(v);
                cstring(&b)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Prepared {
            candidates,
            argv,
            envp,
            inherit_env: false,
        })
    }
}

/// The paths execvp would try, in order.
pub fn search(prog: &OsStr, path: Option<&OsStr>) -> Result<Vec<CString>, Errno> {
    let p = prog.as_bytes();
    if p.is_empty() {
        return Err(Errno::ENOENT);
    }
    if p.contains(&b'/') {
        return Ok(vec![cstring(p)?]);
    }
    let path = path.map(|p| p.as_bytes()).unwrap_or(b"/usr/bin:/bin");
    path.split(|&b| b == b':')
        .map(|dir| {
            let dir = if dir.is_empty() { b"." as &[u8] } else { dir };
            let mut full = Vec::with_capacity(dir.len() + p.len() + 1);
            full.extend_from_slice(dir);
            full.push(b'/');
            full.extend_from_slice(p);
            cstring(&full)
        })
        .collect()
}

/// A [`Prepared`] program together with the NULL-terminated `argv` and `envp` pointer
/// arrays execve takes, built once: exec'ing it (in a forked child, or after the process
/// has tightened its own limits) then needs no allocation. The arrays point into the
/// strings this value owns, which only [`Ready::set_arg`] changes (and it re-points its
/// slot), so they stay valid as long as the value lives. With `inherit_env`, `envp`
/// points into the process's environment as it was at [`Ready::new`]: std makes changing
/// it `unsafe` (`std::env::set_var`), and no tend program changes it after that.
#[derive(Debug)]
pub struct Ready {
    prepared: Prepared,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// Entries after the prepared environment, set per spawn ([`Ready::set_env_tail`]).
    tail: Vec<CString>,
    /// How many of `envp`'s pointers are the prepared environment's (before the tail).
    base_env: usize,
}

impl Ready {
    pub fn new(prepared: Prepared) -> Ready {
        let envp = prepared.envp_pointers();
        Ready {
            argv: pointers(&prepared.argv),
            base_env: envp.len().saturating_sub(1),
            envp,
            tail: Vec::new(),
            prepared,
        }
    }

    /// Set the entries that follow the prepared environment (each `NAME=value`, given as
    /// parts to concatenate; NUL bytes dropped): a server sets its per-connection
    /// variables before each spawn, reusing the buffers (no allocation once they are big
    /// enough and `vars` is no longer than before).
    pub fn set_env_tail(&mut self, vars: &[&[&[u8]]]) {
        while self.tail.len() < vars.len() {
            self.tail.push(CString::default());
        }
        self.envp.truncate(self.base_env);
        for (slot, parts) in self.tail.iter_mut().zip(vars) {
            set_cstring(slot, parts);
            self.envp.push(slot.as_ptr());
        }
        self.envp.push(std::ptr::null());
    }

    /// The program, to read (its candidates for a diagnosis, its arguments).
    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    /// Replace argument `i` (which must exist) with the concatenation of `parts` (NUL bytes
    /// dropped), reusing its buffer: a scanner renames its supervisor's operand before each
    /// spawn without allocating once the buffer is big enough.
    pub fn set_arg(&mut self, i: usize, parts: &[&[u8]]) {
        let Some(slot) = self.prepared.argv.get_mut(i) else {
            return;
        };
        set_cstring(slot, parts);
        self.argv[i] = slot.as_ptr();
    }
}

/// Replace the text of `slot` with the concatenation of `parts` (NUL bytes dropped),
/// reusing its buffer.
pub fn set_cstring(slot: &mut CString, parts: &[&[u8]]) {
    let mut v = std::mem::take(slot).into_bytes();
    v.clear();
    for p in parts {
        v.extend(p.iter().copied().filter(|&b| b != 0));
    }
    *slot = CString::new(v).unwrap_or_default();
}

/// Try every candidate of `ready` as execvp does; returns the errno to report (only if
/// all failed). Async-signal-safe: no allocation.
#[allow(unsafe_code)]
pub fn execve_prepared(ready: &Ready) -> Errno {
    // SAFETY: Ready's arrays are NULL-terminated and point into strings it owns (its doc).
    unsafe { execve_arrays(&ready.argv, &ready.envp, &ready.prepared.candidates) }
}

/// Try every candidate as execvp does; returns the errno to report (only if all failed).
/// Async-signal-safe: no allocation.
///
/// # Safety
/// `argv_ptrs` and `envp_ptrs` must each end with a null pointer, and every other entry
/// must point to a NUL-terminated string that stays alive and unchanged during the call
/// (rustix's `runtime::execve` states the same contract).
#[allow(unsafe_code)]
pub(crate) unsafe fn execve_arrays(
    argv_ptrs: &[*const libc::c_char],
    envp_ptrs: &[*const libc::c_char],
    candidates: &[CString],
) -> Errno {
    let mut result = Errno::ENOENT;
    let mut saw_eacces = false;
    for c in candidates {
        // SAFETY: the arrays are as this function's contract requires; execve only
        // returns on failure.
        unsafe { libc::execve(c.as_ptr(), argv_ptrs.as_ptr(), envp_ptrs.as_ptr()) };
        match Errno::last() {
            Errno::EACCES => saw_eacces = true,
            Errno::ENOENT | Errno::ENOTDIR => {}
            other => {
                result = other;
                if candidates.len() == 1 || other != Errno::ELOOP {
                    return other;
                }
            }
        }
    }
    if saw_eacces { Errno::EACCES } else { result }
}

/// Pointer arrays for execve (NULL-terminated), pointing into `v`.
pub(crate) fn pointers(v: &[CString]) -> Vec<*const libc::c_char> {
    let mut p: Vec<*const libc::c_char> = v.iter().map(|c| c.as_ptr()).collect();
    p.push(std::ptr::null());
    p
}

/// A copy of the process's `environ` pointer array (the strings are not copied), NULL-terminated.
#[allow(unsafe_code)]
fn environ_pointers() -> Vec<*const libc::c_char> {
    // The C library's own (libc the crate declares it for glibc only).
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    let mut v = Vec::new();
    // SAFETY: environ is the NULL-terminated array of the process's environment; it is only
    // changed by setenv and the like, which Rust makes `unsafe` (std::env::set_var) on the
    // condition that nothing reads the environment meanwhile, as std::env::vars does here.
    unsafe {
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            v.push(*p);
            p = p.add(1);
        }
    }
    v.push(std::ptr::null());
    v
}

/// Replace the process with `prog`. Only returns on failure, with the errno.
#[allow(unsafe_code)]
pub fn exec(prepared: &Prepared) -> Errno {
    crate::entry::restore_sigpipe();
    let argv = pointers(&prepared.argv);
    let envp = prepared.envp_pointers();
    // SAFETY: both arrays were just built from `prepared`, which is borrowed (so alive
    // and unchanged) for the call.
    unsafe { execve_arrays(&argv, &envp, &prepared.candidates) }
}

/// Convenience: exec `argv` with environment `env`.
pub fn exec_with_env(argv: &[OsString], env: &[(OsString, OsString)]) -> Errno {
    match Prepared::new(argv, env) {
        Ok(p) => exec(&p),
        Err(e) => e,
    }
}

/// The exit code a chain-loader uses when exec failed: 127 not found, 126 otherwise.
pub fn exit_code_for(e: Errno) -> i32 {
    match e {
        Errno::ENOENT | Errno::ENOTDIR => crate::code::EXEC_NOT_FOUND,
        _ => crate::code::EXEC_FAILED,
    }
}

/// `bytes` as one word for /bin/sh, for the scripts tend writes (run scripts of generated
/// service directories): in single quotes, each `'` written `'\''`.
pub fn shell_word(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 2);
    out.push(b'\'');
    for &b in bytes {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// [`shell_word`] of a string.
pub fn shell_word_str(s: &str) -> String {
    // Only ASCII is added to valid UTF-8, so nothing is lost.
    String::from_utf8_lossy(&shell_word(s.as_bytes())).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_paths() {
        let c = search(OsStr::new("sh"), Some(OsStr::new("/a::/b"))).unwrap();
        let s: Vec<_> = c.iter().map(|c| c.to_str().unwrap().to_string()).collect();
        assert_eq!(s, vec!["/a/sh", "./sh", "/b/sh"]);
        let c = search(OsStr::new("./x"), Some(OsStr::new("/a"))).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(search(OsStr::new(""), None), Err(Errno::ENOENT));
    }
}
