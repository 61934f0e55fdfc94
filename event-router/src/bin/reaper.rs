//! The TTL reaper Lambda: see `event_router::reaper`.

#![recursion_limit = "256"]

#[global_allocator]
static ALLOCATOR: aws_kit::alloc::Allocator = aws_kit::alloc::Allocator;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    event_router::reaper::lambda::run().await
}
