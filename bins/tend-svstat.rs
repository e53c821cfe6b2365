//! tend-svstat — print a service's status: s6-svstat's line, chosen fields, or JSON. See man/man8/tend-svstat.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use tend_cli::{Program, code, shown};
use tend_client::Field;

const USAGE: &str = "tend-svstat [ -uwNrpest | -o up,wantedup,normallyup,ready,paused,pid,exitcode,signal,signum,updownsince,readysince,updownfor,readyfor | -j ] [ -n ] [ -S scandir ] servicedir";
// -s/-S scandir is left out of the usage line: it stays s6's, byte for byte
// (the man page documents it).
const PROG: Program = Program::new("tend-svstat", USAGE);

enum Format {
    Human { numeric: bool },
    Fields(Vec<Field>),
    Json,
}

fn options(args: impl IntoIterator<Item = OsString>) -> (Format, OsString) {
    let parsed = PROG.parse(args, "no:uwNrpestjS:");
    let mut numeric = false;
    let mut json = false;
    let mut fields = Vec::new();
    let mut scandir = None;
    for (opt, value) in &parsed.opts {
        let short = match opt {
            // -s is s6-svstat's signal field, so the scan directory is -S here.
            'S' => {
                scandir = value.clone();
                continue;
            }
            'n' => {
                numeric = true;
                continue;
            }
            'j' => {
                json = true;
                continue;
            }
            'o' => {
                let list = value.as_deref().unwrap_or_default();
                if let Err(e) = Field::parse_list(list.as_encoded_bytes(), &mut fields) {
                    PROG.fatal(code::USAGE, e);
                }
                continue;
            }
            'u' => Field::Up,
            'w' => Field::WantedUp,
            'N' => Field::NormallyUp,
            'r' => Field::Ready,
            'p' => Field::Pid,
            'e' => Field::ExitCode,
            's' => Field::Signal,
            't' => Field::UpDownFor,
            _ => PROG.usage_exit(),
        };
        if let Err(e) = Field::push(&mut fields, short) {
            PROG.fatal(code::USAGE, e);
        }
    }
    let Some(dir) = parsed.operands.into_iter().next() else {
        PROG.usage_exit()
    };
    let format = match (json, fields.is_empty()) {
        (true, true) => Format::Json,
        (true, false) => PROG.usage_exit(),
        (false, true) => Format::Human { numeric },
        (false, false) => Format::Fields(fields),
    };
    let scandir = tend_client::scandir_option(scandir.as_deref());
    (format, tend_client::service_path(&dir, scandir.as_deref()))
}

pub fn main() {
    let (format, dir) = options(tend_cli::args());
    let name = shown(&dir);
    let snap = tend_client::status::read(Path::new(&dir))
        .unwrap_or_else(|e| PROG.fatal(e.code(), e.describe(&name)));
    for p in &snap.problems {
        PROG.warn(format_args!("unable to read {name}/{p}"));
    }
    let out = match format {
        Format::Human { numeric } => snap.human_line(numeric),
        Format::Fields(f) => snap.fields_line(&f),
        Format::Json => snap.json(),
    };
    if let Err(e) = std::io::stdout().lock().write_all(out.as_bytes()) {
        let errno = nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
        PROG.fatal(
            code::SYSTEM,
            format_args!("unable to write to stdout: {}", errno.desc()),
        );
    }
}
