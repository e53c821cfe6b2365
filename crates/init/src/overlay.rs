//! s6-overlay v3 images, run unchanged: tend-init as `/init` over an image built for
//! s6-overlay (`ENTRYPOINT ["/init"]`, services under `/etc/s6-overlay/s6-rc.d/`, maybe
//! the legacy `/etc/cont-init.d`, `/etc/services.d`, `/etc/cont-finish.d`).
//!
//! What s6-overlay's stages do, in its order, with tend's programs:
//! - the container environment saved in `/run/s6/container_environment` (what
//!   `with-contenv` reads; `/var/run/s6` leads there too), the scanner on `/run/service`,
//!   `/run/s6/basedir/bin/halt` (stop the container) and the exit-code file in
//!   `/run/s6-linux-init-container-results/`;
//! - `S6_STAGE2_HOOK`, then `base`: the legacy cont-init.d scripts;
//! - `user`: the s6-rc source tree brought up by tend-rc (a separate program: this crate
//!   only calls it), with s6-overlay's own names (`base`, `legacy-cont-init`,
//!   `legacy-services`) defined where the image does not define them, and `user` and
//!   `user2` always s6-overlay's bundles, their contents found where 3.2.3.2 finds them
//!   (`Sources`);
//! - `legacy-services`: services.d mirrored into the scan directory, after `user`;
//! - `user2`, then the CMD (`S6_CMD_ARG0` before it); its exit code is written to the
//!   exit-code file, whose content is the container's exit code, as with s6-overlay.
//!
//! Down is the reverse: `user2`, the legacy services, every other rc service (tend-rc
//! -da, dependents first), the cont-finish.d scripts (the down of `legacy-cont-init`),
//! the tree.
//!
//! The `S6_*` variables become tend-init's settings (`translate`): a `TEND_*` variable
//! set too wins; an unknown one is named once as ignored.
//!
//! What this module is not: the dependency engine (tend-rc is), nor s6-overlay's
//! fix-attrs (reported as unsupported).

use crate::{Init, OnFailure, Settings, tree};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_proto::ScanCommand;
use tend_sys::Error;
use tend_sys::code;

/// The image's s6-rc source tree.
pub const RC_TREE: &str = "/etc/s6-overlay/s6-rc.d";
/// s6-overlay 3.2.3.2's home of the `user` and `user2` bundles (S6_RUNTIME_BUNDLEDIR
/// overrides it), and where S6_RUNTIME_PROFILE's replacements of /etc/s6-overlay live.
pub const PROFILE_DIR: &str = "/etc/s6-overlay";
pub const PROFILES: &str = "/etc/cont-profile.d";
/// The bundles s6-overlay owns, whatever files an image puts in them.
pub const USER_BUNDLES: [&str; 2] = ["user", "user2"];
/// The legacy directories, as tend-init's stage directories.
pub const CONT_INIT: &str = "/etc/cont-init.d";
pub const SERVICES: &str = "/etc/services.d";
pub const CONT_FINISH: &str = "/etc/cont-finish.d";
pub const FIX_ATTRS: &str = "/etc/fix-attrs.d";
/// The paths scripts use.
pub const CONTAINER_ENV: &str = "/run/s6/container_environment";
pub const SCAN_DIR: &str = "/run/service";
pub const RESULTS: &str = "/run/s6-linux-init-container-results";
pub const EXIT_CODE: &str = "/run/s6-linux-init-container-results/exitcode";
pub const HALT: &str = "/run/s6/basedir/bin/halt";
/// Where s6-overlay 3's catch-all logger writes (s6-linux-init's place; its README
/// still names v2's /var/log/s6-uncaught-logs, tests/overlay-record: s6-logging).
pub const CATCH_ALL_DIR: &str = "/run/uncaught-logs";
/// The sources tend-init adds (s6-overlay's own names), and tend-rc's live state.
pub const OWN_SOURCES: &str = "/run/s6/tend-rc-sources";
/// The image's definitions other than `user` and `user2`, as symlinks, where the tree
/// (or a bundle directory) holds those two as well.
pub const TREE_VIEW: &str = "/run/s6/tend-rc-tree";
pub const BUNDLE_VIEW: &str = "/run/s6/tend-rc-bundles";
pub const LIVE: &str = "/run/tend/rc";
/// Where tend-rc's live directory is made (it may not exist yet).
const LIVE_PARENT: &str = "/run";
/// The rc engine, looked for beside our own executable first.
pub const RC: &str = "tend-rc";

/// Which parts of s6-overlay's layout an image has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    pub rc_tree: bool,
    pub cont_init: bool,
    pub services: bool,
    pub cont_finish: bool,
    pub fix_attrs: bool,
}

impl Layout {
    /// The layout under `root` (`/` in a container).
    pub fn detect(root: &Path) -> Layout {
        let has = |p: &str| root.join(p.trim_start_matches('/')).is_dir();
        Layout {
            rc_tree: has(RC_TREE),
            cont_init: has(CONT_INIT),
            services: has(SERVICES),
            cont_finish: has(CONT_FINISH),
            fix_attrs: has(FIX_ATTRS),
        }
    }

    pub fn any(&self) -> bool {
        self.rc_tree || self.cont_init || self.services || self.cont_finish || self.fix_attrs
    }
}

/// Whether to run as s6-overlay's /init: `-o on|off`, else (auto) when run as `init` over
/// an image with the layout.
pub fn wanted(setting: crate::settings::Overlay, argv0: &OsStr, layout: &Layout) -> bool {
    use crate::settings::Overlay::{Auto, Off, On};
    match setting {
        On => true,
        Off => false,
        Auto => {
            let base = argv0.as_bytes().rsplit(|&b| b == b'/').next();
            base == Some(b"init") && layout.any()
        }
    }
}

/// What of s6-overlay's settings is not one of tend-init's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlay {
    /// S6_VERBOSITY (0 to 5, default 2): below 2, no info lines.
    pub verbosity: u32,
    /// S6_CMD_ARG0: words put before the command.
    pub cmd_arg0: Vec<OsString>,
    /// S6_STAGE2_HOOK: a command run before the services start.
    pub stage2_hook: Vec<OsString>,
    /// S6_LOGGING: 0 the container's stdout, 1 everything to the catch-all logger, 2 the
    /// services' output only.
    pub logging: u32,
    /// S6_LOGGING_SCRIPT: the catch-all logger's script.
    pub logging_script: Vec<OsString>,
    /// S6_CMD_WAIT_FOR_SERVICES: the command waits for the legacy services too.
    pub wait_legacy: bool,
    /// S6_RUNTIME_PROFILE: /etc/cont-profile.d/NAME/s6-overlay replaces /etc/s6-overlay.
    pub profile: Option<OsString>,
    /// S6_RUNTIME_BUNDLEDIR: where `user` and `user2` are defined.
    pub bundle_dir: Option<PathBuf>,
    pub layout: Layout,
}

/// Where the services and the user bundles come from, as s6-overlay 3.2.3.2's rc.init
/// chooses: the profile's `s6-rc.d`; the bundles from the bundle directory, or from
/// `s6-rc.d` itself where it still has a `user` (deprecated, and then the bundle
/// directory is not read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// PROFILE/s6-rc.d.
    pub tree: PathBuf,
    /// Where `user` and `user2` are read from.
    pub bundles: PathBuf,
    /// The bundles are in the tree (the layout before 3.2.3.2).
    pub in_tree: bool,
    /// The bundle directory was named by S6_RUNTIME_BUNDLEDIR (it must exist).
    pub explicit: bool,
}

impl Sources {
    /// The choice for these settings, looked up under `root` (`/` in a container).
    pub fn choose(ov: &Overlay, root: &Path) -> Sources {
        let at = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
        let profile = match &ov.profile {
            Some(p) => Path::new(PROFILES).join(p).join("s6-overlay"),
            None => PathBuf::from(PROFILE_DIR),
        };
        let tree = at(&profile.join("s6-rc.d"));
        if tree.join("user").is_dir() {
            return Sources {
                bundles: tree.clone(),
                tree,
                in_tree: true,
                explicit: false,
            };
        }
        let (bundles, explicit) = match &ov.bundle_dir {
            Some(d) => (at(d), true),
            None => (at(&profile.join("user-bundles.d")), false),
        };
        Sources {
            tree,
            bundles,
            in_tree: false,
            explicit,
        }
    }
}

/// How an S6_* value becomes a TEND_* one (None: as it is).
type Translation = fn(&[u8]) -> Option<&'static str>;

/// The S6_* variables with a TEND_* setting: (S6 name, TEND name, translation).
const MAPPED: [(&str, &str, Translation); 6] = [
    (
        "S6_CMD_WAIT_FOR_SERVICES_MAXTIME",
        "TEND_SERVICES_MAXTIME",
        same,
    ),
    (
        "S6_BEHAVIOUR_IF_STAGE2_FAILS",
        "TEND_INIT_FAILURE",
        behaviour,
    ),
    (
        "S6_BEHAVIOUR_IF_STAGE2_FAILS",
        "TEND_SERVICES_FAILURE",
        behaviour,
    ),
    ("S6_SERVICES_GRACETIME", "TEND_SERVICES_GRACETIME", same),
    ("S6_KILL_GRACETIME", "TEND_KILL_GRACETIME", same),
    ("S6_KILL_FINISH_MAXTIME", "TEND_FINISH_MAXTIME", same),
];

/// Read by tend-init itself (the Overlay struct), by with-contenv (S6_KEEP_ENV), or
/// without effect because tend already behaves so (S6_READ_ONLY_ROOT: nothing is written
/// outside /run; S6_OVERLAY_VERSION: images set it for their own build).
const READ: [&str; 11] = [
    "S6_VERBOSITY",
    "S6_CMD_ARG0",
    "S6_STAGE2_HOOK",
    "S6_LOGGING",
    "S6_LOGGING_SCRIPT",
    "S6_CMD_WAIT_FOR_SERVICES",
    "S6_KEEP_ENV",
    "S6_READ_ONLY_ROOT",
    "S6_OVERLAY_VERSION",
    "S6_RUNTIME_PROFILE",
    "S6_RUNTIME_BUNDLEDIR",
];

/// s6-overlay's defaults where they differ from tend-init's (TEND name, value).
const DEFAULTS: [(&str, &str); 7] = [
    ("TEND_INIT_DIR", CONT_INIT),
    ("TEND_SERVICES_DIR", SERVICES),
    ("TEND_FINISH_DIR", CONT_FINISH),
    ("TEND_ENV_DIR", CONTAINER_ENV),
    ("TEND_SCAN_DIR", SCAN_DIR),
    // S6_CMD_WAIT_FOR_SERVICES_MAXTIME=0 (no limit), S6_BEHAVIOUR_IF_STAGE2_FAILS=0.
    ("TEND_SERVICES_MAXTIME", "0"),
    ("TEND_INIT_FAILURE", "warn"),
];

/// s6-overlay's other defaults: S6_KILL_GRACETIME and S6_KILL_FINISH_MAXTIME.
const MORE_DEFAULTS: [(&str, &str); 2] = [
    ("TEND_KILL_GRACETIME", "3000"),
    ("TEND_FINISH_MAXTIME", "5000"),
];

fn same(v: &[u8]) -> Option<&'static str> {
    // Checked as digits by the caller; the value is taken as it is.
    let _ = v;
    None
}

/// 0 continue silently, 1 continue with a warning, 2 stop the container.
fn behaviour(v: &[u8]) -> Option<&'static str> {
    Some(if v == b"0" || v == b"1" {
        "warn"
    } else {
        "stop"
    })
}

fn digits(v: &[u8]) -> bool {
    !v.is_empty() && v.len() <= 19 && v.iter().all(u8::is_ascii_digit)
}

fn get<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a [u8]> {
    env.iter()
        .rev()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.as_bytes())
}

fn words(v: &[u8]) -> Vec<OsString> {
    v.split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(|w| OsStr::from_bytes(w).to_os_string())
        .collect()
}

/// Turn the S6_* variables into tend-init's: the environment to resolve the settings
/// from (TEND_* added where they are not set, s6-overlay's defaults after them), the
/// overlay's own settings, and one warning per variable ignored.
pub fn translate(
    env: &[(OsString, OsString)],
    layout: Layout,
) -> (Vec<(OsString, OsString)>, Overlay, Vec<String>) {
    let mut out = env.to_vec();
    let mut warnings = Vec::new();
    let set = |out: &[(OsString, OsString)], k: &str| get(out, k).is_some();
    for (s6, tend, tr) in MAPPED {
        let Some(v) = get(env, s6) else { continue };
        if set(env, tend) {
            continue;
        }
        if !digits(v) {
            if tend != "TEND_SERVICES_FAILURE" {
                warnings.push(format!(
                    "{s6}={}: not a number: using the default",
                    String::from_utf8_lossy(v)
                ));
            }
            continue;
        }
        let value = tr(v).map_or_else(|| OsStr::from_bytes(v).to_os_string(), OsString::from);
        out.push((tend.into(), value));
    }
    for (k, v) in DEFAULTS.iter().chain(MORE_DEFAULTS.iter()) {
        if !set(&out, k) {
            out.push(((*k).into(), (*v).into()));
        }
    }
    for (k, _) in env {
        let Some(name) = k.to_str() else { continue };
        if name.starts_with("S6_")
            && !READ.contains(&name)
            && !MAPPED.iter().any(|m| m.0 == name)
            && !warnings
                .iter()
                .any(|w| w.starts_with(&format!("ignoring {name}:")))
        {
            warnings.push(format!("ignoring {name}: not supported by tend-init"));
        }
    }
    let number = |name: &str, default: u32| -> u32 {
        get(env, name)
            .filter(|v| digits(v) && v.len() < 9)
            .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
            .unwrap_or(default)
    };
    let ov = Overlay {
        verbosity: number("S6_VERBOSITY", 2),
        cmd_arg0: get(env, "S6_CMD_ARG0").map(words).unwrap_or_default(),
        stage2_hook: get(env, "S6_STAGE2_HOOK").map(words).unwrap_or_default(),
        logging: number("S6_LOGGING", 0),
        logging_script: words(get(env, "S6_LOGGING_SCRIPT").unwrap_or(b"n20 s1000000 T")),
        wait_legacy: number("S6_CMD_WAIT_FOR_SERVICES", 0) > 0,
        profile: get(env, "S6_RUNTIME_PROFILE").map(|v| OsStr::from_bytes(v).to_os_string()),
        bundle_dir: get(env, "S6_RUNTIME_BUNDLEDIR").map(|v| PathBuf::from(OsStr::from_bytes(v))),
        layout,
    };
    (out, ov, warnings)
}

/// The definitions s6-overlay adds to the image's tree, for those the image does not
/// define itself: `base` (what user services depend on, done once cont-init.d ran),
/// `legacy-cont-init` in it, `legacy-services` (after base and user). Their `up` is a
/// comment: a no-op barrier, since tend-init runs the legacy stages itself, in their
/// place in the order. And always `user` and `user2`: bundles of what the image lists
/// in theirs (`contents.d/`, `contents`), whatever else their directories hold or lack
/// (an image writes only `contents.d/` entries; s6-overlay supplies the `type`).
pub fn write_own_sources(dir: &Path, sources: &Sources) -> Result<(), Error> {
    let defined = |name: &str| sources.tree.join(name).join("type").exists();
    let w = |rel: &str, text: &[u8]| -> Result<(), Error> {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, &e))?;
        }
        std::fs::write(&p, text).map_err(|e| Error::io("write", &p, &e))
    };
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, &e))?;
    let barrier = b"# tend-init runs this stage itself (s6-overlay's place in the order)\n";
    if !defined("legacy-cont-init") {
        w("legacy-cont-init/type", b"oneshot\n")?;
        w("legacy-cont-init/up", barrier)?;
    }
    if !defined("base") {
        w("base/type", b"bundle\n")?;
        w("base/contents.d/legacy-cont-init", b"")?;
    }
    for b in USER_BUNDLES {
        w(&format!("{b}/type"), b"bundle\n")?;
        let contents = dir.join(b).join("contents.d");
        std::fs::create_dir_all(&contents).map_err(|e| Error::io("create", &contents, &e))?;
        let theirs = sources.bundles.join(b);
        if let Ok(names) = tree::list(&theirs.join("contents.d")) {
            for n in names {
                let p = contents.join(&n);
                std::fs::write(&p, b"").map_err(|e| Error::io("write", &p, &e))?;
            }
        }
        let list = theirs.join("contents");
        if list.is_file() {
            let text = std::fs::read(&list).map_err(|e| Error::io("read", &list, &e))?;
            w(&format!("{b}/contents"), &text)?;
        }
    }
    if !defined("legacy-services") {
        w("legacy-services/type", b"oneshot\n")?;
        w("legacy-services/up", barrier)?;
        w("legacy-services/dependencies.d/base", b"")?;
        w("legacy-services/dependencies.d/user", b"")?;
    }
    Ok(())
}

/// `src`'s definitions other than `user` and `user2`, as symlinks in `view`; false when
/// `src` has no such definition (then nothing is made).
pub fn write_view(src: &Path, view: &Path) -> Result<bool, Error> {
    let _ = std::fs::remove_dir_all(view);
    let names = tree::list(src)?;
    let others: Vec<OsString> = names
        .into_iter()
        .filter(|n| !USER_BUNDLES.iter().any(|b| n == *b) && src.join(n).is_dir())
        .collect();
    if others.is_empty() {
        return Ok(false);
    }
    std::fs::create_dir_all(view).map_err(|e| Error::io("create", view, &e))?;
    for n in others {
        let link = view.join(&n);
        std::os::unix::fs::symlink(src.join(&n), &link)
            .map_err(|e| Error::io("symlink", &link, &e))?;
    }
    Ok(true)
}

/// The first longrun of a source tree, if it has one.
fn first_longrun(tree: &Path) -> Option<OsString> {
    let mut names = tree::list(tree).ok()?;
    names.sort();
    names.into_iter().find(|n| {
        std::fs::read(tree.join(n).join("type")).is_ok_and(|t| t.trim_ascii() == b"longrun")
    })
}

/// The halt program scripts run (`exec /run/s6/basedir/bin/halt`): a link to our own
/// executable, which run as `halt` stops the container (`halt`, below). A link, not a
/// script: /run is often a noexec tmpfs (`docker run --tmpfs /run`), and what a link
/// runs is the file it leads to.
pub fn write_halt(path: &Path) -> Result<(), Error> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, &e))?;
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("find", "/proc/self/exe", &e))?;
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink(&exe, path).map_err(|e| Error::io("symlink", path, &e))
}

/// `halt`: stop the container as s6-overlay's halt does, by telling the scanner on the
/// scan directory (TEND_SCAN_DIR, else /run/service) to finish; tend-init stops when it
/// exits. The error is the line to print (what failed on which directory, and why).
pub fn halt(env: &[(OsString, OsString)]) -> Result<(), String> {
    let dir = get(env, "TEND_SCAN_DIR").map_or(PathBuf::from(SCAN_DIR), |d| {
        PathBuf::from(OsStr::from_bytes(d))
    });
    let svscan = tend_proto::servicedir::SVSCAN;
    tend_proto::control::send_scan(&dir, &[ScanCommand::Terminate]).map_err(|e| {
        let shown = dir.to_string_lossy();
        e.describe(&shown, svscan).to_string()
    })
}

/// The exit code a script left in the results file (s6-overlay's way for a finish script
/// to set the container's), if it holds a number.
pub fn read_exit_code(path: &Path) -> Option<i32> {
    let b = std::fs::read(path).ok()?;
    let t = b.trim_ascii();
    (digits(t) && t.len() <= 3)
        .then(|| std::str::from_utf8(t).ok()?.parse::<i32>().ok())
        .flatten()
        .map(|c| c & 0xff)
}

/// Run the stages in s6-overlay's order; the exit code is the results file's, else the
/// one tend-init would give.
pub fn run(
    settings: &Settings,
    ov: &Overlay,
    command: &[OsString],
    say: &dyn tend_sys::warn::Warn,
) -> Result<i32, Error> {
    let mut init = Init::new(settings, say, false)?;
    init.quiet = ov.verbosity < 2;
    init.scanner_exit_stops = true;
    if !init.pid1 {
        init.become_subreaper();
    }
    init.overlay_prepare(ov);
    if init.carry_on() {
        init.start_catch_all(ov);
    }
    if init.carry_on() {
        init.overlay_scanner();
    }
    if init.carry_on() && !ov.stage2_hook.is_empty() {
        init.stage2_hook(&ov.stage2_hook);
    }
    // cont-finish.d is the `down` of s6-overlay's legacy-cont-init: it runs only where
    // cont-init.d ran through (tests/overlay-record: stage2-fail).
    let mut cont_init_up = false;
    if init.carry_on() {
        init.base();
        cont_init_up = init.carry_on();
    }
    let sources = Sources::choose(ov, Path::new("/"));
    let rc = sources.tree.is_dir() && init.carry_on() && init.rc_init(&sources, ov.verbosity);
    if rc && init.carry_on() {
        init.rc_up("user", ov.verbosity);
    }
    if init.carry_on() {
        init.legacy_services(ov.wait_legacy);
    }
    if rc && init.carry_on() {
        init.rc_up("user2", ov.verbosity);
    }
    if init.carry_on() {
        let mut full = ov.cmd_arg0.clone();
        full.extend_from_slice(command);
        init.stage2(&full);
        if let Some(c) = init.command_code
            && init.stop.is_none()
        {
            let _ = std::fs::write(EXIT_CODE, format!("{c}\n"));
        }
    }
    // Down, the reverse.
    init.stopping = true;
    init.take_terminal_back();
    let deadline = Instant::now() + settings.services_grace;
    if rc {
        init.rc_down(ov.verbosity, &["-d", "change", "user2"], deadline);
    }
    init.legacy_down(deadline);
    if rc {
        init.rc_down(ov.verbosity, &["-da", "change"], deadline);
    }
    if cont_init_up {
        init.finish_scripts();
    }
    init.stop_tree();
    let fallback = init.exit_code(!command.is_empty());
    Ok(settings
        .exit_code
        .or_else(|| read_exit_code(Path::new(EXIT_CODE)))
        .unwrap_or(fallback))
}

impl Init<'_> {
    /// The environment saved where with-contenv reads it, /var/run/s6 leading there,
    /// halt, the results directory (a stale exit code from an earlier run removed).
    fn overlay_prepare(&mut self, ov: &Overlay) {
        if ov.layout.fix_attrs {
            self.warn(format_args!(
                "{FIX_ATTRS} is not supported (s6-overlay deprecates it): ignored"
            ));
        }
        if !self.run_writable() || !self.save_env() {
            return;
        }
        let var_run = Path::new("/var/run/s6");
        if std::fs::canonicalize("/var/run").ok().as_deref() != Some(Path::new("/run"))
            && std::fs::symlink_metadata(var_run).is_err()
        {
            let _ = std::fs::create_dir_all("/var/run");
            let _ = std::os::unix::fs::symlink("/run/s6", var_run);
        }
        if let Err(e) = write_halt(Path::new(HALT)) {
            self.warn(format_args!("{e}"));
        }
        let _ = std::fs::create_dir_all(RESULTS);
        let _ = std::fs::remove_file(EXIT_CODE);
    }

    /// s6-overlay's paths are all under /run: where this user cannot write there (a
    /// root-owned /run under `docker run --user`, a read-only root without a tmpfs), say
    /// in one line what to change.
    fn run_writable(&mut self) -> bool {
        use nix::unistd::{AccessFlags, access, geteuid};
        let run = Path::new("/run");
        let Err(e) = access(run, AccessFlags::W_OK | AccessFlags::X_OK) else {
            return true;
        };
        if e == nix::errno::Errno::ENOENT {
            return true; // made below, where the root is writable
        }
        let uid = geteuid();
        // exec too: tend-rc runs the longruns from there (`longruns_can_run`).
        let fix = if e == nix::errno::Errno::EROFS {
            "give the container a /run of its own (docker run --tmpfs /run:exec)".to_string()
        } else {
            format!(
                "give the container a /run it can write (docker run --tmpfs /run:exec,uid={uid})"
            )
        };
        self.fatal(
            code::SYSTEM,
            format_args!("/run is not writable by uid {uid}: {}: {fix}", e.desc()),
        );
        false
    }

    /// tend-rc runs a longrun from its copy under /run (as s6-rc-init does): on a noexec
    /// /run (docker's --tmpfs default) none could start, so say in one line what to change.
    fn longruns_can_run(&mut self, sources: &Sources) -> bool {
        let noexec = nix::sys::statvfs::statvfs(LIVE_PARENT)
            .is_ok_and(|v| v.flags().contains(nix::sys::statvfs::FsFlags::ST_NOEXEC));
        let Some(name) = noexec.then(|| first_longrun(&sources.tree)).flatten() else {
            return true;
        };
        let uid = nix::unistd::geteuid();
        let mount = if uid.is_root() {
            "/run:exec".to_string()
        } else {
            format!("/run:exec,uid={uid}")
        };
        self.fatal(
            code::SYSTEM,
            format_args!(
                "/run is mounted noexec, and longruns ({}) run from there: mount it exec (docker run --tmpfs {mount})",
                name.to_string_lossy()
            ),
        );
        false
    }

    /// S6_LOGGING 1 or 2: tend-log on a pipe, writing /run/uncaught-logs; the tree's
    /// output and the command's go there, and with 1 every line is copied to our stderr
    /// too, as s6-overlay 3.2.3.2 does (tests/overlay-record: s6-logging).
    fn start_catch_all(&mut self, ov: &Overlay) {
        if ov.logging == 0 {
            return;
        }
        if let Err(e) = std::fs::create_dir_all(CATCH_ALL_DIR) {
            return self.warn(format_args!(
                "unable to create {CATCH_ALL_DIR}: {e}: no catch-all logger"
            ));
        }
        let (r, w) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
            Ok(p) => p,
            Err(e) => return self.warn(format_args!("unable to pipe: {}", e.desc())),
        };
        let mut argv = vec![OsString::from("tend-log")];
        // `1` first: the copy on stderr without the logdir's timestamps.
        let mut fds = vec![(std::os::fd::AsRawFd::as_raw_fd(&r), 0)];
        if ov.logging == 1 {
            argv.push("1".into());
            fds.push((2, 1));
        }
        argv.extend(ov.logging_script.iter().cloned());
        argv.push(CATCH_ALL_DIR.into());
        let opts = tend_sys::process::SpawnOptions {
            setpgid: true,
            fds,
            ..Default::default()
        };
        let spawned = tend_sys::exec::Prepared::new(&argv, &self.env)
            .map(|mut p| {
                p.prefer_beside_self(OsStr::new("tend-log"));
                p
            })
            .map_err(tend_sys::process::SpawnError::Exec)
            .and_then(|p| tend_sys::process::spawn(&p, &opts));
        match spawned {
            Ok(pid) => {
                self.logger = Some(pid);
                self.catch_all = Some(w);
                self.log_command = true;
            }
            Err(_) => self.warn(format_args!(
                "unable to start tend-log: no catch-all logger"
            )),
        }
    }

    /// tend-svscan on /run/service from the start, as s6-overlay's PID 1 is the scanner.
    fn overlay_scanner(&mut self) {
        let dst = self.settings.scan_dir.clone();
        if let Err(e) = std::fs::create_dir_all(&dst) {
            return self.fatal(
                code::SYSTEM,
                format_args!("unable to create {}: {e}", dst.display()),
            );
        }
        if !self.spawn_scanner(&dst) {
            return;
        }
        // tend-rc controls the scanner: wait until it listens (its control FIFO has a
        // reader), or until it dies.
        let fifo = dst.join(tend_proto::servicedir::svscan::CONTROL);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.scanner.is_some() && Instant::now() < deadline {
            if tend_proto::control::open_writer(&fifo).is_ok() {
                return;
            }
            self.turn(Some(Instant::now() + Duration::from_millis(10)));
        }
        self.fatal(
            code::SYSTEM,
            format_args!(
                "{} is not listening on {}",
                crate::services::SCANNER,
                dst.display()
            ),
        );
    }

    fn stage2_hook(&mut self, hook: &[OsString]) {
        let c = self.run_program(hook, None);
        if c != 0 {
            self.warn(format_args!(
                "hook {} exited {c}",
                String::from_utf8_lossy(hook[0].as_bytes())
            ));
        }
    }

    /// `base`: every cont-init.d script, in order; with S6_BEHAVIOUR_IF_STAGE2_FAILS=2
    /// (stop) the container stops once they have all run, as s6-overlay's cont-init.
    fn base(&mut self) {
        let dir = self.settings.init_dir.clone();
        let mut failed = false;
        for script in self.scripts(&dir) {
            if !self.carry_on() {
                return;
            }
            self.info(format_args!("running {}", script.display()));
            let c = self.run_script(&script, None);
            if c != 0 && self.stop.is_none() {
                failed = true;
                self.warn(format_args!("{} exited {c}", script.display()));
            }
        }
        if failed && self.settings.on_init_failure == OnFailure::Stop {
            self.fatal(
                code::NO,
                format_args!("some cont-init.d scripts exited nonzero"),
            );
        }
    }

    /// `tend-rc init` over the image's tree and tend-init's own sources; false if that
    /// failed (then said why).
    fn rc_init(&mut self, sources: &Sources, verbosity: u32) -> bool {
        if !self.longruns_can_run(sources) {
            return false;
        }
        match self.rc_sources(sources, verbosity) {
            Ok(dirs) => self.rc_init_from(&dirs),
            Err(e) => {
                self.fatal(code::SYSTEM, format_args!("{e}"));
                false
            }
        }
    }

    /// The source directories for tend-rc: the tree (a view without `user` and `user2`
    /// where it holds them), the bundle directory's other definitions, and our own.
    fn rc_sources(&mut self, sources: &Sources, verbosity: u32) -> Result<Vec<PathBuf>, Error> {
        if sources.in_tree && verbosity >= 1 {
            self.warn(format_args!(
                "{}: the user bundles belong in {} since s6-overlay 3.2.3.2 (read from s6-rc.d for now)",
                sources.tree.join("user").display(),
                sources.tree.with_file_name("user-bundles.d").display(),
            ));
        }
        if sources.explicit && !sources.bundles.is_dir() {
            return Err(Error::at(
                "read S6_RUNTIME_BUNDLEDIR",
                &sources.bundles,
                nix::errno::Errno::ENOENT,
            ));
        }
        let mut dirs = Vec::new();
        let holds_bundles = USER_BUNDLES.iter().any(|b| sources.tree.join(b).exists());
        if !holds_bundles {
            dirs.push(sources.tree.clone());
        } else if write_view(&sources.tree, Path::new(TREE_VIEW))? {
            dirs.push(TREE_VIEW.into());
        }
        if !sources.in_tree
            && sources.bundles.is_dir()
            && write_view(&sources.bundles, Path::new(BUNDLE_VIEW))?
        {
            dirs.push(BUNDLE_VIEW.into());
        }
        write_own_sources(Path::new(OWN_SOURCES), sources)?;
        dirs.push(OWN_SOURCES.into());
        Ok(dirs)
    }

    fn rc_init_from(&mut self, dirs: &[PathBuf]) -> bool {
        // The options before the word `init`: tend-rc reads its options POSIX-style.
        let mut argv: Vec<OsString> = vec![RC.into(), "-l".into(), LIVE.into()];
        for d in dirs {
            argv.push("-c".into());
            argv.push(d.clone().into_os_string());
        }
        argv.push("init".into());
        argv.push(self.settings.scan_dir.clone().into_os_string());
        let c = self.run_program(&argv, None);
        if c != 0 {
            self.fatal(
                if c == code::NO {
                    code::NO
                } else {
                    code::SYSTEM
                },
                format_args!("{RC} init exited {c}: the services were not started"),
            );
        }
        c == 0
    }

    /// `tend-rc -u change BUNDLE`, bounded by the services wait.
    fn rc_up(&mut self, bundle: &str, verbosity: u32) {
        let mut argv: Vec<OsString> = vec![RC.into(), format!("-v{verbosity}").into()];
        if let Some(w) = self.settings.services_wait {
            argv.push(format!("-t{}", w.as_millis()).into());
        }
        argv.extend(["-l", LIVE, "-u", "change", bundle].map(OsString::from));
        let c = self.run_program(&argv, None);
        if c != 0 && self.stop.is_none() {
            // As s6-overlay's rc.init: any failure, a timeout (2) included, is a warning
            // and the command runs, unless S6_BEHAVIOUR_IF_STAGE2_FAILS=2 stops the
            // container with tend-rc's code.
            match self.settings.on_services_failure {
                OnFailure::Warn => self.warn(format_args!(
                    "{RC} -u change {bundle} exited {c}: carrying on"
                )),
                OnFailure::Stop => {
                    self.fatal(c, format_args!("{RC} -u change {bundle} exited {c}"))
                }
            }
        }
    }

    /// rc services down, dependents first, by `deadline` (the services' grace time,
    /// shared by every step of the way down): `-d change user2` before the legacy
    /// services, `-da change` (everything left) after them.
    fn rc_down(&mut self, verbosity: u32, what: &[&str], deadline: Instant) {
        let mut argv: Vec<OsString> = vec![
            RC.into(),
            format!("-v{verbosity}").into(),
            "-l".into(),
            LIVE.into(),
        ];
        argv.extend(what.iter().map(OsString::from));
        let left = deadline.saturating_duration_since(Instant::now());
        let c = self.run_program(&argv, Some(left));
        if c != 0 {
            self.warn(format_args!("{RC} {} exited {c}", what.join(" ")));
        }
    }

    /// `legacy-services`: services.d mirrored into the scan directory and picked up by
    /// a rescan; waited for when S6_CMD_WAIT_FOR_SERVICES asks.
    fn legacy_services(&mut self, wait: bool) {
        let src = self.settings.services_dir.clone();
        let dst = self.settings.scan_dir.clone();
        let names = match tree::list(&src) {
            Ok(v) if !v.is_empty() => v,
            _ => return,
        };
        let staging = Path::new("/run/s6/legacy-services");
        if let Err(e) = tree::mirror(&src, staging) {
            return self.fatal(code::SYSTEM, format_args!("{e}"));
        }
        let services: Vec<tree::Service> = tree::services(staging);
        let subs = if wait {
            Self::subscribe(&services)
        } else {
            None
        };
        for n in &names {
            let link = dst.join(n);
            let _ = std::fs::remove_file(&link);
            let _ = std::os::unix::fs::symlink(staging.join(n), &link);
        }
        self.legacy = names;
        let _ = tend_proto::control::send_scan(&dst, &[ScanCommand::Scan]);
        if wait {
            self.wait_for_services(&services, subs);
        } else {
            self.legacy_started(staging);
        }
    }

    /// Without S6_CMD_WAIT_FOR_SERVICES, a short wait (at most a second, no warning)
    /// until every services.d service without a `down` file has started its run:
    /// s6-overlay 3.2.3.2 runs the command once its legacy-services oneshot has
    /// returned, by which time s6-svscan has started them (tests/overlay-record:
    /// settings), so a quick command still finds them up and they are taken down after.
    fn legacy_started(&mut self, staging: &Path) {
        let dirs: Vec<PathBuf> = self
            .legacy
            .iter()
            .map(|n| staging.join(n))
            .filter(|d| !d.join(tend_proto::servicedir::DOWN).exists())
            .collect();
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.carry_on()
            && self.scanner.is_some()
            && Instant::now() < deadline
            && !dirs.iter().all(|d| still_up(d))
        {
            self.turn(Some(Instant::now() + Duration::from_millis(5)));
        }
    }

    /// The legacy services down before the rc services they come after.
    fn legacy_down(&mut self, deadline: Instant) {
        let names = std::mem::take(&mut self.legacy);
        if names.is_empty() || self.scanner.is_none() {
            return;
        }
        let dirs: Vec<PathBuf> = names
            .iter()
            .map(|n| self.settings.scan_dir.join(n))
            .collect();
        for d in &dirs {
            let _ = tend_proto::control::send_commands(d, &[tend_proto::ControlCommand::Down]);
        }
        while Instant::now() < deadline && dirs.iter().any(|d| still_up(d)) {
            self.turn(Some(Instant::now() + Duration::from_millis(20)));
        }
    }
}

/// A service whose supervisor still reports a process.
fn still_up(dir: &Path) -> bool {
    tend_proto::status::StatusRecord::read(dir).is_ok_and(|r| r.is_up())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(v: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        v.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    fn value<'a>(e: &'a [(OsString, OsString)], k: &str) -> Option<&'a str> {
        get(e, k).map(|v| std::str::from_utf8(v).unwrap())
    }

    #[test]
    fn s6_variables_become_settings_and_tend_ones_win() {
        let (e, _, w) = translate(
            &env(&[
                ("S6_KILL_GRACETIME", "700"),
                ("S6_SERVICES_GRACETIME", "900"),
                ("TEND_SERVICES_GRACETIME", "1200"),
                ("S6_BEHAVIOUR_IF_STAGE2_FAILS", "2"),
                ("S6_CMD_WAIT_FOR_SERVICES_MAXTIME", "4000"),
                ("S6_KILL_FINISH_MAXTIME", "100"),
            ]),
            Layout::default(),
        );
        assert!(w.is_empty(), "{w:?}");
        let s = Settings::resolve(&[], &e, true).unwrap();
        assert_eq!(s.kill_grace, Duration::from_millis(700));
        assert_eq!(s.services_grace, Duration::from_millis(1200));
        assert_eq!(s.on_init_failure, OnFailure::Stop);
        assert_eq!(s.on_services_failure, OnFailure::Stop);
        assert_eq!(s.services_wait, Some(Duration::from_millis(4000)));
        assert_eq!(s.finish_time, Duration::from_millis(100));
        assert_eq!(s.scan_dir, PathBuf::from(SCAN_DIR));
        assert_eq!(s.env_dir, Some(PathBuf::from(CONTAINER_ENV)));
        assert_eq!(s.init_dir, PathBuf::from(CONT_INIT));
    }

    #[test]
    fn s6_overlay_defaults_apply_where_nothing_is_set() {
        let (e, ov, w) = translate(&[], Layout::default());
        assert!(w.is_empty());
        let s = Settings::resolve(&[], &e, true).unwrap();
        assert_eq!(s.services_wait, None);
        assert_eq!(s.on_init_failure, OnFailure::Warn);
        assert_eq!(s.kill_grace, Duration::from_millis(3000));
        assert_eq!(s.finish_time, Duration::from_millis(5000));
        assert_eq!(ov.verbosity, 2);
        assert_eq!(ov.logging, 0);
        assert_eq!(ov.logging_script, words(b"n20 s1000000 T"));
    }

    #[test]
    fn unknown_and_bad_s6_variables_are_named_once() {
        let (e, ov, w) = translate(
            &env(&[
                ("S6_FROBNICATE", "1"),
                ("S6_FROBNICATE", "2"),
                ("S6_KILL_GRACETIME", "soon"),
                ("S6_CMD_ARG0", "/usr/bin/entry  --flag"),
                ("S6_OVERLAY_VERSION", "3.1.6.2"),
                ("S6_LOGGING", "2"),
            ]),
            Layout::default(),
        );
        assert_eq!(
            w,
            [
                "S6_KILL_GRACETIME=soon: not a number: using the default",
                "ignoring S6_FROBNICATE: not supported by tend-init",
            ]
        );
        assert_eq!(value(&e, "TEND_KILL_GRACETIME"), Some("3000"));
        assert_eq!(ov.cmd_arg0, words(b"/usr/bin/entry --flag"));
        assert_eq!(ov.logging, 2);
    }

    #[test]
    fn overlay_mode_is_chosen_by_name_and_layout() {
        use crate::settings::Overlay::{Auto, Off, On};
        let l = Layout {
            rc_tree: true,
            ..Layout::default()
        };
        let none = Layout::default();
        assert!(wanted(Auto, OsStr::new("/init"), &l));
        assert!(!wanted(Auto, OsStr::new("tend-init"), &l));
        assert!(!wanted(Auto, OsStr::new("/init"), &none));
        assert!(wanted(On, OsStr::new("x"), &none));
        assert!(!wanted(Off, OsStr::new("/init"), &l));
    }

    #[test]
    fn own_sources_fill_in_only_what_the_image_lacks() {
        let base = std::env::temp_dir().join(format!("tend-overlay-{}", std::process::id()));
        let (image, own) = (base.join("image"), base.join("own"));
        // The image's user has only contents.d (s6-overlay supplies the type), and a
        // base of its own.
        std::fs::create_dir_all(image.join("user/contents.d")).unwrap();
        std::fs::write(image.join("user/contents.d/app"), "").unwrap();
        std::fs::create_dir_all(image.join("base")).unwrap();
        std::fs::write(image.join("base/type"), "bundle\n").unwrap();
        let sources = Sources {
            tree: image.clone(),
            bundles: image.clone(),
            in_tree: true,
            explicit: false,
        };
        write_own_sources(&own, &sources).unwrap();
        for b in USER_BUNDLES {
            assert_eq!(
                std::fs::read_to_string(own.join(b).join("type")).unwrap(),
                "bundle\n"
            );
        }
        assert!(own.join("user/contents.d/app").exists());
        assert!(!own.join("base").exists());
        let view = base.join("view");
        assert!(write_view(&image, &view).unwrap());
        assert!(view.join("base").exists() && !view.join("user").exists());
        assert!(own.join("legacy-services/dependencies.d/user").exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn sources_are_chosen_as_rc_init_does() {
        let root = std::env::temp_dir().join(format!("tend-sources-{}", std::process::id()));
        let (_, mut ov, _) = translate(&[], Layout::default());
        let tree = root.join("etc/s6-overlay/s6-rc.d");
        std::fs::create_dir_all(&tree).unwrap();
        let s = Sources::choose(&ov, &root);
        assert_eq!((s.tree, s.in_tree), (tree.clone(), false));
        assert_eq!(s.bundles, root.join("etc/s6-overlay/user-bundles.d"));
        ov.bundle_dir = Some("/etc/other".into());
        ov.profile = Some("p".into());
        let s = Sources::choose(&ov, &root);
        assert_eq!(s.tree, root.join("etc/cont-profile.d/p/s6-overlay/s6-rc.d"));
        assert_eq!((s.bundles, s.explicit), (root.join("etc/other"), true));
        // A `user` in the tree: the bundles come from there, the bundle directory unread.
        ov.profile = None;
        std::fs::create_dir_all(tree.join("user")).unwrap();
        let s = Sources::choose(&ov, &root);
        assert_eq!((s.bundles, s.in_tree), (tree, true));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn exit_code_file() {
        let p = std::env::temp_dir().join(format!("tend-exitcode-{}", std::process::id()));
        std::fs::write(&p, "42\n").unwrap();
        assert_eq!(read_exit_code(&p), Some(42));
        std::fs::write(&p, "x").unwrap();
        assert_eq!(read_exit_code(&p), None);
        std::fs::remove_file(&p).unwrap();
        assert_eq!(read_exit_code(&p), None);
    }
}
