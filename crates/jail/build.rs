//! bpm's seccomp filter, compiled here once (src/seccomp.rs, the code tend-jail runs
//! otherwise) and written as static BPF into OUT_DIR/filter.rs: a start then loads it
//! as it is. The syscall numbers are the build machine's (libc's), so this is done only
//! when the target's architecture is the build machine's; a cross build compiles at
//! start instead (tend_jail::seccomp_program).

#[path = "src/seccomp.rs"]
#[allow(dead_code)]
mod seccomp;

use std::fmt::Write as _;

fn main() -> std::io::Result<()> {
    println!("cargo::rerun-if-changed=src/seccomp.rs");
    let out_dir = std::env::var_os("OUT_DIR").ok_or(std::io::Error::other("no OUT_DIR"))?;
    let out = std::path::Path::new(&out_dir).join("filter.rs");
    let native =
        std::env::var("CARGO_CFG_TARGET_ARCH").ok().as_deref() == Some(std::env::consts::ARCH);
    let mut code = String::from("// Written by build.rs from src/seccomp.rs.\n");
    match seccomp::compile().ok().filter(|_| native) {
        Some(program) => {
            code.push_str(
                "pub static PRECOMPILED: Option<&[seccompiler::sock_filter]> = Some(&[\n",
            );
            for i in &program {
                let _ = writeln!(
                    code,
                    "    seccompiler::sock_filter {{ code: {}, jt: {}, jf: {}, k: {} }},",
                    i.code, i.jt, i.jf, i.k
                );
            }
            code.push_str("]);\n");
        }
        None => {
            code.push_str("pub static PRECOMPILED: Option<&[seccompiler::sock_filter]> = None;\n")
        }
    }
    std::fs::write(&out, code)
}
