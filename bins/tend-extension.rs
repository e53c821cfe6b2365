//! tend-extension — mount Kata's guest extension images, dm-verity checked, before the agent. See man/man8/tend-extension.8.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use tend_cli::Program;
use tend_init::extension::{self, Roots};

const PROG: Program = Program::new(
    "tend-extension",
    "tend-extension [ -V ] [ -S sysdir ] [ -D devdir ] [ -k cmdline ] [ -m mountdir ]",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "VS:D:k:m:");
    let (mut roots, mut require_verity) = (Roots::default(), false);
    for (c, v) in &p.opts {
        let path = || PathBuf::from(v.clone().unwrap_or_default());
        match c {
            'V' => require_verity = true,
            'S' => roots.sys = path(),
            'D' => roots.dev = path(),
            'k' => roots.cmdline = path(),
            'm' => roots.mount = path(),
            _ => PROG.usage_exit(),
        }
    }
    if !p.operands.is_empty() {
        PROG.usage_exit()
    }
    match extension::mount_all(&roots, require_verity) {
        Ok(mounted) => {
            for m in mounted {
                let how = match (m.already, m.verified) {
                    (true, _) => "already mounted".to_string(),
                    (false, true) => {
                        format!("{} (dm-verity) mounted read-only", m.source.display())
                    }
                    (false, false) => {
                        format!("{} (unverified) mounted read-only", m.source.display())
                    }
                };
                PROG.line(
                    "info",
                    format_args!("extension {}: {how} at {}", m.name, m.target.display()),
                );
            }
        }
        Err(e) => PROG.fatal(e.code(), e),
    }
}
