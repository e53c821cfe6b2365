//! tend-applyuidgid — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-applyuidgid: fatal: not implemented");
    std::process::exit(111);
}
