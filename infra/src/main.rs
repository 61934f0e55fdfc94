use clap::Parser;

// Replay and the local runner build and drop many small images; mimalloc
// halves what the system allocator costs them (see the README's
// performance section), as in the Lambdas.
#[global_allocator]
static ALLOCATOR: aws_kit::alloc::Allocator = aws_kit::alloc::Allocator;

fn main() -> std::process::ExitCode {
    aws_kit::lambda::tune_allocator();
    infra::cli::run(infra::cli::Cli::parse())
}
