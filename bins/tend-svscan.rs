//! tend-svscan — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-svscan: fatal: not implemented");
    std::process::exit(111);
}
