//! The stream-indexer Lambda: see `stream_indexer::lambda`.

// The handler future (SDK calls inside concurrent groups) nests deeply.
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    stream_indexer::lambda::run().await
}
