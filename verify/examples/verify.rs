//! `bci verify` until the CLI crate wires it: `cargo run -p bci-verify --release --example verify -- <dir|jar> [--classpath a:b] [--no-jdk] [--cross]`
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(bci_verify::cli::run(&args));
}
