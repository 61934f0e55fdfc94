//! The stream-indexer Lambda: see `stream_indexer::lambda`.

// The handler future (SDK calls inside concurrent groups) nests deeply.
#![recursion_limit = "256"]

// Freeing a large batch's images costs as much as parsing them with the
// system allocator; mimalloc cuts both (see `docs/PERFORMANCE.md`, "The allocator").
#[global_allocator]
static ALLOCATOR: aws_kit::alloc::Allocator = aws_kit::alloc::Allocator;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    stream_indexer::lambda::run().await
}
