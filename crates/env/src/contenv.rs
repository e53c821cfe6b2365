//! with-contenv: the environment an s6-overlay image's scripts run with. Its /init saves
//! the container's environment as an envdir (`/run/s6/container_environment`); a script
//! started by `#!/usr/bin/with-contenv bash` (or `with-contenv prog...`) gets exactly
//! that environment plus PATH, whatever its supervisor's was, so a variable a cont-init
//! script writes there is seen by every later with-contenv call. `S6_KEEP_ENV` set to
//! anything but 0 makes it a no-op, as s6-overlay's with-contenv.

use crate::envdir::{self, Options};
use crate::environ::{self, Env};
use crate::sys::Error;
use std::ffi::OsStr;
use std::path::Path;

/// Where s6-overlay's /init (and tend-init in its s6-overlay mode) saves the environment.
pub const DIR: &str = "/run/s6/container_environment";

/// Whether `S6_KEEP_ENV` asks to keep the environment as it is (set, and not 0).
pub fn keep(env: &Env) -> bool {
    env.iter()
        .rev()
        .find(|(k, _)| k == "S6_KEEP_ENV")
        .is_some_and(|(_, v)| !v.is_empty() && v.as_encoded_bytes().iter().any(|&b| b != b'0'))
}

/// The environment to exec with: `env` itself when S6_KEEP_ENV says so, else PATH from
/// `env` and every variable of `dir`, read as s6-overlay reads it (`s6-envdir -Lf`: the
/// whole file, its last newline removed, no size clamp).
pub fn environment(dir: &Path, env: &Env) -> Result<Env, Error> {
    if keep(env) {
        return Ok(env.clone());
    }
    let mut out = Env::new();
    if let Some(path) = environ::get(env, "PATH") {
        environ::set(&mut out, OsStr::new("PATH"), path);
    }
    let opts = Options {
        verbatim: true,
        noclamp: true,
        ..Options::default()
    };
    let changes = envdir::read(dir, &opts)?;
    envdir::apply(&mut out, &changes);
    Ok(out)
}
