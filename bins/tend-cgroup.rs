//! tend-cgroup — join a cgroup v2 group and set its limits, then exec. See man/man8/tend-cgroup.8.
#![forbid(unsafe_code)]

use std::path::Path;
use tend_cli::{Program, code, shown};
use tend_env::cgroup;
use tend_env::sys;

const USAGE: &str = "tend-cgroup [ -c controller.file=value ]... path prog...";
const PROG: Program = Program::new("tend-cgroup", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "c:");
    let settings: Vec<cgroup::Setting> = p
        .opts
        .iter()
        .filter_map(|(_, v)| v.as_deref())
        .map(|v| match v.to_str().and_then(cgroup::parse_setting) {
            Some(s) => s,
            None => PROG.fatal(
                code::USAGE,
                format!(
                    "invalid setting (controller.file=value expected): {}",
                    shown(v)
                ),
            ),
        })
        .collect();
    let [path, argv @ ..] = p.operands.as_slice() else {
        PROG.usage_exit()
    };
    if argv.is_empty() {
        PROG.usage_exit()
    }
    if let Err(e) = cgroup::join(Path::new(path), &settings) {
        PROG.fatal(e.code(), e)
    }
    let e = tend_env::exec(argv, &sys::exec::current_env());
    PROG.fatal(e.code(), e)
}
