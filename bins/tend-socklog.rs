//! tend-socklog — a syslog front end: datagrams from /dev/log (or UDP) to decoded lines on stdout, as s6-socklog. See man/man8/tend-socklog.8.
#![forbid(unsafe_code)]

use std::os::unix::ffi::OsStrExt;
use std::time::Duration;
use tend_cli::{Program, code, parse_uint};
use tend_env::account::{parse_id, parse_idlist};
use tend_env::uidgid;
use tend_syslog::socklog::{self, Bind, LINELEN_MAX, LINELEN_MIN, Options, Outcome};

const PROG: Program = Program::new(
    "tend-socklog",
    "tend-socklog [ -d notif ] [ -r ] [ -R ] [ -j ] [ -U | -u uid -g gid -G gidlist ] [ -l linelen ] [ -t lameducktimeout ] [ -x unixsocket | -i ip_port ]",
);

fn options() -> Options {
    let p = PROG.parse(tend_cli::args(), "d:rRjUu:g:G:l:t:x:i:");
    let mut o = Options {
        style: Default::default(),
        linelen: 1024,
        lameduck: None,
        bind: Bind::Unix("/dev/log".into()),
        creds: Default::default(),
        notify: None,
    };
    for (c, v) in &p.opts {
        let v = v.as_deref().unwrap_or_default();
        let num = || parse_uint::<u64>(v).unwrap_or_else(|| PROG.usage_exit());
        let id = || parse_id(v.as_bytes()).unwrap_or_else(|| PROG.usage_exit());
        match c {
            'd' => o.notify = Some(parse_uint(v).unwrap_or_else(|| PROG.usage_exit())),
            'r' => o.style.raw = true,
            'R' => o.style.rfc5424 = true,
            'j' => o.style.json = true,
            'l' => o.linelen = num().clamp(LINELEN_MIN as u64, LINELEN_MAX as u64) as usize,
            't' => o.lameduck = Some(num()).filter(|&t| t > 0).map(Duration::from_millis),
            'u' => o.creds.uid = id(),
            'g' => o.creds.gid = id(),
            'G' => {
                o.creds.groups =
                    Some(parse_idlist(v.as_bytes()).unwrap_or_else(|| PROG.usage_exit()))
            }
            'U' => match uidgid::from_env(&tend_env::sys::exec::current_env()) {
                Ok(c) => o.creds = c,
                Err(e) => PROG.fatal(e.code(), e),
            },
            'x' => o.bind = Bind::Unix(v.into()),
            'i' => {
                let addr = v.to_str().and_then(socklog::parse_ip_port);
                o.bind = Bind::Udp(addr.unwrap_or_else(|| PROG.usage_exit()));
            }
            _ => PROG.usage_exit(),
        }
    }
    if let Some(fd) = o.notify {
        if fd < 3 {
            PROG.fatal(code::USAGE, "notification fd must be 3 or more");
        }
        if let Err(e) = tend_env::sys::fd::check_open(fd) {
            PROG.fatal(
                code::USAGE,
                format!("invalid notification fd: {}", e.desc()),
            );
        }
    }
    o
}

pub fn main() {
    let opts = options();
    // As s6-socklog: with no stdout the lines have nowhere to go. Checked before anything
    // is opened, which would take the free fd 1 and be written to as if it were stdout.
    if let Err(e) = tend_sys::fd::check_open(1) {
        PROG.fatal(code::USAGE, format_args!("invalid stdout: {}", e.desc()))
    }
    match socklog::run(&opts, &PROG) {
        Ok(Outcome::Flushed) => std::process::exit(code::OK),
        Ok(Outcome::TimedOut) => std::process::exit(code::TIMEOUT),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
