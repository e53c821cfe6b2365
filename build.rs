// The musl build links through packaging/tend-cc, which lays out the code in the order
// packaging/hot-code.txt gives: a new order (or a new tend-cc, or a new key definition in
// hot-code.awk) must relink the executables, and cargo only relinks a package whose
// inputs changed.
fn main() {
    println!("cargo:rerun-if-changed=packaging/hot-code.txt");
    println!("cargo:rerun-if-changed=packaging/hot-code.awk");
    println!("cargo:rerun-if-changed=packaging/tend-cc");
    println!("cargo:rerun-if-changed=packaging/init-first.ld");
}
