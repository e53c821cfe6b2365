//! tend-extension (issue 38, Kata's guest extension images) outside a guest: a fake
//! /sys, /dev and kernel command line (`-S`, `-D`, `-k`) for every refusal that comes
//! before a device is opened, and the disk image builder the VM tests attach to qemu
//! (guest::slow_vm_extension_*). Not tested here: the device-mapper ioctls and the mount
//! (the VM tests do both).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const HASH: &str = "4392712ba01368efdf14b05c76f9e4df0d53664630b5d48632ed17a137f39076";

/// A fake machine: sysfs, /dev, the kernel command line, the mount root.
struct Fake {
    s: Scratch,
}

impl Fake {
    fn new(name: &str, cmdline: &str) -> Fake {
        let s = Scratch::new(name);
        s.write("cmdline", &format!("{cmdline}\n"), false);
        std::fs::create_dir_all(s.join("sys/block")).unwrap();
        std::fs::create_dir_all(s.join("dev")).unwrap();
        Fake { s }
    }

    /// A disk with a serial and partitions 1..=parts, each 8 sectors.
    fn disk(&self, kname: &str, serial: &str, parts: u32) -> &Fake {
        let d = format!("sys/block/{kname}");
        self.s
            .write(&format!("{d}/serial"), &format!("{serial}\n"), false);
        self.s.write(&format!("{d}/dev"), "254:0\n", false);
        self.s.write(&format!("{d}/size"), "64\n", false);
        for n in 1..=parts {
            let p = format!("{d}/{kname}{n}");
            self.s
                .write(&format!("{p}/partition"), &format!("{n}\n"), false);
            self.s
                .write(&format!("{p}/dev"), &format!("254:{n}\n"), false);
            self.s.write(&format!("{p}/size"), "8\n", false);
        }
        self
    }

    fn run(&self, extra: &[&str]) -> std::process::Output {
        let mut c = cmd("tend-extension");
        c.args(extra)
            .arg("-S")
            .arg(self.s.join("sys"))
            .arg("-D")
            .arg(self.s.join("dev"))
            .arg("-k")
            .arg(self.s.join("cmdline"))
            .arg("-m")
            .arg(self.s.join("mnt"));
        run(c)
    }
}

#[track_caller]
fn refused(o: &std::process::Output, line: &str) {
    assert_code(o, 100);
    assert_eq!(
        text(&o.stderr),
        format!("tend-extension: fatal: refusing extension {line}\n")
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn no_extension_is_nothing_to_do() {
    let f = Fake::new("ext-none", "console=ttyS0 quiet");
    f.disk("vda", "root", 2);
    let o = f.run(&[]);
    assert_code(&o, 0);
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    assert!(!f.s.join("mnt").exists());
}

/// The design's four rows (hash partition × verity_params): three refusals here, the
/// fourth a raw mount of what must be EROFS; and the refusals around them.
#[test]
fn each_refusal_is_one_line_and_exit_100() {
    let p = format!("kata.extension.tools.verity_params=root_hash={HASH}");
    for (cmdline, disks, opts, line) in [
        (
            "kata.extension.tools.verity_params".to_string(),
            vec![("vdb", "extension-tools", 2)],
            &[][..],
            "tools: vdb has a dm-verity hash partition but the kernel command line gives no \
             verity_params (verity stripped)",
        ),
        (
            "kata.extension.tools.verity_params=".to_string(),
            vec![("vdb", "extension-tools", 2)],
            &[],
            "tools: vdb has a dm-verity hash partition but the kernel command line gives no \
             verity_params (verity stripped)",
        ),
        (
            p.clone(),
            vec![("vdb", "extension-tools", 1)],
            &[],
            "tools: verity_params are given but vdb has no hash partition (nothing to verify)",
        ),
        (
            p.clone(),
            vec![],
            &[],
            "tools: no disk has the serial extension-tools",
        ),
        (
            String::new(),
            vec![("vdc", "extension-tools", 2)],
            &[],
            "tools: vdc is not named on the kernel command line \
             (kata.extension.tools.verity_params)",
        ),
        (
            p.clone(),
            vec![("vdb", "extension-tools", 2), ("vdc", "extension-tools", 2)],
            &[],
            "tools: vdb and vdc both have the serial extension-tools",
        ),
        (
            "kata.extension.tools.verity_params=root_hash=00".to_string(),
            vec![("vdb", "extension-tools", 2)],
            &[],
            "tools: verity_params: root_hash is not 64 hexadecimal digits (sha256)",
        ),
        (
            format!("{p},data_blocks=3"),
            vec![("vdb", "extension-tools", 2)],
            &[],
            "tools: data_blocks 3 of 4096 bytes do not fit in vdb1 (8 sectors)",
        ),
        (
            "kata.extension.tools.verity_params".to_string(),
            vec![("vdb", "extension-tools", 1)],
            &["-V"],
            "tools: vdb carries no dm-verity and -V requires it",
        ),
        (
            "kata.extension.a.b.verity_params".to_string(),
            vec![],
            &[],
            "a.b: a name is letters, digits, - and _",
        ),
    ] {
        let f = Fake::new("ext-refused", &cmdline);
        for (kname, serial, parts) in disks {
            f.disk(kname, serial, parts);
        }
        refused(&f.run(opts), line);
        assert!(!f.s.join("mnt").exists(), "{line}");
    }
}

/// Row four, neither hash partition nor parameters: mounted raw, so what is mounted must
/// be EROFS, checked by its magic before mount(2) is tried.
#[test]
fn an_unmeasured_extension_must_be_erofs() {
    let f = Fake::new("ext-raw", "quiet kata.extension.tools.verity_params");
    f.disk("vdb", "extension-tools", 1);
    f.s.write("dev/vdb1", &"x".repeat(4096), false);
    refused(
        &f.run(&[]),
        &format!("tools: {} is not EROFS", f.s.join("dev/vdb1").display()),
    );
    f.s.write("dev/vdb1", "short", false);
    refused(
        &f.run(&[]),
        &format!(
            "tools: {} is too short for EROFS",
            f.s.join("dev/vdb1").display()
        ),
    );
}

#[test]
fn usage_and_system_errors() {
    let o = tend("tend-extension", ["-x"]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-extension: usage: tend-extension [ -V ] [ -S sysdir ] [ -D devdir ] \
         [ -k cmdline ] [ -m mountdir ]\n"
    );
    assert_code(&tend("tend-extension", ["operand"]), 100);
    let f = Fake::new("ext-sys", "");
    std::fs::remove_file(f.s.join("cmdline")).unwrap();
    let o = f.run(&[]);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-extension: fatal: unable to read {}: No such file or directory\n",
            f.s.join("cmdline").display()
        )
    );
}

// ---- extension images for the VM tests --------------------------------------------------

/// A Kata extension disk as its image builder makes one: an MBR, the EROFS at partition
/// 1, the dm-verity hash tree (`veritysetup format --no-superblock`) at partition 2.
pub(crate) struct ExtensionDisk {
    pub(crate) path: PathBuf,
    /// `root_hash=...,salt=...,data_blocks=...,hash_block_size=...,data_block_size=...`
    pub(crate) params: String,
    pub(crate) root_hash: String,
}

/// Built from `files` (name, contents) with Debian's mkfs.erofs and veritysetup; None
/// (with the reason on stderr) when they are missing.
pub(crate) fn extension_disk(s: &Scratch, files: &[(&str, &str)]) -> Option<ExtensionDisk> {
    for p in ["mkfs.erofs", "veritysetup"] {
        if !have(p) {
            skip(format!(
                "{p} is not installed (apt-get install erofs-utils cryptsetup-bin)"
            ));
            return None;
        }
    }
    let data = erofs_image(s, "ext-data", files);
    let hash = s.join("ext-hash.img");
    let o = run({
        let mut c = Command::new("veritysetup");
        c.args(["format", "--no-superblock"]).arg(&data).arg(&hash);
        c
    });
    assert_code(&o, 0);
    let out = text(&o.stdout);
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim_start_matches(':').trim().to_string())
            .unwrap_or_else(|| panic!("no {name} in {out}"))
    };
    let root_hash = field("Root hash");
    let params = format!(
        "root_hash={root_hash},salt={},data_blocks={},hash_block_size={},data_block_size={}",
        field("Salt"),
        field("Data blocks"),
        field("Hash block size"),
        field("Data block size")
    );
    let path = s.join("ext-disk.img");
    partitioned(&path, &[&data, &hash]);
    Some(ExtensionDisk {
        path,
        params,
        root_hash,
    })
}

/// An EROFS image `NAME.img` of `files` (Debian's mkfs.erofs) and a filler of four
/// blocks: more than one data block, so a hash tree has a block of its own.
pub(crate) fn erofs_image(s: &Scratch, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let content = s.join(format!("{name}-content"));
    std::fs::create_dir_all(&content).unwrap();
    for (file, body) in files {
        std::fs::write(content.join(file), body).unwrap();
    }
    std::fs::write(content.join("filler"), "0123456789abcdef".repeat(1024)).unwrap();
    let image = s.join(format!("{name}.img"));
    let o = run({
        let mut c = Command::new("mkfs.erofs");
        c.args(["--quiet", "-T0"]).arg(&image).arg(&content);
        c
    });
    assert_code(&o, 0);
    image
}

/// A disk with an MBR and one Linux partition per file, each at a 1 MiB boundary.
fn partitioned(disk: &Path, parts: &[&Path]) {
    let mut image = vec![0u8; 512];
    let mut start = 2048u32;
    for (i, p) in parts.iter().enumerate() {
        let body = std::fs::read(p).unwrap();
        let sectors = body.len().div_ceil(512) as u32;
        let e = 446 + 16 * i;
        // No CHS addresses (0xfe 0xff 0xff: "use the LBA fields"), type 0x83.
        image[e + 1..e + 4].copy_from_slice(&[0xfe, 0xff, 0xff]);
        image[e + 4] = 0x83;
        image[e + 5..e + 8].copy_from_slice(&[0xfe, 0xff, 0xff]);
        image[e + 8..e + 12].copy_from_slice(&start.to_le_bytes());
        image[e + 12..e + 16].copy_from_slice(&sectors.to_le_bytes());
        image.resize(start as usize * 512, 0);
        image.extend_from_slice(&body);
        start += sectors.div_ceil(2048) * 2048;
    }
    image[510..512].copy_from_slice(&[0x55, 0xaa]);
    image.resize(start as usize * 512, 0);
    std::fs::write(disk, image).unwrap();
}
