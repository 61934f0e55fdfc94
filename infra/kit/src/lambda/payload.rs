//! Each invocation's payload, as the bytes Lambda sent.
//!
//! `lambda_runtime` reads every payload into the handler's event type before
//! the handler runs. Asked for a `Box<RawValue>`, it reads the whole batch
//! once (to check that it is JSON) and copies it, and then the consumer
//! reads it again, record by record: two passes over up to 6 MB. Instead,
//! [`KeepPayloads`], a layer in front of that step, takes each invocation's
//! body as it arrives (keyed by its request id) and leaves `null` in its
//! place; the handler takes the body back by its context's request id and
//! reads it once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use lambda_runtime::tower::{Layer, Service};
use lambda_runtime::LambdaInvocation;

/// The bodies taken from invocations, until their handlers take them.
#[derive(Debug, Clone, Default)]
pub struct Payloads(Arc<Mutex<HashMap<String, Bytes>>>);

impl Payloads {
    fn keep(&self, request_id: String, body: Bytes) {
        self.lock().insert(request_id, body);
    }

    /// The body of the invocation with `request_id`, once.
    pub fn take(&self, request_id: &str) -> Option<Bytes> {
        self.lock().remove(request_id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Bytes>> {
        // The map is consistent after any panic: an insert or a remove.
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The layer that takes each invocation's body into [`Payloads`].
#[derive(Debug, Clone)]
pub struct KeepPayloads(pub Payloads);

impl<S> Layer<S> for KeepPayloads {
    type Service = Keeping<S>;

    fn layer(&self, inner: S) -> Keeping<S> {
        Keeping {
            inner,
            payloads: self.0.clone(),
        }
    }
}

/// [`KeepPayloads`]' service.
#[derive(Debug, Clone)]
pub struct Keeping<S> {
    inner: S,
    payloads: Payloads,
}

/// What the runtime reads in place of the payload: JSON, and next to nothing.
const STAND_IN: &[u8] = b"null";

impl<S: Service<LambdaInvocation>> Service<LambdaInvocation> for Keeping<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut invocation: LambdaInvocation) -> S::Future {
        let body = std::mem::replace(&mut invocation.body, Bytes::from_static(STAND_IN));
        self.payloads.keep(invocation.context.request_id.clone(), body);
        self.inner.call(invocation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An inner service that answers with the body it was given.
    #[derive(Clone)]
    struct Echo;

    impl Service<LambdaInvocation> for Echo {
        type Response = Bytes;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Bytes, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, invocation: LambdaInvocation) -> Self::Future {
            std::future::ready(Ok(invocation.body))
        }
    }

    fn invocation(request_id: &str, body: &'static [u8]) -> LambdaInvocation {
        let (parts, ()) = http::Response::new(()).into_parts();
        let mut context = lambda_runtime::Context::default();
        context.request_id = request_id.to_owned();
        LambdaInvocation {
            parts,
            body: Bytes::from_static(body),
            context,
        }
    }

    #[tokio::test]
    async fn each_body_is_kept_for_its_request_and_the_runtime_reads_a_stand_in() {
        let payloads = Payloads::default();
        let mut service = KeepPayloads(payloads.clone()).layer(Echo);
        let seen_a = service.call(invocation("a", b"{\"Records\":[1]}")).await;
        let seen_b = service.call(invocation("b", b"{\"Records\":[2]}")).await;
        assert_eq!(seen_a, Ok(Bytes::from_static(STAND_IN)));
        assert_eq!(seen_b, Ok(Bytes::from_static(STAND_IN)));
        assert!(serde_json::from_slice::<serde::de::IgnoredAny>(STAND_IN).is_ok());
        assert_eq!(payloads.take("b").as_deref(), Some(&b"{\"Records\":[2]}"[..]));
        assert_eq!(payloads.take("a").as_deref(), Some(&b"{\"Records\":[1]}"[..]));
        assert_eq!(payloads.take("a"), None, "taken once");
    }
}
