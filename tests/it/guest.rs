//! tend-init as a VM guest's init. The `slow_vm_*` tests boot a real kernel in qemu with
//! an initramfs built here (tend-init as /init, busybox for the scripts), read the serial
//! console and drive the machine from the qemu monitor. KVM when a bounded probe boot
//! works, software emulation otherwise; skipped, with the reason, only when qemu, a
//! kernel or busybox is missing, or for the host side of vsock vhost-device-vsock (CI
//! installs them all). Run them alone with
//! `cargo test --test it -- guest::slow_vm`.

use crate::common::*;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Outside PID 1, guest mode runs the stages with the guest's signal meanings but
/// leaves the machine alone: SIGTERM stops everything instead of being forwarded.
#[test]
fn guest_mode_outside_pid1_acts_on_sigterm_and_leaves_the_machine_alone() {
    let s = Scratch::new("guest-nopid1");
    let before = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let mut c = cmd("tend-init");
    c.args(["-m", "guest", "-n", "tend-should-not-be-set", "-e", ""])
        .arg("-s")
        .arg(s.join("none"))
        .arg("-i")
        .arg(s.join("none"))
        .arg("-f")
        .arg(s.join("none"))
        .args([
            "-k",
            "3000",
            "sh",
            "-c",
            "trap '' TERM; echo started; sleep 60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut d = Daemon::start(c);
    let mut out = d.child.stdout.take().unwrap();
    let mut buf = [0u8; 8];
    let n = out.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"started\n");
    d.signal(nix::sys::signal::Signal::SIGTERM);
    // The command ignores SIGTERM: forwarding would not stop it; the guest's stage 3
    // does, with SIGKILL after the kill grace time.
    let st = d
        .wait_exit(Duration::from_secs(30))
        .expect("tend-init exits");
    let mut err = String::new();
    d.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(st.code(), Some(137), "{err}");
    assert!(
        err.starts_with(
            "tend-init: warning: guest mode but not PID 1: no mounts, no host name, no reboot(2)\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("tend-init: info: poweroff requested by SIGTERM\n"),
        "{err}"
    );
    assert!(
        err.contains("tend-init: info: sending SIGKILL to every process\n"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        before
    );
}

/// `-a ACTION` and, as issue 14 writes it, `-s ACTION` signal PID 1 and return at once;
/// here PID 1 is a shell in a new PID namespace that names the signal it got.
#[test]
fn a_request_signals_pid1_and_returns() {
    require("unshare");
    let init = bin("tend-init").display().to_string();
    for (opt, action, signal) in [
        ("-a", "poweroff", "TERM"),
        ("-s", "poweroff", "TERM"),
        ("-a", "reboot", "INT"),
        ("-s", "reboot", "INT"),
        ("-a", "halt", "USR1"),
        ("-s", "halt", "USR1"),
    ] {
        let script = format!(
            "for s in TERM INT USR1; do trap \"echo got-$s\" $s; done\n\
             timeout 10 {init} {opt} {action}; echo returned-$?"
        );
        let o = run({
            let mut c = Command::new("unshare");
            c.args(["--pid", "--fork", "sh", "-c", &script]);
            c
        });
        assert_code(&o, 0);
        // The shell runs the trap once the request has returned, before its next line.
        assert_eq!(
            text(&o.stdout),
            format!("got-{signal}\nreturned-0\n"),
            "{opt} {action}: {}",
            text(&o.stderr)
        );
    }
}

/// Issue 38: early in a guest's boot the kernel's entropy pool is not ready and a read of
/// /dev/urandom blocks (about a second in bench/guest.sh's guest, before the first
/// service started). Here /dev/urandom is a FIFO with no writer, bind-mounted in a mount
/// namespace of the test's own: opening it never returns. tend-init in agent mode
/// (init.d script, a service it waits for, the main program) must not touch it: the
/// service is spawned once, is ready, and the main program finds it so, well within the
/// bound (a hang here is the old wait, forever).
#[test]
fn a_blocking_urandom_does_not_hold_back_the_first_service() {
    require("unshare");
    if !nix::unistd::geteuid().is_root() {
        return skip("a mount namespace (bind mount over /dev/urandom) needs root");
    }
    let s = Scratch::new("guest-urandom");
    let fifo = s.join("urandom");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let starts = s.join("starts");
    s.write("init.d/10-step", "#!/bin/sh\nexit 0\n", true);
    s.write(
        "services/console/run",
        &format!(
            "#!/bin/sh\necho start >> {}\necho\nexec sleep 100\n",
            starts.display()
        ),
        true,
    );
    s.write("services/console/notification-fd", "1\n", false);
    s.write(
        "main",
        &format!("#!/bin/sh\ncat {}\n", starts.display()),
        true,
    );
    let mut c = Command::new("timeout");
    c.args([
        "-s",
        "KILL",
        "30",
        "unshare",
        "--mount",
        "--propagation",
        "private",
    ])
    .args([
        "sh",
        "-c",
        "mount --bind \"$0\" /dev/urandom && exec \"$@\"",
    ])
    .arg(&fifo)
    .arg(bin("tend-init"))
    .args(["-m", "guest", "-e", "", "-g", "2000", "-k", "500"])
    .arg("-i")
    .arg(s.join("init.d"))
    .arg("-s")
    .arg(s.join("services"))
    .arg("-S")
    .arg(s.join("scan"))
    .arg("-f")
    .arg(s.join("none"))
    .arg("-M")
    .arg(s.join("main"));
    let t0 = Instant::now();
    let o = run(c);
    let took = t0.elapsed();
    assert_code(&o, 0);
    // The main program ran after the service was ready, and it had started once.
    assert_eq!(text(&o.stdout), "start\n", "{}", text(&o.stderr));
    assert!(
        took < Duration::from_secs(10),
        "{took:?}: {}",
        text(&o.stderr)
    );
}

#[test]
fn the_action_option_takes_only_the_three_actions() {
    let o = tend("tend-init", ["-a", "off"]);
    assert_code(&o, 100);
    assert!(text(&o.stderr).starts_with("tend-init: usage: tend-init "));
}

// ---- the machine -----------------------------------------------------------------------

/// What a VM test needs from the host.
pub(crate) struct Host {
    pub(crate) kernel: PathBuf,
    /// The ACPI power button driver and the input event interface of that kernel
    /// (modules on Debian), when both are there.
    modules: Option<[PathBuf; 2]>,
    busybox: PathBuf,
    pub(crate) accel: &'static str,
}

/// The host's means to boot a guest, or why there are none.
fn host() -> Result<&'static Host, String> {
    static HOST: OnceLock<Result<Host, String>> = OnceLock::new();
    HOST.get_or_init(find_host).as_ref().map_err(Clone::clone)
}

fn find_host() -> Result<Host, String> {
    for p in ["qemu-system-x86_64", "cpio"] {
        if !have(p) {
            return Err(format!("{p} is not installed"));
        }
    }
    let mut kernels: Vec<PathBuf> = std::fs::read_dir("/boot")
        .map_err(|e| format!("/boot: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().starts_with("/boot/vmlinuz-"))
        .collect();
    kernels.sort();
    let kernel = kernels
        .pop()
        .ok_or("no kernel in /boot (apt-get install linux-image-amd64)")?;
    let version = kernel.to_string_lossy()["/boot/vmlinuz-".len()..].to_string();
    let dir = Path::new("/lib/modules")
        .join(&version)
        .join("kernel/drivers");
    let modules = [dir.join("acpi/button.ko"), dir.join("input/evdev.ko")];
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("busybox is not installed (apt-get install busybox-static)")?;
    let mut host = Host {
        kernel,
        modules: modules.iter().all(|m| m.is_file()).then_some(modules),
        busybox,
        accel: "tcg",
    };
    host.accel = probe_accel(&host)?;
    Ok(host)
}

/// KVM if a bounded boot with it reaches the services (a nested software KVM can hang
/// the kernel early), else tcg; TEND_VM_ACCEL forces one.
fn probe_accel(host: &Host) -> Result<&'static str, String> {
    match std::env::var("TEND_VM_ACCEL").as_deref() {
        Ok("kvm") => return Ok("kvm"),
        Ok("tcg") => return Ok("tcg"),
        _ => {}
    }
    let kvm_usable = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    let s = Scratch::new("guest-probe");
    let img = Image::new(&s, host);
    img.service("probe", "echo tend-probe-up\nexec tend-init -a poweroff\n");
    let initrd = img.pack();
    for accel in ["kvm", "tcg"] {
        if accel == "kvm" && !kvm_usable {
            continue;
        }
        let limit = if accel == "kvm" { 20 } else { 120 };
        let mut q = Qemu::boot(host, accel, &initrd, "", &[])?;
        if q.wait_for("reboot: Power down", Duration::from_secs(limit)) {
            q.wait_exit(Duration::from_secs(10));
            return Ok(accel);
        }
        eprintln!(
            "guest: {accel} boot did not finish in {limit} s:\n{}",
            q.console()
        );
    }
    Err("qemu starts but the probe guest never boots, with kvm or tcg".into())
}

/// An initramfs being built: tend-init as /init, the tend programs and busybox in /bin.
pub(crate) struct Image {
    root: PathBuf,
}

impl Image {
    pub(crate) fn new(s: &Scratch, host: &Host) -> Image {
        let root = s.join("root");
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        // As shipped: the multi-call executable once, a hard link per program, and /init
        // one more link (run as "init", it is tend-init), so every process shares a text.
        copy_program(multicall(), &bin.join("tend"));
        for p in ["tend-init", "tend-svscan", "tend-supervise", "tend-log"] {
            std::fs::hard_link(bin.join("tend"), bin.join(p)).unwrap();
        }
        std::fs::hard_link(bin.join("tend"), root.join("init")).unwrap();
        std::fs::copy(&host.busybox, bin.join("busybox")).unwrap();
        let list = run({
            let mut c = Command::new(&host.busybox);
            c.arg("--list");
            c
        });
        for applet in text(&list.stdout).lines() {
            let link = bin.join(applet);
            if !link.exists() {
                std::os::unix::fs::symlink("busybox", link).unwrap();
            }
        }
        for m in host.modules.iter().flatten() {
            std::fs::copy(m, root.join(m.file_name().unwrap())).unwrap();
        }
        Image { root }
    }

    pub(crate) fn write(&self, rel: &str, contents: &str, exec: bool) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        if exec {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// A service under /etc/tend/services: `body` after a `#!/bin/sh` line.
    fn service(&self, name: &str, body: &str) {
        self.write(
            &format!("etc/tend/services/{name}/run"),
            &format!("#!/bin/sh\n{body}"),
            true,
        );
    }

    /// The newc archive the kernel unpacks (uncompressed: nothing to decompress).
    pub(crate) fn pack(&self) -> PathBuf {
        let out = self.root.with_file_name("initrd.cpio");
        let o = run({
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg("find . | cpio -o -H newc --quiet > \"$1\"")
                .arg("sh")
                .arg(&out)
                .current_dir(&self.root);
            c
        });
        assert_code(&o, 0);
        out
    }
}

/// The programs are static; without their debug information the initramfs is a fifth
/// of the size, and the emulated kernel unpacks it that much faster.
fn copy_program(from: &Path, to: &Path) {
    let stripped = Command::new("strip")
        .arg("-o")
        .arg(to)
        .arg(from)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !stripped {
        std::fs::copy(from, to).unwrap();
    }
}

/// A running qemu: its console collected by a thread, killed on drop.
pub(crate) struct Qemu {
    daemon: Daemon,
    console: Arc<Mutex<String>>,
    monitor: PathBuf,
    started: Instant,
}

impl Qemu {
    pub(crate) fn boot(
        host: &Host,
        accel: &str,
        initrd: &Path,
        append: &str,
        extra: &[&str],
    ) -> Result<Qemu, String> {
        let monitor = initrd.with_file_name("monitor.sock");
        let mut c = Command::new("qemu-system-x86_64");
        c.args(["-accel", accel, "-m", "256", "-nographic", "-no-reboot"])
            .args(["-serial", "stdio"])
            .arg("-monitor")
            .arg(format!("unix:{},server=on,wait=off", monitor.display()))
            .arg("-kernel")
            .arg(&host.kernel)
            .arg("-initrd")
            .arg(initrd)
            .arg("-append")
            // no_timer_check: under tcg on a loaded host the kernel's early check for a
            // working timer interrupt (ten ticks within a busy wait) can miss, and the
            // guest panics with "IO-APIC + timer doesn't work!" before init runs.
            .arg(format!(
                "console=ttyS0 quiet panic=-1 no_timer_check {append}"
            ))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let what = format!("{c:?}");
        c.process_group(0);
        let mut child = c
            .spawn()
            .map_err(|e| format!("cannot start qemu-system-x86_64: {e}"))?;
        let console = Arc::new(Mutex::new(String::new()));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let console = console.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let t = String::from_utf8_lossy(&buf[..n]).replace('\r', "");
                    console.lock().unwrap().push_str(&t);
                }
            });
        }
        Ok(Qemu {
            daemon: Daemon { child, what },
            console,
            monitor,
            started: Instant::now(),
        })
    }

    pub(crate) fn console(&self) -> String {
        self.console.lock().unwrap().clone()
    }

    fn wait_for(&self, text: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.console.lock().unwrap().contains(text) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[track_caller]
    fn expect(&self, text: &str, timeout: Duration) {
        assert!(
            self.wait_for(text, timeout),
            "no {text:?} on the console after {:?}:\n{}",
            self.started.elapsed(),
            self.console()
        );
    }

    pub(crate) fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let st = self.daemon.wait_exit(timeout);
        // Let the reader threads take the last bytes.
        std::thread::sleep(Duration::from_millis(100));
        st
    }

    /// The exit status, or a failure showing the console.
    #[track_caller]
    pub(crate) fn expect_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        match self.wait_exit(timeout) {
            Some(st) => st,
            None => panic!(
                "qemu still running after {:?}:\n{}",
                self.started.elapsed(),
                self.console()
            ),
        }
    }

    /// The exit status of a guest that reports as it goes: it may take as long as it
    /// needs while its console grows, and fails after `quiet` without a new byte.
    #[track_caller]
    pub(crate) fn expect_exit_while_talking(
        &mut self,
        quiet: Duration,
    ) -> std::process::ExitStatus {
        let (mut seen, mut since) = (0, Instant::now());
        loop {
            if let Some(st) = self.wait_exit(Duration::from_secs(5)) {
                return st;
            }
            let now = self.console().len();
            if now != seen {
                (seen, since) = (now, Instant::now());
            }
            assert!(
                since.elapsed() < quiet,
                "qemu silent for {quiet:?}, {:?} after its start:\n{}",
                self.started.elapsed(),
                self.console()
            );
        }
    }

    /// One command on the human monitor, returning once qemu has run it: its prompt
    /// comes back. (A line written on a connection closed before a busy qemu reads it
    /// can be dropped with the connection.)
    #[track_caller]
    fn monitor(&self, command: &str) {
        let mut m = UnixStream::connect(&self.monitor).expect("qemu monitor");
        m.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        m.write_all(format!("{command}\n").as_bytes()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut said = Vec::new();
        let mut buf = [0u8; 1024];
        // The greeting's prompt, then the one after the command.
        while said.windows(7).filter(|w| w == b"(qemu) ").count() < 2 {
            let text = String::from_utf8_lossy(&said);
            assert!(Instant::now() < deadline, "{command:?} not run: {text:?}");
            match m.read(&mut buf) {
                Ok(0) => panic!("qemu closed its monitor during {command:?}: {text:?}"),
                Ok(n) => said.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
    }
}

/// The host, or a skip with the reason on stderr.
pub(crate) fn vm() -> Option<&'static Host> {
    match host() {
        Ok(h) => Some(h),
        Err(why) => {
            skip(why);
            None
        }
    }
}

/// Generous: an emulated kernel boots in seconds, ten times slower under load.
pub(crate) fn limit(host: &Host) -> Duration {
    Duration::from_secs(if host.accel == "kvm" { 60 } else { 180 })
}

/// Every stage line, in order, then init's last line (drained before reboot(2)), then
/// the kernel's own last word.
#[track_caller]
fn assert_stages(console: &str, farewell: &str, last: &str) {
    let lines = [
        "tend-init: info: mounted /proc /sys /dev /dev/pts /dev/shm /run",
        "tend-init: info: stage 1: init scripts",
        "tend-init: info: stage 2: starting services",
        "tend-init: info: stage 3: stopping",
        "tend-init: info: stopping services",
        "tend-init: info: syncing and unmounting",
    ];
    let mut at = 0;
    let farewell = format!("tend-init: info: {farewell}\n");
    for l in lines.iter().chain([&farewell.as_str(), &last]) {
        match console[at..].find(l) {
            Some(i) => at += i + l.len(),
            None => panic!("{l:?} missing or out of order on the console:\n{console}"),
        }
    }
    assert!(
        !console.contains("Kernel panic") && !console.contains("fatal"),
        "{console}"
    );
}

/// The services of the common image: a logged one, one ignoring SIGTERM, a finish.d
/// script showing the log.
fn common_services(img: &Image) {
    img.service(
        "logged",
        "trap 'echo logged-last-line; exit 0' TERM\necho logged-first-line\nsleep 100000 &\nwait\n",
    );
    img.write(
        "etc/tend/services/logged/log/run",
        "#!/bin/sh\nexec tend-log /run/log\n",
        true,
    );
    // Runs once the logger has drained its pipe and exited: what reached the disk.
    img.write(
        "etc/tend/services/logged/log/finish",
        "#!/bin/sh\necho \"tend-test: log at stop: $(tr '\\n' '|' < /run/log/current)\" > /dev/console\n",
        true,
    );
    img.service(
        "stubborn",
        "trap '' TERM\necho stubborn-up\nwhile :; do sleep 1; done\n",
    );
    img.write(
        "etc/tend/finish.d/10-log",
        "#!/bin/sh\necho \"tend-test: log in finish.d: $(tail -n 1 /run/log/current)\"\n",
        true,
    );
}

#[test]
fn slow_vm_poweroff_requested_from_inside() {
    let Some(host) = vm() else { return };
    let s = Scratch::new("guest-poweroff");
    let img = Image::new(&s, host);
    common_services(&img);
    img.service(
        "ready",
        "until [ -s /run/log/current ]; do sleep 0.1; done\n\
         echo \"tend-test: ready host=$(hostname) lo=$(cat /sys/class/net/lo/operstate)\"\n\
         exec tend-init -s poweroff\n",
    );
    let initrd = img.pack();
    let params = "tend.hostname=vm-one tend.services_gracetime=1000 tend.kill_gracetime=1000";
    let mut q = Qemu::boot(host, host.accel, &initrd, params, &[]).unwrap();
    q.expect("tend-test: ready host=vm-one lo=unknown", limit(host));
    let asked = Instant::now();
    let st = q.expect_exit(limit(host));
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    assert_stages(&console, "powering off", "reboot: Power down");
    assert!(
        console.contains("tend-init: info: poweroff requested by SIGTERM\n"),
        "{console}"
    );
    assert!(
        console.contains("tend-test: log in finish.d: logged-first-line\n"),
        "{console}"
    );
    // The service's last line, written on SIGTERM, was on disk before the poweroff.
    assert!(
        console.contains("tend-test: log at stop: logged-first-line|logged-last-line|\n"),
        "{console}"
    );
    // The stubborn service ignored SIGTERM and was killed after the 1 s kill grace.
    assert!(
        console.contains("tend-init: info: sending SIGKILL to every process\n"),
        "{console}"
    );
    assert!(asked.elapsed() < limit(host), "{console}");
}

#[test]
fn slow_vm_acpi_powerdown_and_debug_console() {
    let Some(host) = vm() else { return };
    if host.modules.is_none() {
        skip(format!(
            "no button.ko and evdev.ko for {}",
            host.kernel.display()
        ));
        return;
    }
    let s = Scratch::new("guest-acpi");
    let img = Image::new(&s, host);
    common_services(&img);
    // As acpid does on a real guest: the power button becomes SIGPWR to init.
    img.write(
        "etc/acpi/PWRF/00000080",
        "#!/bin/sh\necho tend-test: power button > /dev/console\nkill -PWR 1\n",
        true,
    );
    img.service(
        "acpid",
        "insmod /button.ko\ninsmod /evdev.ko\nuntil [ -e /dev/input/event0 ]; do sleep 0.1; done\n\
         echo tend-test: acpid up\nexec acpid -f -c /etc/acpi -l /run/acpid.log\n",
    );
    let initrd = img.pack();
    let sock = s.join("ttyS1.sock");
    let chardev = format!("socket,id=con,path={},server=on,wait=off", sock.display());
    let mut q = Qemu::boot(
        host,
        host.accel,
        &initrd,
        "tend.console=ttyS1 tend.services_gracetime=1000 tend.kill_gracetime=1000",
        &["-chardev", &chardev, "-serial", "chardev:con"],
    )
    .unwrap();
    q.expect("tend-test: acpid up", limit(host));
    // The debug console: a shell on the second serial port.
    let mut con = UnixStream::connect(&sock).expect("connect to ttyS1");
    con.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let deadline = Instant::now() + limit(host);
    let mut seen = String::new();
    let mut buf = [0u8; 1024];
    // The shell answers once acpid holds an input device open: a press before that is
    // lost (acpid opens the devices after "acpid up", and under a loaded emulator that
    // took longer than the debug shell's start in CI).
    while !seen.contains("console-42") {
        assert!(
            Instant::now() < deadline,
            "no shell on ttyS1, or acpid without its input devices: {seen:?}"
        );
        // Repeated until the shell is there to read it.
        con.write_all(
            b"ls -l /proc/$(pidof acpid)/fd | grep -q /dev/input/ && echo console-$((6*7))\n",
        )
        .unwrap();
        if let Ok(n) = con.read(&mut buf) {
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
    q.monitor("system_powerdown");
    let st = q.expect_exit(limit(host));
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    assert!(console.contains("tend-test: power button\n"), "{console}");
    assert!(
        console.contains("tend-init: info: poweroff requested by SIGPWR\n"),
        "{console}"
    );
    assert_stages(&console, "powering off", "reboot: Power down");
}

#[test]
fn slow_vm_ctrl_alt_del_reboots_halt_halts_and_a_command_powers_off() {
    let Some(host) = vm() else { return };
    let s = Scratch::new("guest-cad");
    let img = Image::new(&s, host);
    img.service("ready", "echo tend-test: ready\nexec sleep 100000\n");
    let initrd = img.pack();
    let mut q = Qemu::boot(host, host.accel, &initrd, "", &[]).unwrap();
    q.expect("tend-test: ready", limit(host));
    q.monitor("sendkey ctrl-alt-delete");
    // -no-reboot: qemu exits when the guest restarts.
    let st = q.expect_exit(limit(host));
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    assert!(
        console.contains("tend-init: info: reboot requested by SIGINT\n"),
        "{console}"
    );
    assert_stages(&console, "rebooting", "reboot: Restarting system");

    // Halt: the kernel stops but qemu stays (the guard kills it).
    img.service("ready", "echo tend-test: ready\nexec tend-init -a halt\n");
    let initrd = img.pack();
    let q = Qemu::boot(host, host.accel, &initrd, "", &[]).unwrap();
    q.expect("reboot: System halted", limit(host));
    let console = q.console();
    assert!(
        console.contains("tend-init: info: halt requested by SIGUSR1\n"),
        "{console}"
    );
    assert_stages(&console, "halting", "reboot: System halted");
    drop(q);
    img.service("ready", "echo tend-test: ready\nexec sleep 100000\n");

    // init's arguments: a command, run once; its end powers the guest off.
    img.write(
        "bin/job",
        "#!/bin/sh\necho tend-test: job ran\nexit 3\n",
        true,
    );
    let initrd = img.pack();
    let mut q = Qemu::boot(host, host.accel, &initrd, "-- /bin/job", &[]).unwrap();
    let st = q.expect_exit(limit(host));
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    assert!(console.contains("tend-test: job ran\n"), "{console}");
    assert!(
        console.contains("tend-init: info: command exited: exit code 3\n"),
        "{console}"
    );
    assert_stages(&console, "powering off", "reboot: Power down");
}

/// The README's VM lines, run as written in a scratch directory (the build step aside:
/// the test's own build stands in for target/x86_64-unknown-linux-musl/release/), then
/// the guest booted and qemu's system_powerdown pressed until acpid hears it.
#[test]
fn slow_vm_readme_snippet() {
    let Some(host) = vm() else { return };
    if host.modules.is_none() {
        return skip(format!(
            "no button.ko and evdev.ko for {}",
            host.kernel.display()
        ));
    }
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("```sh\napt-get install qemu-system-x86")
        .expect("the README's VM snippet");
    let block = &readme[start + "```sh\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    let release = "target/x86_64-unknown-linux-musl/release/";
    assert!(block.contains(&format!("cp {release}tend ")), "{block}");
    let s = Scratch::new("guest-readme");
    let build = s.join("build");
    std::fs::create_dir_all(&build).unwrap();
    copy_program(multicall(), &build.join("tend"));
    // Every line up to qemu's, but the package install and the build.
    let script: String = block
        .lines()
        .take_while(|l| !l.starts_with("qemu-system-x86_64"))
        .filter(|l| !l.starts_with("apt-get ") && !l.starts_with("cargo build"))
        .map(|l| l.replace(release, &format!("{}/", build.display())) + "\n")
        .collect();
    let o = run({
        let mut c = Command::new("sh");
        c.args(["-ec", &script]).current_dir(s.join(""));
        c
    });
    assert_code(&o, 0);
    let mut q = Qemu::boot(
        host,
        host.accel,
        &s.join("initrd.cpio"),
        "tend.hostname=vm1",
        &[],
    )
    .unwrap();
    q.expect("hello from vm1", limit(host));
    // A press before acpid has its input device open is lost: press until it is heard.
    let deadline = Instant::now() + limit(host);
    let st = loop {
        q.monitor("system_powerdown");
        if let Some(st) = q.wait_exit(Duration::from_secs(5)) {
            break st;
        }
        assert!(Instant::now() < deadline, "no poweroff:\n{}", q.console());
    };
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    assert!(
        console.contains("tend-init: info: poweroff requested by SIGPWR\n"),
        "{console}"
    );
    assert_stages(&console, "powering off", "reboot: Power down");
}

/// Issue 38: the cgroup version follows the kernel command line, as kata-agent's init:
/// `systemd.unified_cgroup_hierarchy=0` mounts v1 hierarchies, the default is cgroup2.
#[test]
fn slow_vm_cgroup_version_follows_the_command_line() {
    let Some(host) = vm() else { return };
    for (param, want) in [
        (
            "systemd.unified_cgroup_hierarchy=0",
            "v2=0 tmpfs=1 memory=1",
        ),
        ("", "v2=1 tmpfs=0 memory=0"),
    ] {
        let s = Scratch::new("guest-cgroup");
        let img = Image::new(&s, host);
        img.service(
            "ready",
            "m() { grep -c \"$1\" /proc/mounts; }\n\
             echo \"tend-test: cgroup v2=$(m ' /sys/fs/cgroup cgroup2 ') \
             tmpfs=$(m ' /sys/fs/cgroup tmpfs ') memory=$(m ' /sys/fs/cgroup/memory cgroup ')\"\n\
             exec tend-init -s poweroff\n",
        );
        let initrd = img.pack();
        let mut q = Qemu::boot(host, host.accel, &initrd, param, &[]).unwrap();
        q.expect(&format!("tend-test: cgroup {want}"), limit(host));
        let st = q.expect_exit(limit(host));
        assert!(st.success(), "{st:?}\n{}", q.console());
    }
}

// ---- agent mode (issue 38) --------------------------------------------------------------

impl Image {
    /// More of tend's programs in /bin, as links to the one executable.
    pub(crate) fn link(&self, programs: &[&str]) {
        let bin = self.root.join("bin");
        for p in programs {
            std::fs::hard_link(bin.join("tend"), bin.join(p)).unwrap();
        }
    }

    /// The kernel's vsock loopback transport (CID 1) and what it needs, loaded by an
    /// init.d script: the guest is then client and server of its own vsock ports. False
    /// when the host's kernel has no such modules.
    pub(crate) fn vsock_loopback(&self, host: &Host) -> bool {
        let version = host.kernel.to_string_lossy()["/boot/vmlinuz-".len()..].to_string();
        let dir = Path::new("/lib/modules")
            .join(version)
            .join("kernel/net/vmw_vsock");
        let order = [
            "vsock",
            "vmw_vsock_virtio_transport_common",
            "vsock_loopback",
        ];
        if !order.iter().all(|m| dir.join(format!("{m}.ko")).is_file()) {
            return false;
        }
        let mut script = String::from("#!/bin/sh\n");
        for m in order {
            let to = self.root.join(format!("lib/vsock/{m}.ko"));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(dir.join(format!("{m}.ko")), &to).unwrap();
            script.push_str(&format!("insmod /lib/vsock/{m}.ko\n"));
        }
        self.write("etc/tend/init.d/10-vsock", &script, true);
        true
    }

    /// The agent guest's programs and services, whatever carries its vsock: the stub
    /// agent as the main program (tend.main=/bin/agent), the debug console as a service
    /// (`tend-vsockserver 1026 tend-pty /bin/sh`), a guest component.
    fn agent_services(&self) {
        self.link(&[
            "tend-vsockserver",
            "tend-vsockclient",
            "tend-pty",
            "tend-svc",
            "tend-svstat",
        ]);
        // The stub agent: its pid for the checks, READY on the console, then a vsock
        // server on port 1024 whose client line "exit" ends it (exit code 0).
        self.write(
            "bin/agent",
            "#!/bin/sh\necho $$ > /run/agent.pid\necho stub-agent: READY\n\
             exec tend-vsockserver 1024 sh -c 'read -r w; echo \"agent: $w\"; \
             [ \"$w\" != exit ] || kill -TERM $PPID'\n",
            true,
        );
        // Ready once bound (-1): init starts the agent only then.
        self.service(
            "console",
            "exec tend-vsockserver -1 1026 tend-pty /bin/sh\n",
        );
        self.write("etc/tend/services/console/notification-fd", "1\n", false);
        self.write("etc/hostname", "agent-vm\n", false);
        self.service(
            "component",
            "echo $$ > /run/component.pid\nexec sleep 100000\n",
        );
    }

    /// An agent guest: the stub agent as the main program, the debug console as a
    /// service (`tend-vsockserver 1026 tend-pty /bin/sh`), a guest component, and
    /// `checks` (a shell script) run once as a service, saying `tend-test: ...` on the
    /// console. False without vsock modules.
    fn agent_guest(&self, host: &Host, checks: &str) -> bool {
        if !self.vsock_loopback(host) {
            return false;
        }
        self.agent_services();
        // A client of the debug console (fds 6 and 7): lines sent, lines awaited. What
        // is awaited never appears in what is typed (the pty echoes it). ^C once the
        // sleep is the terminal's foreground group; its status asked on a line of its
        // own (a shell drops the rest of a line whose job died of SIGINT).
        self.write(
            "bin/dialog",
            "#!/bin/sh\n\
             send() { printf '%s\\n' \"$1\" >&7; }\n\
             want() { while IFS= read -r l <&6; do case $l in *\"$1\"*) echo \"$1\"; return 0;; esac; done; echo \"no $1\"; exit 1; }\n\
             send 'echo hi-$((6*7))'; want hi-42\n\
             [ \"$1\" = short ] && { send exit; exit 0; }\n\
             send 'sh -c \"exit 7\"; echo code-$?'; want code-7\n\
             send 'sleep 51'\n\
             fg() { for p in $(pidof sleep); do tr '\\0' ' ' < /proc/$p/cmdline | grep -qx 'sleep 51 ' && s=$(cut -d' ' -f5-8 /proc/$p/stat) && [ ${s%% *} = ${s##* } ] && return 0; done; return 1; }\n\
             until fg; do sleep 0.1; done\n\
             echo foreground\n\
             printf '\\003' >&7; send 'echo after-$?'; want after-130\n\
             send exit\n",
            true,
        );
        self.service(
            "checks",
            &format!(
                "say() {{ echo \"tend-test: $*\" > /dev/console; }}\n\
                 con() {{ timeout 60 tend-vsockclient 1 1026 /bin/dialog \"$@\" | tr '\\n' ' '; }}\n\
                 agent() {{ until [ -s /run/agent.pid ] && [ \"$(cat /run/agent.pid)\" != \"$1\" ]; do sleep 0.1; done; cat /run/agent.pid; }}\n\
                 tell() {{ for i in $(seq 100); do o=$(timeout 60 tend-vsockclient 1 1024 sh -c \"echo $1 >&7; cat <&6\") && break; sleep 0.1; done; echo $o; }}\n\
                 {checks}\nexec sleep 100000\n"
            ),
        );
        true
    }
}

/// The kernel line of an agent guest.
const AGENT: &str = "tend.main=/bin/agent tend.main_nofile=1048576 tend.main_oom=-997 \
                     tend.services_gracetime=1000 tend.kill_gracetime=1000";

/// Issue 38's checks 1, 2 (restart), 3, 5 and 6 in one boot, the guest's own vsock
/// loopback (CID 1) standing in for the host's side: a shell over the debug console
/// (echo, an exit code, ctrl-c reaching the foreground job); the main program's limits;
/// a killed guest component restarted; a kill -9 of the agent that leaves the console
/// answering while the agent is restarted (tend.main_restarts=1); the restarted agent
/// told to exit, which powers the guest off cleanly.
#[test]
fn slow_vm_agent_mode_keeps_a_console_restarts_the_agent_then_powers_off() {
    let Some(host) = vm() else { return };
    let s = Scratch::new("guest-agent");
    let img = Image::new(&s, host);
    let checks = "a=$(agent 0)\n\
        say \"boot ptmx=$(readlink /dev/ptmx) host=$(hostname) lo=$(cat /sys/class/net/lo/operstate)\"\n\
        say \"console: $(con)\"\n\
        c=$(cat /run/component.pid)\n\
        say \"main nofile=$(awk '/^Max open files/ {print $4 \"/\" $5}' /proc/$a/limits) \
        oom=$(cat /proc/$a/oom_score_adj) init-oom=$(cat /proc/1/oom_score_adj) \
        service-oom=$(cat /proc/$c/oom_score_adj)\"\n\
        kill -9 $c\n\
        until [ -s /run/component.pid ] && [ \"$(cat /run/component.pid)\" != $c ]; do sleep 0.1; done\n\
        say component restarted\n\
        kill -9 $a\n\
        say \"after kill: $(con short)\"\n\
        b=$(agent $a)\n\
        say agent restarted\n\
        tell exit\n";
    if !img.agent_guest(host, checks) {
        return skip(format!("no vsock modules for {}", host.kernel.display()));
    }
    let initrd = img.pack();
    let params = format!("{AGENT} tend.main_restarts=1");
    let mut q = Qemu::boot(host, host.accel, &initrd, &params, &[]).unwrap();
    // Many steps, each an emulated exec or more: thrice the one-boot limit.
    let st = q.expect_exit(limit(host) * 3);
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    for line in [
        "stub-agent: READY\n",
        "tend-test: console: hi-42 code-7 foreground after-130 \n",
        "tend-test: boot ptmx=pts/ptmx host=agent-vm lo=unknown\n",
        "tend-test: main nofile=1048576/1048576 oom=-997 init-oom=0 service-oom=0\n",
        "tend-test: component restarted\n",
        "tend-test: after kill: hi-42 \n",
        "tend-init: info: command exited: exit code 137\n",
        "tend-init: info: restarting the command (1 of 1)\n",
        "stub-agent: READY\n",
        "tend-test: agent restarted\n",
        "tend-init: info: command exited: exit code 0\n",
        "tend-init: info: powering off\n",
        "reboot: Power down",
    ] {
        assert!(console.contains(line), "{line:?} missing:\n{console}");
    }
    assert_stages(&console, "powering off", "reboot: Power down");
}

/// Check 2 with the default policy: a kill -9 of the agent powers the guest off, the
/// services (the console among them) stopped cleanly on the way.
#[test]
fn slow_vm_agent_killed_powers_off_by_default() {
    let Some(host) = vm() else { return };
    let s = Scratch::new("guest-agent-kill");
    let img = Image::new(&s, host);
    let checks = "a=$(agent 0)\nsay \"console: $(con short)\"\nkill -9 $a\n";
    if !img.agent_guest(host, checks) {
        return skip(format!("no vsock modules for {}", host.kernel.display()));
    }
    let initrd = img.pack();
    let mut q = Qemu::boot(host, host.accel, &initrd, AGENT, &[]).unwrap();
    let st = q.expect_exit(limit(host));
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    assert!(
        console.contains("tend-test: console: hi-42 \n"),
        "{console}"
    );
    assert!(
        console.contains("tend-init: info: command exited: exit code 137\n"),
        "{console}"
    );
    assert!(!console.contains("restarting the command"), "{console}");
    assert_stages(&console, "powering off", "reboot: Power down");
}

/// The UCSPI checks over real vsock (tests/it/vsock.rs), in a guest of their own.
#[test]
fn slow_vm_vsock_server_over_loopback() {
    crate::vsock::server_over_vsock_loopback_in_a_guest();
}

// ---- the host's side of vsock: vhost-device-vsock (issue 38) ----------------------------

/// The device's program, as `cargo install` names it.
const VHOST_DEVICE_VSOCK: &str = "vhost-device-vsock";

/// rust-vmm's vhost-user vsock device: `$TEND_VHOST_DEVICE_VSOCK`, else
/// vhost-device-vsock on PATH; or why there is none.
fn vhost_device_vsock() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("TEND_VHOST_DEVICE_VSOCK") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "TEND_VHOST_DEVICE_VSOCK={}: no such file",
                p.display()
            ))
        };
    }
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(VHOST_DEVICE_VSOCK))
                .find(|p| p.is_file())
        })
        .ok_or_else(|| {
            format!(
                "{VHOST_DEVICE_VSOCK} is not installed (cargo install {VHOST_DEVICE_VSOCK} \
                 --locked, as .ci/run does; or set TEND_VHOST_DEVICE_VSOCK)"
            )
        })
}

/// Whether a Unix socket is listening at `path` (/proc/net/unix: the flags
/// __SO_ACCEPTCON); a file there may be bound and not yet listening.
fn listening(path: &Path) -> bool {
    let path = path.to_string_lossy();
    std::fs::read_to_string("/proc/net/unix").is_ok_and(|t| {
        t.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 8 && f[3] == "00010000" && f[7] == path
        })
    })
}

/// The device on the host: vhost-device-vsock serving guest CID 3, its vhost-user
/// socket for qemu and its hybrid-vsock socket for the host's programs, both listening
/// once this returns.
fn vhost_vsock_device(s: &Scratch, prog: &Path, host: &Host) -> (Daemon, PathBuf, PathBuf) {
    let (vhost, uds) = (s.join("vhost.sock"), s.join("v.sock"));
    let log = std::fs::File::create(s.join("vhost.log")).unwrap();
    let mut c = Command::new(prog);
    c.args(["--guest-cid", "3", "--socket"])
        .arg(&vhost)
        .arg("--uds-path")
        .arg(&uds)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let mut d = Daemon::start(c);
    let deadline = Instant::now() + limit(host);
    while !(listening(&vhost) && listening(&uds)) {
        let log = std::fs::read_to_string(s.join("vhost.log")).unwrap_or_default();
        assert!(
            d.wait_exit(Duration::ZERO).is_none(),
            "{} exited:\n{log}",
            d.what
        );
        assert!(
            Instant::now() < deadline,
            "{} not listening:\n{log}",
            d.what
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (d, vhost, uds)
}

/// qemu's side of the device: guest memory it can share with the device's process
/// (a memfd, as vhost-user needs; the size of Qemu::boot's `-m`), and the
/// vhost-user-vsock-pci device on `vhost`.
fn vhost_vsock_qemu_args(vhost: &Path) -> Vec<String> {
    vec![
        "-object".into(),
        "memory-backend-memfd,id=mem,size=256M,share=on".into(),
        "-machine".into(),
        "memory-backend=mem".into(),
        "-chardev".into(),
        format!("socket,id=vsock,path={}", vhost.display()),
        "-device".into(),
        "vhost-user-vsock-pci,chardev=vsock".into(),
    ]
}

/// The host's end of the guest's debug console: tend-vsockclient through the device's
/// hybrid socket, bridged to the test's pipes, its first line the client's UCSPI
/// variables. It ends when the guest closes the connection (the copy from the guest is
/// the exec'd one; the copy to it reads a saved stdin, since a background job's own
/// is /dev/null).
fn host_console(uds: &Path, host: &Host) -> crate::vsock::Console {
    let mut c = cmd("tend-vsockclient");
    c.arg("-H").arg(uds).args([
        "3",
        "1026",
        "sh",
        "-c",
        "echo \"client-$PROTO-$VSOCKREMOTECID-$VSOCKREMOTEPORT\"; \
         exec 3<&0; cat <&3 >&7 & exec cat <&6",
    ]);
    crate::vsock::Console::spawn(c, limit(host))
}

/// Issue 38's preferred host side: the guest's virtio vsock device is qemu's
/// vhost-user-vsock-pci, served by rust-vmm's vhost-device-vsock on the host, and the
/// HOST drives the agent guest's debug console with `tend-vsockclient -H` through the
/// device's hybrid socket (`CONNECT 1026`, `OK ...`): the UCSPI variables on both
/// sides, echo, an exit code, ctrl-c reaching the foreground job, a kill -9 of the
/// agent after which that console and a new one still answer while the agent is
/// restarted, a refused port, and the agent told to exit through its own port, which
/// powers the guest off cleanly.
#[test]
fn slow_vm_agent_console_from_the_host_through_vhost_device_vsock() {
    let Some(host) = vm() else { return };
    let prog = match vhost_device_vsock() {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    let s = Scratch::new("guest-vhost");
    let img = Image::new(&s, host);
    img.agent_services();
    if !img.modules(
        host,
        "10-vsock",
        &["virtio_pci", "vmw_vsock_virtio_transport"],
    ) {
        return skip(format!(
            "no virtio vsock modules for {}",
            host.kernel.display()
        ));
    }
    let initrd = img.pack();
    let (_device, vhost, uds) = vhost_vsock_device(&s, &prog, host);
    let extra = vhost_vsock_qemu_args(&vhost);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let params = format!("{AGENT} tend.main_restarts=1");
    let mut q = Qemu::boot(host, host.accel, &initrd, &params, &extra).unwrap();
    // The console is bound before the agent starts (its readiness).
    q.expect("stub-agent: READY\n", limit(host));

    // What is awaited never appears in what is typed (the pty echoes it).
    let mut con = host_console(&uds, host);
    con.wait_for("client-VSOCK-3-1026\n");
    con.send(b"echo \"env-$PROTO-$VSOCKREMOTECID-$VSOCKLOCALPORT-$VSOCKREMOTEPORT-end\"\n");
    con.wait_for("-end\r\n");
    // The guest's side: the host (CID 2) on the port the device gave the connection.
    let said = con.said();
    let env = said
        .lines()
        .find_map(|l| l.trim_end().strip_prefix("env-VSOCK-2-1026-"))
        .unwrap_or_else(|| panic!("no guest variables in:\n{said}"));
    assert!(
        env.strip_suffix("-end")
            .is_some_and(|p| p.parse::<u32>().is_ok()),
        "{said}"
    );
    con.send(b"echo hi-$((6*7))\n");
    con.wait_for("hi-42\r\n");
    con.send(b"sh -c 'exit 7'; echo code-$?\n");
    con.wait_for("code-7\r\n");
    // The job says it runs once it is the terminal's foreground group: ash's child
    // takes the terminal before it runs the command. The status on a line of its own
    // (a shell drops the rest of a line whose job died of SIGINT).
    con.send(b"sh -c 'echo fg-$((6*7)); exec sleep 51'\n");
    con.wait_for("fg-42\r\n");
    con.send(b"\x03");
    con.send(b"echo after-$?\n");
    con.wait_for("after-130\r\n");

    // kill -9 of the agent: the console answers while init restarts it.
    con.send(b"kill -9 $(cat /run/agent.pid)\n");
    q.expect(
        "tend-init: info: restarting the command (1 of 1)\n",
        limit(host),
    );
    con.send(b"echo still-$((2*3))\n");
    con.wait_for("still-6\r\n");
    let mut again = host_console(&uds, host);
    again.send(b"echo again-$((2*3)); exit 3\n");
    again.wait_for("again-6\r\n");
    // The shell's exit ends tend-pty, and the connection: the client sees the end.
    let st = again.wait_exit();
    assert!(st.success(), "{st:?}: {}", again.said());

    // No server on a port: the guest resets the request, the device closes the socket.
    let o = tend(
        "tend-vsockclient",
        ["-H", uds.to_str().unwrap(), "3", "1999", "true"],
    );
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-vsockclient: fatal: unable to connect through {}: Connection refused\n",
            uds.display()
        )
    );
    // What the client saw, byte for byte: no answer line, the end (as its man page says).
    let mut raw = UnixStream::connect(&uds).unwrap();
    raw.set_read_timeout(Some(limit(host))).unwrap();
    raw.write_all(b"CONNECT 1999\n").unwrap();
    let mut answer = Vec::new();
    raw.read_to_end(&mut answer).unwrap();
    assert_eq!(text(&answer), "");

    // The restarted agent, told to exit on its port 1024 (refused until it listens).
    let deadline = Instant::now() + limit(host);
    let told = loop {
        let o = tend(
            "tend-vsockclient",
            [
                "-H",
                uds.to_str().unwrap(),
                "3",
                "1024",
                "sh",
                "-c",
                "echo exit >&7; cat <&6",
            ],
        );
        if o.status.success() || Instant::now() > deadline {
            break o;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_code(&told, 0);
    assert_eq!(text(&told.stdout), "agent: exit\n");
    let st = q.expect_exit(limit(host));
    let console = q.console();
    // The first console's connection ended with the guest.
    let ended = con.wait_exit();
    assert!(ended.success(), "{ended:?}: {}", con.said());
    assert!(st.success(), "{st:?}\n{console}");
    for line in [
        "tend-init: info: command exited: exit code 137\n",
        "tend-init: info: command exited: exit code 0\n",
    ] {
        assert!(console.contains(line), "{line:?} missing:\n{console}");
    }
    assert_eq!(
        console.matches("stub-agent: READY\n").count(),
        2,
        "{console}"
    );
    assert_stages(&console, "powering off", "reboot: Power down");
}

// ---- guest extension images (issue 38, check 7) -----------------------------------------

impl Image {
    /// Kernel modules and their dependencies (modules.dep), copied in and loaded in
    /// order by the init.d script `script`. False when the host's kernel lacks one.
    pub(crate) fn modules(&self, host: &Host, script: &str, wanted: &[&str]) -> bool {
        let version = host.kernel.to_string_lossy()["/boot/vmlinuz-".len()..].to_string();
        let dir = Path::new("/lib/modules").join(version);
        let Ok(dep) = std::fs::read_to_string(dir.join("modules.dep")) else {
            return false;
        };
        let key = |p: &str| {
            let base = p.rsplit('/').next().unwrap_or(p);
            base.trim_end_matches(".ko").replace('-', "_")
        };
        let table: std::collections::HashMap<String, (String, Vec<String>)> = dep
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(m, deps)| {
                let deps = deps.split_whitespace().map(String::from).collect();
                (key(m), (m.to_string(), deps))
            })
            .collect();
        // Dependencies first (modules.dep lists them nearest first, so reversed).
        fn visit(
            name: &str,
            table: &std::collections::HashMap<String, (String, Vec<String>)>,
            key: &dyn Fn(&str) -> String,
            order: &mut Vec<String>,
        ) -> bool {
            let Some((path, deps)) = table.get(&key(name)) else {
                return false;
            };
            for d in deps.iter().rev() {
                if !visit(d, table, key, order) {
                    return false;
                }
            }
            if !order.contains(path) {
                order.push(path.clone());
            }
            true
        }
        let mut order = Vec::new();
        for m in wanted {
            if !visit(m, &table, &key, &mut order) {
                return false;
            }
        }
        let mut text = String::from("#!/bin/sh\nset -e\n");
        for m in &order {
            let name = m.rsplit('/').next().unwrap();
            let to = self.root.join("lib/modules").join(name);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(dir.join(m), &to).unwrap();
            text.push_str(&format!("insmod /lib/modules/{name}\n"));
        }
        self.write(&format!("etc/tend/init.d/{script}"), &text, true);
        true
    }

    /// An agent guest whose extensions tend-extension mounts (init.d, after the modules
    /// virtio-blk, dm-verity and erofs): its main program says on the console what it
    /// reads and writes under /run/kata-extensions/tools, then exits (a poweroff).
    fn extension_guest(&self, host: &Host) -> bool {
        let wanted = [
            "virtio_pci",
            "virtio_blk",
            "dm_verity",
            // libcrc32c (erofs needs it) asks the crypto API for crc32c.
            "crc32c_generic",
            "erofs",
        ];
        if !self.modules(host, "10-modules", &wanted) {
            return false;
        }
        self.link(&["tend-extension"]);
        self.write(
            "etc/tend/init.d/20-extensions",
            "#!/bin/sh\nexec tend-extension\n",
            true,
        );
        self.write(
            "bin/agent",
            "#!/bin/sh\nd=/run/kata-extensions/tools\n\
             echo \"tend-test: read $(cat $d/hello.txt)\"\n\
             echo \"tend-test: mount $(grep \" $d \" /proc/mounts | cut -d' ' -f1-4 | cut -d, -f1)\"\n\
             [ ! -d /run/kata-extensions/plain ] || echo \"tend-test: plain $(cat /run/kata-extensions/plain/hello.txt) \
             $(grep ' /run/kata-extensions/plain ' /proc/mounts | cut -d' ' -f3-4 | cut -d, -f1)\"\n\
             if echo x 2>/run/err >$d/new; then echo tend-test: write succeeded; \
             else echo \"tend-test: write failed: $(sed 's/.*: //' /run/err)\"; fi\n",
            true,
        );
        true
    }
}

/// The drive options of an extension disk: virtio-blk, serial `extension-NAME`.
fn extension_drive(disk: &Path, name: &str) -> [String; 4] {
    [
        "-drive".into(),
        format!(
            "file={},format=raw,if=none,readonly=on,id=ext-{name}",
            disk.display()
        ),
        "-device".into(),
        format!("virtio-blk-pci,drive=ext-{name},serial=extension-{name}"),
    ]
}

/// What both extension guests start from: a scratch directory, a dm-verity EROFS disk
/// holding `hello.txt`, and the agent guest's initrd with the block, dm-verity and erofs
/// modules. None when the VM, the image tools or the modules are missing (each has said
/// `skipped:` through common::skip).
fn extension_setup(
    name: &str,
) -> Option<(
    &'static Host,
    Scratch,
    crate::extension::ExtensionDisk,
    PathBuf,
)> {
    let host = vm()?;
    let s = Scratch::new(name);
    let disk = crate::extension::extension_disk(&s, &[("hello.txt", "extension-content-42\n")])?;
    let img = Image::new(&s, host);
    if !img.extension_guest(host) {
        skip(format!(
            "no virtio-blk, dm-verity or erofs modules for {}",
            host.kernel.display()
        ));
        return None;
    }
    let initrd = img.pack();
    Some((host, s, disk, initrd))
}

/// Check 7: an EROFS image with its dm-verity hash partition, the root hash on the
/// kernel line, is mounted read-only before the agent: the agent reads a file from it and
/// a write fails with EROFS; then the agent's exit powers the guest off cleanly. Beside
/// it, the design's fourth row: an unmeasured extension (a bare EROFS disk, a bare key on
/// the kernel line) mounted as it is.
#[test]
fn slow_vm_extension_verified_is_mounted_read_only() {
    let Some((host, s, disk, initrd)) = extension_setup("guest-ext-good") else {
        return;
    };
    let plain = crate::extension::erofs_image(&s, "plain", &[("hello.txt", "plain-content\n")]);
    let params = format!(
        "tend.main=/bin/agent kata.extension.tools.verity_params={} \
         kata.extension.plain.verity_params",
        disk.params
    );
    let mut drive = extension_drive(&disk.path, "tools").to_vec();
    drive.extend(extension_drive(&plain, "plain"));
    let drive: Vec<&str> = drive.iter().map(String::as_str).collect();
    let mut q = Qemu::boot(host, host.accel, &initrd, &params, &drive).unwrap();
    let st = q.expect_exit(limit(host));
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    for line in [
        "tend-extension: info: extension tools: /dev/dm-0 (dm-verity) mounted read-only at \
         /run/kata-extensions/tools\n",
        "tend-test: read extension-content-42\n",
        "tend-test: mount /dev/dm-0 /run/kata-extensions/tools erofs ro\n",
        "tend-test: write failed: Read-only file system\n",
        "(unverified) mounted read-only at /run/kata-extensions/plain\n",
        "tend-test: plain plain-content erofs ro\n",
        "tend-init: info: command exited: exit code 0\n",
        "tend-init: info: powering off\n",
        "reboot: Power down",
    ] {
        assert!(console.contains(line), "{line:?} missing:\n{console}");
    }
    assert!(
        !console.contains("fatal") && !console.contains("Kernel panic"),
        "{console}"
    );
}

/// Check 7: the same image with a wrong root hash on the kernel line: tend-extension
/// refuses it on one line, its init script fails, and the guest powers off without
/// starting the agent.
#[test]
fn slow_vm_extension_wrong_root_hash_powers_off() {
    let Some((host, _s, disk, initrd)) = extension_setup("guest-ext-bad") else {
        return;
    };
    // One digit changed: a root hash of the right form, not this image's.
    let h = &disk.root_hash;
    let wrong = format!("{}{}", if h.starts_with('0') { "1" } else { "0" }, &h[1..]);
    let params = format!(
        "tend.main=/bin/agent kata.extension.tools.verity_params={}",
        disk.params.replace(h, &wrong)
    );
    let drive = extension_drive(&disk.path, "tools");
    let drive: Vec<&str> = drive.iter().map(String::as_str).collect();
    let mut q = Qemu::boot(host, host.accel, &initrd, &params, &drive).unwrap();
    let st = q.expect_exit(limit(host));
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    for line in [
        "tend-extension: fatal: refusing extension tools: dm-verity verification failed on \
         /dev/dm-0 (a wrong root hash or a changed image)\n",
        "tend-init: fatal: /etc/tend/init.d/20-extensions failed: exit code 100\n",
        "tend-init: info: powering off\n",
        "reboot: Power down",
    ] {
        assert!(console.contains(line), "{line:?} missing:\n{console}");
    }
    assert!(!console.contains("tend-test:"), "the agent ran:\n{console}");
}
