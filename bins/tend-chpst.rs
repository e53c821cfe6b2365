//! tend-chpst — runit's chpst: change the process state, then exec. See man/man8/tend-chpst.8.
#![forbid(unsafe_code)]

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use tend_cli::Program;
use tend_runit::chpst::{self, Plan};

const USAGE: &str = "tend-chpst [ -vVP012 ] [ -u user[:group] ] [ -U user[:group] ] [ -b argv0 ] [ -e dir ] [ -/ root ] [ -n inc ] [ -l|-L lock ] [ -m bytes ] [ -d bytes ] [ -o n ] [ -p n ] [ -f bytes ] [ -c bytes ] [ -r bytes ] [ -t seconds ] prog...";
const PROG: Program = Program::new("tend-chpst", USAGE);

fn plan(p: &tend_cli::Parsed) -> Plan {
    let mut plan = Plan::default();
    for (opt, value) in &p.opts {
        let v = value.clone().unwrap_or_default();
        let number = || chpst::parse_number(v.as_bytes()).unwrap_or_else(|| PROG.usage_exit());
        match opt {
            'u' => plan.set_user = Some(v),
            'U' => plan.env_user = Some(v),
            'b' => plan.argv0 = Some(v),
            'e' => plan.envdir = Some(PathBuf::from(v)),
            '/' => plan.root = Some(PathBuf::from(v)),
            'n' => plan.nice = chpst::parse_nice(v.as_bytes()).unwrap_or_else(|| PROG.usage_exit()),
            'l' | 'L' if plan.lock.is_some() => PROG.usage_exit(),
            'l' => plan.lock = Some((PathBuf::from(v), true)),
            'L' => plan.lock = Some((PathBuf::from(v), false)),
            'm' | 'd' | 'o' | 'p' | 'f' | 'c' | 'r' | 't' => plan.limits.push((*opt, number())),
            'v' => plan.verbose = true,
            'P' => plan.setsid = true,
            '0' => plan.close[0] = true,
            '1' => plan.close[1] = true,
            '2' => plan.close[2] = true,
            _ => PROG.usage_exit(),
        }
    }
    plan
}

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "u:U:b:e:/:n:l:L:m:d:o:p:f:c:r:t:vP012V");
    let plan = plan(&p);
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    let e = chpst::run(&plan, &p.operands, &mut |m| PROG.warn(m));
    PROG.fatal(e.code(), e)
}
