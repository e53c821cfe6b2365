//! tend-svstat — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-svstat: fatal: not implemented");
    std::process::exit(111);
}
