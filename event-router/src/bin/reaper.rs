//! The TTL reaper Lambda: see `event_router::reaper`.

#![recursion_limit = "256"]

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    event_router::reaper::lambda::run().await
}
