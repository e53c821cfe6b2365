//! The multi-call entry point: one executable that holds several programs and runs the one
//! its name (a hard link per program) or its first argument names.
//!
//! Two executables are built this way (bins/tend.rs, every program; bins/tend-tree.rs, what
//! a running supervision tree runs), each with its own table of programs; this module is
//! the dispatch both share, so a name means the same program in both, and `-l`, `--help`
//! and `--version` read the same.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::{Program, code};

/// One program of a multi-call executable: its full name and its `main`.
pub type Entry = (&'static str, fn());

/// What one multi-call executable holds.
pub struct Multicall {
    /// The executable's own name and usage (`tend`, `tend-tree`).
    pub prog: Program,
    /// Every program it runs, sorted by name.
    pub programs: &'static [Entry],
    /// The man pages whose `--help` it answers: its own, its programs' and those `also`
    /// names (crate::help::pages; the executable carries only these).
    pub pages: &'static [&'static crate::help::Page],
    /// A program that a symbolic link to it runs under any name: tend-sv's init-script
    /// mode (`/etc/init.d/NAME` → tend-sv).
    pub by_symlink: Option<Entry>,
    /// What `--help` says after the list of programs: a heading, and the programs under it.
    pub also: (&'static str, &'static [&'static str]),
    /// Whether a name of the toolkit's that this executable does not hold (`tend-rc` linked
    /// to `tend-tree`) is refused (exit 100) rather than read as `NAME prog args`, and a
    /// first argument it does not hold is answered with where to look.
    pub refuses_other_programs: bool,
}

/// s6 (and s6-overlay) names whose tend program is not `tend-` + the rest of the name.
const S6_NAMES: &[(&str, &str)] = &[
    ("with-contenv", "tend-with-contenv"),
    ("s6-notifyoncheck", "tend-check"),
];

/// The tend program a link's name stands for: the name itself, or what runit's, s6's and
/// a kernel's names for it are. `None` for a name of no tend program.
fn program_name(base: &[u8]) -> Option<std::borrow::Cow<'static, [u8]>> {
    use std::borrow::Cow;
    let ours: &'static [u8] = match base {
        // `init`, for a kernel that runs /init or /sbin/init with no arguments; `halt`,
        // s6-overlay's /run/s6/basedir/bin/halt, a link tend-init makes to its executable.
        b"init" | b"halt" => b"tend-init",
        // runit's names, for run scripts and operators' commands written for runit.
        b"chpst" => b"tend-chpst",
        b"sv" => b"tend-sv",
        b"runsvdir" => b"tend-svscan",
        b"runsv" => b"tend-supervise",
        _ => {
            // s6-overlay images call s6's programs by name (packaging/install.sh -6 links
            // them): `s6-NAME` is tend-NAME, and the names in S6_NAMES are theirs.
            if let Some((_, t)) = S6_NAMES.iter().find(|(s6, _)| s6.as_bytes() == base) {
                return Some(Cow::Borrowed(t.as_bytes()));
            }
            if let Some(rest) = base.strip_prefix(b"s6-") {
                return Some(Cow::Owned([b"tend-", rest].concat()));
            }
            if base.starts_with(b"tend-") {
                return Some(Cow::Owned(base.to_vec()));
            }
            return None;
        }
    };
    Some(Cow::Borrowed(ours))
}

impl Multicall {
    /// Run the program named by argv[0] (a link) or by the first argument; exits.
    pub fn run(&self) {
        crate::help::holds(self.pages);
        let mut argv = tend_sys::entry::argv().into_iter();
        let argv0 = argv.next().unwrap_or_default();
        let base = argv0
            .as_bytes()
            .rsplit(|&b| b == b'/')
            .next()
            .unwrap_or_default();
        // Run through a link: argv[0] names the program (only full names: a link `svc` is
        // not ours).
        let named = program_name(base);
        if let Some(name) = &named
            && let Some(&(name, main)) = self.programs.iter().find(|(n, _)| n.as_bytes() == &**name)
        {
            crate::running(name);
            return main();
        }
        if let Some((target_name, main)) = self.by_symlink
            && let Ok(target) = std::fs::read_link(&argv0)
            && target.file_name().is_some_and(|n| n == target_name)
        {
            // The link's own name has no page: its --help is its program's usage, not ours.
            crate::running("");
            return main();
        }
        if self.refuses_other_programs && base != self.prog.name.as_bytes() && named.is_some() {
            self.not_here(base)
        }
        let first = argv.next().unwrap_or_else(|| self.prog.usage_exit());
        match first.as_bytes() {
            b"-l" => self.list(),
            b"--help" => self.help(),
            b"--version" => {
                crate::help::print(self.prog.name, &crate::help::version_line(self.prog.name))
            }
            [b'-', ..] => self.prog.usage_exit(),
            name => match self.find(name) {
                Some((name, main)) => {
                    crate::named_by_first_argument();
                    crate::running(name);
                    main()
                }
                None if self.refuses_other_programs => self.not_here(name),
                None => self.prog.fatal(
                    code::USAGE,
                    format_args!("unknown program: {}", crate::shown(&first)),
                ),
            },
        }
    }

    /// A program that this executable does not hold: one line, exit 100.
    #[cold]
    fn not_here(&self, name: &[u8]) -> ! {
        self.prog.fatal(
            code::USAGE,
            format_args!(
                "unable to run {}: not in this executable ({} -l lists its programs; tend has them all)",
                crate::shown(OsStr::from_bytes(name)),
                self.prog.name
            ),
        )
    }

    /// The program called `name`, with or without its `tend-` prefix.
    fn find(&self, name: &[u8]) -> Option<Entry> {
        let full = |n: &str| n.as_bytes() == name;
        let short = |n: &str| n.as_bytes().strip_prefix(b"tend-") == Some(name);
        self.programs
            .iter()
            .find(|(n, _)| full(n))
            .or_else(|| self.programs.iter().find(|(n, _)| short(n)))
            .copied()
    }

    /// `NAME --help`: the executable's own page up to its pointer to the manual, then every
    /// program with its man page's one-line summary.
    #[cold]
    fn help(&self) -> ! {
        let own = crate::help::page(self.prog.name).map_or("", |p| p.help);
        let mut text = own
            .lines()
            .take_while(|l| !l.starts_with("The manual"))
            .collect::<Vec<_>>()
            .join("\n");
        let (heading, also) = self.also;
        let width = self
            .programs
            .iter()
            .map(|(n, _)| n.len())
            .chain(also.iter().map(|n| n.len()))
            .max()
            .unwrap_or(0);
        let row = |text: &mut String, name: &str| {
            let summary = crate::help::page(name).map_or("", |p| p.summary);
            text.push_str(&format!("  {name:width$}  {summary}\n"));
        };
        text.push_str("\nPrograms:\n");
        for (name, _) in self.programs {
            row(&mut text, name);
        }
        text.push_str(&format!("\n{heading}:\n"));
        for name in also {
            row(&mut text, name);
        }
        text.push_str(&format!(
            "\nEach answers --help and --version; the manual: man 8 {}, man 8 tend-PROG\n",
            self.prog.name
        ));
        crate::help::print(self.prog.name, &text)
    }

    /// `NAME -l`: every program's name, one per line.
    #[cold]
    fn list(&self) -> ! {
        let mut text = String::new();
        for (name, _) in self.programs {
            text.push_str(name);
            text.push('\n');
        }
        match tend_sys::fd::write_all(std::io::stdout(), text.as_bytes()) {
            Ok(()) => std::process::exit(code::OK),
            Err(e) => self.prog.fatal(
                code::SYSTEM,
                format_args!("unable to write to stdout: {}", e.desc()),
            ),
        }
    }
}
