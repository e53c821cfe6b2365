//! Kata's guest extension images (its composable VM images design), mounted before the
//! agent starts: tend-extension's logic. Each extension is a virtio-blk disk whose
//! serial is `extension-NAME`, named on the kernel command line as
//! `kata.extension.NAME.verity_params=root_hash=...,salt=...,data_blocks=...,
//! hash_block_size=...,data_block_size=...` (a bare key for an unmeasured one). Its
//! first partition is EROFS; a measured image carries the dm-verity hash tree, built
//! with `veritysetup format --no-superblock`, as its second. It is opened as the
//! device-mapper device `extension-NAME` (a verity table loaded by ioctl) and mounted
//! read-only at `/run/kata-extensions/NAME`.
//!
//! It fails closed. The design's four rows, the disk's layout cross-checked with the
//! command line: hash partition and parameters → verify and mount; hash partition
//! without parameters → refuse (verity stripped); parameters without a hash partition →
//! refuse (nothing to verify); neither → a raw mount (unmeasured), unless dm-verity is
//! required (`-V`, as NVRC requires it). Also refused: an extension named on the command
//! line with no disk, a disk the command line does not name, two disks with one serial,
//! parameters that do not parse, an image that fails verification (its first block read
//! through dm-verity) or is not EROFS. Every disk is checked before any is opened.
//!
//! The roots (/sys, /dev, /proc/cmdline, /run/kata-extensions) are settings, so the
//! checks run outside a guest over a fake tree.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tend_sys::Error;
use tend_sys::dm::Control;
use tend_sys::machine;

/// Where the program looks and mounts.
#[derive(Debug, Clone)]
pub struct Roots {
    pub sys: PathBuf,
    pub dev: PathBuf,
    pub cmdline: PathBuf,
    pub mount: PathBuf,
}

impl Default for Roots {
    fn default() -> Roots {
        Roots {
            sys: "/sys".into(),
            dev: "/dev".into(),
            cmdline: "/proc/cmdline".into(),
            mount: "/run/kata-extensions".into(),
        }
    }
}

/// Why nothing (more) was mounted.
#[derive(Debug)]
pub enum Failure {
    /// The layout, the command line or the image is refused (exit 100).
    Refused { name: String, why: String },
    /// A system call failed (exit 111).
    System { name: Option<String>, err: Error },
}

impl Failure {
    pub fn code(&self) -> i32 {
        match self {
            Failure::Refused { .. } => tend_sys::code::USAGE,
            Failure::System { err, .. } => err.code(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Refused { name, why } => write!(f, "refusing extension {name}: {why}"),
            Failure::System {
                name: Some(name),
                err,
            } => write!(f, "extension {name}: {err}"),
            Failure::System { name: None, err } => err.fmt(f),
        }
    }
}

fn refuse(name: &str, why: impl fmt::Display) -> Failure {
    Failure::Refused {
        name: name.to_string(),
        why: why.to_string(),
    }
}

/// One mounted extension, for the caller's line.
#[derive(Debug, PartialEq, Eq)]
pub struct Mounted {
    pub name: String,
    pub source: PathBuf,
    pub target: PathBuf,
    pub verified: bool,
    /// Found mounted already: nothing done.
    pub already: bool,
}

/// A block device or partition as sysfs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    /// The kernel's name (vdb, vdb1), also its /dev node's.
    kname: String,
    /// "major:minor", as a table line takes it.
    dev: String,
    sectors: u64,
}

#[derive(Debug, Clone)]
struct Disk {
    whole: Part,
    data: Option<Part>,
    hash: Option<Part>,
}

/// The dm-verity parameters of one extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verity {
    pub root_hash: String,
    pub salt: String,
    pub data_blocks: Option<u64>,
    pub data_block_size: u64,
    pub hash_block_size: u64,
}

/// What is to be done for one extension, every check passed.
#[derive(Debug)]
enum Plan {
    Verified {
        data: Part,
        hash: Part,
        verity: Verity,
        blocks: u64,
    },
    Raw(Part),
}

/// An extension name as Kata's configuration accepts it.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The `kata.extension.NAME.verity_params` words of a kernel command line: name →
/// value (empty for a bare key); the last word for a name wins, as the kernel's own
/// parameters do.
pub fn named_on_cmdline(cmdline: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for word in cmdline.split_ascii_whitespace() {
        let (key, value) = word.split_once('=').unwrap_or((word, ""));
        if let Some(name) = key
            .strip_prefix("kata.extension.")
            .and_then(|k| k.strip_suffix(".verity_params"))
        {
            out.insert(name.to_string(), value.to_string());
        }
    }
    out
}

/// `root_hash=HEX,salt=HEX,data_blocks=N,hash_block_size=N,data_block_size=N`; only
/// root_hash is required (salt `-` is none; the block sizes default to 4096, the data
/// blocks to the whole data partition). Any other key is refused: a misread security
/// parameter must not pass as a default.
pub fn parse_verity(params: &str) -> Result<Verity, String> {
    let mut v = Verity {
        root_hash: String::new(),
        salt: "-".into(),
        data_blocks: None,
        data_block_size: 4096,
        hash_block_size: 4096,
    };
    for pair in params.split(',') {
        let Some((k, val)) = pair.split_once('=') else {
            return Err(format!("{pair:?} is not key=value"));
        };
        let number = || {
            val.parse::<u64>()
                .map_err(|_| format!("{k}={val} is not a number"))
        };
        let block_size = || {
            let n = number()?;
            if n.is_power_of_two() && (512..=65536).contains(&n) {
                Ok(n)
            } else {
                Err(format!("{k}={val} is not a power of two from 512 to 65536"))
            }
        };
        match k {
            "root_hash" => v.root_hash = val.to_ascii_lowercase(),
            "salt" => v.salt = val.to_ascii_lowercase(),
            "data_blocks" => match number()? {
                0 => return Err("data_blocks=0 leaves nothing to verify".into()),
                n => v.data_blocks = Some(n),
            },
            "data_block_size" => v.data_block_size = block_size()?,
            "hash_block_size" => v.hash_block_size = block_size()?,
            _ => return Err(format!("unknown key {k}")),
        }
    }
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    // sha256, veritysetup's default and the only hash the parameters can name.
    if v.root_hash.len() != 64 || !hex(&v.root_hash) {
        return Err("root_hash is not 64 hexadecimal digits (sha256)".into());
    }
    if v.salt != "-" && (!v.salt.len().is_multiple_of(2) || v.salt.len() > 512 || !hex(&v.salt)) {
        return Err("salt is not hexadecimal bytes (at most 256) or -".into());
    }
    Ok(v)
}

fn read_trimmed(p: &Path) -> Result<Option<String>, Error> {
    match std::fs::read(p) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", p, &e)),
    }
}

fn part(dir: &Path, kname: &str) -> Result<Option<Part>, Error> {
    let (Some(dev), Some(size)) = (
        read_trimmed(&dir.join("dev"))?,
        read_trimmed(&dir.join("size"))?,
    ) else {
        return Ok(None);
    };
    Ok(Some(Part {
        kname: kname.to_string(),
        dev,
        sectors: size.parse().unwrap_or(0),
    }))
}

/// Every disk of /sys/block whose serial is `extension-NAME`, by NAME (several when
/// serials repeat), with its first two partitions.
fn extension_disks(sys: &Path) -> Result<BTreeMap<String, Vec<Disk>>, Error> {
    let block = sys.join("block");
    let mut out: BTreeMap<String, Vec<Disk>> = BTreeMap::new();
    let entries = match std::fs::read_dir(&block) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io("read", &block, &e)),
    };
    let mut dirs: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    dirs.sort();
    for (kname, dir) in dirs {
        let Some(serial) = read_trimmed(&dir.join("serial"))? else {
            continue;
        };
        let Some(name) = serial.strip_prefix("extension-") else {
            continue;
        };
        let Some(whole) = part(&dir, &kname)? else {
            continue;
        };
        let mut disk = Disk {
            whole,
            data: None,
            hash: None,
        };
        for e in std::fs::read_dir(&dir).map_err(|e| Error::io("read", &dir, &e))? {
            // A partition is a directory of its disk's (links like `device` are not).
            let Ok(e) = e else { continue };
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let pdir = e.path();
            let Some(n) = read_trimmed(&pdir.join("partition"))? else {
                continue;
            };
            let slot = match n.as_str() {
                "1" => &mut disk.data,
                "2" => &mut disk.hash,
                _ => continue,
            };
            *slot = part(&pdir, &e.file_name().to_string_lossy())?;
        }
        out.entry(name.to_string()).or_default().push(disk);
    }
    Ok(out)
}

/// The checks, for every extension the command line or a disk names, before anything is
/// opened: the first refusal ends it.
fn plan(roots: &Roots, require_verity: bool) -> Result<Vec<(String, Plan)>, Failure> {
    let cmdline = std::fs::read(&roots.cmdline).map_err(|e| Failure::System {
        name: None,
        err: Error::io("read", &roots.cmdline, &e),
    })?;
    let named = named_on_cmdline(&String::from_utf8_lossy(&cmdline));
    let mut disks =
        extension_disks(&roots.sys).map_err(|err| Failure::System { name: None, err })?;
    let mut names: Vec<String> = named.keys().chain(disks.keys()).cloned().collect();
    names.sort();
    names.dedup();
    let mut plans = Vec::new();
    for name in names {
        if !valid_name(&name) {
            return Err(refuse(&name, "a name is letters, digits, - and _"));
        }
        let serial = format!("extension-{name}");
        let disk = match disks.remove(&name).unwrap_or_default().as_slice() {
            [] => return Err(refuse(&name, format!("no disk has the serial {serial}"))),
            [d] => d.clone(),
            [a, b, ..] => {
                return Err(refuse(
                    &name,
                    format!(
                        "{} and {} both have the serial {serial}",
                        a.whole.kname, b.whole.kname
                    ),
                ));
            }
        };
        let disk_name = &disk.whole.kname;
        let Some(params) = named.get(&name) else {
            return Err(refuse(
                &name,
                format!(
                    "{disk_name} is not named on the kernel command line \
                     (kata.extension.{name}.verity_params)"
                ),
            ));
        };
        let plan = match (disk.hash, params.is_empty()) {
            (Some(_), true) => {
                return Err(refuse(
                    &name,
                    format!(
                        "{disk_name} has a dm-verity hash partition but the kernel command \
                         line gives no verity_params (verity stripped)"
                    ),
                ));
            }
            (None, false) => {
                return Err(refuse(
                    &name,
                    format!(
                        "verity_params are given but {disk_name} has no hash partition \
                         (nothing to verify)"
                    ),
                ));
            }
            (None, true) if require_verity => {
                return Err(refuse(
                    &name,
                    format!("{disk_name} carries no dm-verity and -V requires it"),
                ));
            }
            (None, true) => Plan::Raw(disk.data.unwrap_or(disk.whole)),
            (Some(hash), false) => {
                let verity = parse_verity(params)
                    .map_err(|e| refuse(&name, format!("verity_params: {e}")))?;
                let Some(data) = disk.data else {
                    return Err(refuse(
                        &name,
                        format!("{disk_name} has a hash partition but no data partition"),
                    ));
                };
                let fits = data.sectors * 512 / verity.data_block_size;
                let blocks = verity.data_blocks.unwrap_or(fits);
                if blocks == 0 || blocks > fits {
                    return Err(refuse(
                        &name,
                        format!(
                            "data_blocks {blocks} of {} bytes do not fit in {} ({} sectors)",
                            verity.data_block_size, data.kname, data.sectors
                        ),
                    ));
                }
                Plan::Verified {
                    data,
                    hash,
                    verity,
                    blocks,
                }
            }
        };
        plans.push((name, plan));
    }
    Ok(plans)
}

/// Check every extension, then open and mount each; the first failure ends it (the
/// guest is to power off: what was mounted stays).
pub fn mount_all(roots: &Roots, require_verity: bool) -> Result<Vec<Mounted>, Failure> {
    let plans = plan(roots, require_verity)?;
    let mut done = Vec::new();
    let mut control = None;
    for (name, plan) in plans {
        let sys = |err| Failure::System {
            name: Some(name.clone()),
            err,
        };
        let target = roots.mount.join(&name);
        if is_mounted(&target) {
            done.push(Mounted {
                name,
                source: PathBuf::new(),
                target,
                verified: matches!(plan, Plan::Verified { .. }),
                already: true,
            });
            continue;
        }
        let (source, verified) = match &plan {
            Plan::Raw(p) => (roots.dev.join(&p.kname), false),
            Plan::Verified {
                data,
                hash,
                verity,
                blocks,
            } => {
                let c = match control.take() {
                    Some(c) => c,
                    None => {
                        Control::open().map_err(|e| sys(Error::at("open", Control::PATH, e)))?
                    }
                };
                let node = open_verity(&c, roots, &name, data, hash, verity, *blocks);
                control = Some(c);
                (node.map_err(sys)?, true)
            }
        };
        check_erofs(&name, &source, verified)?;
        std::fs::create_dir_all(&target).map_err(|e| sys(Error::io("create", &target, &e)))?;
        let (Some(s), Some(t)) = (source.to_str(), target.to_str()) else {
            return Err(sys(Error::at("mount", &target, nix::errno::Errno::EINVAL)));
        };
        machine::mount(s, t, "erofs", libc::MS_RDONLY | libc::MS_NODEV, None)
            .map_err(|e| sys(Error::at("mount erofs on", &target, e)))?;
        done.push(Mounted {
            name,
            source,
            target,
            verified,
            already: false,
        });
    }
    Ok(done)
}

/// The device-mapper device `extension-NAME`: a read-only verity table over the data and
/// hash partitions, resumed; its /dev node. Removed again when a step fails.
fn open_verity(
    c: &Control,
    roots: &Roots,
    name: &str,
    data: &Part,
    hash: &Part,
    v: &Verity,
    blocks: u64,
) -> Result<PathBuf, Error> {
    let dm = format!("extension-{name}");
    let (major, minor) = c
        .create(&dm)
        .map_err(|e| Error::new("create dm device", e))?;
    // Verity format 1, the hash tree from the hash partition's first block (no
    // superblock), sha256: as `veritysetup open --no-superblock` loads it.
    let line = format!(
        "1 {} {} {} {} {blocks} 0 sha256 {} {}",
        data.dev, hash.dev, v.data_block_size, v.hash_block_size, v.root_hash, v.salt
    );
    let sectors = blocks * (v.data_block_size / 512);
    let live = c
        .load(&dm, sectors, "verity", &line)
        .map_err(|e| Error::new("load the verity table", e))
        .and_then(|()| c.resume(&dm).map_err(|e| Error::new("resume dm device", e)));
    if let Err(e) = live {
        let _ = c.remove(&dm);
        return Err(e);
    }
    // Its kernel name (dm-N) is its /dev node's, made by devtmpfs.
    let link = roots.sys.join(format!("dev/block/{major}:{minor}"));
    let node = std::fs::read_link(&link)
        .ok()
        .and_then(|p| p.file_name().map(|n| roots.dev.join(n)))
        .ok_or_else(|| Error::at("find the node of", &link, nix::errno::Errno::ENOENT))?;
    Ok(node)
}

/// EROFS's magic at byte 1024. Through dm-verity this read is the verification of the
/// first block against the root hash: an I/O error there is a refusal, not a fault.
fn check_erofs(name: &str, source: &Path, verified: bool) -> Result<(), Failure> {
    const MAGIC: u32 = 0xe0f5_e1e2;
    let mut b = [0u8; 4];
    let read = File::open(source).and_then(|f| f.read_exact_at(&mut b, 1024));
    match read {
        Ok(()) if u32::from_le_bytes(b) == MAGIC => Ok(()),
        Ok(()) => Err(refuse(name, format!("{} is not EROFS", source.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(refuse(
            name,
            format!("{} is too short for EROFS", source.display()),
        )),
        Err(e) if verified && e.raw_os_error() == Some(libc::EIO) => Err(refuse(
            name,
            format!(
                "dm-verity verification failed on {} (a wrong root hash or a changed image)",
                source.display()
            ),
        )),
        Err(e) => Err(Failure::System {
            name: Some(name.to_string()),
            err: Error::io("read", source, &e),
        }),
    }
}

fn is_mounted(target: &Path) -> bool {
    let Ok(m) = std::fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    let t = target.to_string_lossy();
    m.lines().any(|l| l.split(' ').nth(1) == Some(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "4392712ba01368efdf14b05c76f9e4df0d53664630b5d48632ed17a137f39076";

    #[test]
    fn the_command_line_names_extensions_bare_or_with_parameters() {
        let n = named_on_cmdline(
            "quiet kata.extension.coco.verity_params=root_hash=ab,salt=- \
             kata.extension.gpu.verity_params kata.extension.x.other=1 \
             kata.extension.coco.verity_params=root_hash=cd",
        );
        let got: Vec<_> = n.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, [("coco", "root_hash=cd"), ("gpu", "")]);
    }

    #[test]
    fn verity_parameters_parse_with_defaults_and_refuse_the_unknown() {
        let v = parse_verity(&format!(
            "root_hash={},salt=00ff,data_blocks=12,hash_block_size=4096,data_block_size=1024",
            HASH.to_uppercase()
        ))
        .unwrap();
        assert_eq!(
            v,
            Verity {
                root_hash: HASH.into(),
                salt: "00ff".into(),
                data_blocks: Some(12),
                data_block_size: 1024,
                hash_block_size: 4096,
            }
        );
        let d = parse_verity(&format!("root_hash={HASH}")).unwrap();
        assert_eq!((d.salt.as_str(), d.data_blocks), ("-", None));
        for (bad, why) in [
            ("salt=00", "root_hash is not 64"),
            ("root_hash=abc", "root_hash is not 64"),
            (
                &format!("root_hash={HASH},hash=sha1")[..],
                "unknown key hash",
            ),
            (&format!("root_hash={HASH},salt=0"), "salt is not"),
            (
                &format!("root_hash={HASH},data_block_size=1000"),
                "not a power",
            ),
            (&format!("root_hash={HASH},data_blocks=x"), "not a number"),
            (&format!("root_hash={HASH},oops"), "not key=value"),
        ] {
            let e = parse_verity(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn names_are_kata_names() {
        assert!(valid_name("coco-1_x"));
        assert!(!valid_name("a/b") && !valid_name("") && !valid_name("a.b"));
    }
}
