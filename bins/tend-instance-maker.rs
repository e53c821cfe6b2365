//! tend-instance-maker — make an instanced service directory from a template, as s6-instance-maker. See man/man8/tend-instance-maker.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code, parse_uint};
use tend_client::instance::{self, MakerOptions};

const PROG: Program = Program::new(
    "tend-instance-maker",
    "tend-instance-maker [ -c max ] [ -r service[/logger[/pipeline]] ] [ -u user ] [ -l loguser ] [ -L logdir ] [ -t stamptype ] [ -n nfiles ] [ -s filesize ] [ -S maxsize ] [ -P prefix ] template dir",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "c:r:u:l:L:t:n:s:S:P:");
    let mut o = MakerOptions::default();
    for (c, v) in &p.opts {
        let v = v.as_deref().unwrap_or_default();
        let text = || {
            v.to_str()
                .map(str::to_owned)
                .unwrap_or_else(|| PROG.usage_exit())
        };
        let num = || parse_uint::<u64>(v).unwrap_or_else(|| PROG.usage_exit());
        match c {
            'c' => o.max = u32::try_from(num().clamp(2, 90000)).unwrap_or(90000),
            'r' => {
                o.rc = Some(instance::RcNames::parse(&text()).unwrap_or_else(|| {
                    PROG.fatal(
                        code::USAGE,
                        "invalid -r argument: service[/logger[/pipeline]]",
                    )
                }))
            }
            'u' => o.user = Some(text()),
            'l' => o.loguser = Some(text()),
            'L' => o.logdir = Some(text()),
            't' => o.stamp = u32::try_from(num().min(3)).unwrap_or(3),
            'n' => o.nfiles = u32::try_from(num()).unwrap_or(u32::MAX),
            's' => o.filesize = num(),
            'S' => o.maxsize = num(),
            'P' => o.prefix = Some(text()),
            _ => PROG.usage_exit(),
        }
    }
    let [template, dir] = &p.operands[..] else {
        PROG.usage_exit()
    };
    // A logger definition stores its logs in -L's directory: one without it is s6's
    // usage error.
    match &o.rc {
        Some(r) if r.logger.is_some() && o.logdir.is_none() => {
            PROG.fatal(code::USAGE, "a logger with -r needs -L logdir")
        }
        Some(r) if r.logger.is_none() && o.logdir.is_some() => PROG.fatal(
            code::USAGE,
            "-L with -r needs a logger name: -r service/logger",
        ),
        _ => {}
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| {
        PROG.fatal(
            code::SYSTEM,
            format_args!("unable to find this executable: {e}"),
        )
    });
    if let Err(e) = instance::make(template.as_ref(), dir.as_ref(), &o, &exe) {
        PROG.fatal(e.code(), e)
    }
}
