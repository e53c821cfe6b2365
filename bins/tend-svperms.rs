//! tend-svperms — show or set who may read, control and watch services. See man/man8/tend-svperms.8.
#![forbid(unsafe_code)]

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use tend_cli::{Program, code, shown};
use tend_client::perms::{self, Access, Watchers};

const USAGE: &str = "tend-svperms [ -v ] [ -u | -g group | -G group | -o | -O group ] [ -e | -E group ] servicedir...";
const PROG: Program = Program::new("tend-svperms", USAGE);

/// A group name, or `:gid`.
fn gid(arg: Option<&OsStr>) -> u32 {
    let Some(arg) = arg else { PROG.usage_exit() };
    if let Some(n) = arg.as_bytes().strip_prefix(b":") {
        return tend_env::account::parse_id(n).unwrap_or_else(|| PROG.usage_exit());
    }
    match tend_env::account::group(arg) {
        Ok(Some(g)) => g,
        Ok(None) => PROG.fatal(
            code::USAGE,
            format_args!("unable to find entry for {} in group database", shown(arg)),
        ),
        Err(e) => PROG.fatal(e.code(), e),
    }
}

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "vug:G:oO:eE:");
    let (mut print, mut access, mut watchers) = (false, None, None);
    for (opt, value) in &p.opts {
        let value = value.as_deref();
        match opt {
            'v' => print = true,
            'u' => access = Some(Access::Owner),
            'g' => access = Some(Access::GroupReads(gid(value))),
            'G' => access = Some(Access::GroupControls(gid(value))),
            'o' => access = Some(Access::Public),
            'O' => access = Some(Access::PublicGroupControls(gid(value))),
            'e' => watchers = Some(Watchers::Public),
            'E' => watchers = Some(Watchers::Group(gid(value))),
            _ => PROG.usage_exit(),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    let print = print || (access.is_none() && watchers.is_none());
    let (mut out, mut all_read) = (Vec::new(), true);
    for dir in &p.operands {
        let dir = Path::new(dir);
        if let Some(a) = access {
            perms::set_access(dir, a, &PROG).unwrap_or_else(|e| PROG.fatal(e.code(), e));
        }
        if let Some(w) = watchers {
            perms::set_watchers(dir, w, &PROG).unwrap_or_else(|e| PROG.fatal(e.code(), e));
        }
        if print {
            all_read &= perms::show(dir, &mut out, &PROG);
        }
    }
    if let Err(e) = std::io::stdout().write_all(&out) {
        PROG.fatal(code::SYSTEM, tend_sys::Error::io("write to", "stdout", &e));
    }
    std::process::exit(if all_read { code::OK } else { code::NO })
}
