use clap::Parser;

fn main() -> std::process::ExitCode {
    infra::cli::run(infra::cli::Cli::parse())
}
