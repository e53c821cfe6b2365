//! tend-softlimit — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-softlimit: fatal: not implemented");
    std::process::exit(111);
}
