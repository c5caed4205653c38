//! `p4jet gen` on its own, until the p4jet binary has the subcommand:
//! `cargo run --release -p p4jet-gen --example gen -- ipv4 --entries 100000 --out /tmp/g`.

use clap::Parser;

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    args: p4jet_gen::GenArgs,
}

fn main() -> std::process::ExitCode {
    match p4jet_gen::main(Cmd::parse().args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("p4jet gen: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
