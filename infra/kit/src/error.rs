//! SDK errors as [`Fault`]s: every failed AWS call, whichever service,
//! becomes one `Fault` whose class decides what the caller does (see
//! `model::fault`), whose message names the operation and what it was on,
//! and whose source is the SDK error itself.
//!
//! Classification is by the error code, else by the HTTP status. An unknown
//! 4xx code counts as a deployment problem: it fails the batch loudly rather
//! than quarantining records for it.

use std::error::Error as StdError;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use model::fault::{Class, Fault};

/// The class of an error an AWS service answered with: by its error code,
/// else by its HTTP status.
pub fn classify(code: Option<&str>, status: Option<u16>) -> Class {
    match code {
        Some(
            "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "Throttling"
            | "RequestLimitExceeded"
            | "InternalServerError"
            | "InternalFailure"
            | "ServiceUnavailable"
            | "ServiceUnavailableException"
            | "TransactionConflictException"
            | "ReplicatedWriteConflictException"
            | "ResourceInUseException"
            | "RequestExpired"
            | "RequestTimeout"
            | "RequestTimeoutException"
            | "ExpiredTokenException"
            | "LimitExceededException",
        ) => Class::Transient,
        Some(
            "ValidationException"
            | "ValidationError"
            | "ItemCollectionSizeLimitExceededException"
            | "SerializationException"
            | "InvalidParameterValue"
            | "InvalidParameterCombination"
            | "MissingParameter"
            | "ConditionalCheckFailedException",
        ) => Class::Refused,
        Some(
            "ResourceNotFoundException"
            | "AccessDeniedException"
            | "AccessDenied"
            | "UnrecognizedClientException"
            | "InvalidClientTokenId"
            | "MissingAuthenticationToken"
            | "MissingAuthenticationTokenException"
            | "IncompleteSignature"
            | "IncompleteSignatureException"
            | "InvalidSignatureException"
            | "NotAuthorized"
            | "OptInRequired"
            | "InvalidEndpointException"
            | "UnknownOperationException"
            | "InvalidAction",
        ) => Class::Deployment,
        _ => match status {
            Some(500..=599) | None => Class::Transient,
            Some(429) => Class::Transient,
            Some(_) => Class::Deployment,
        },
    }
}

/// Whether an error says the item would pass DynamoDB's 400 KB item limit.
pub fn is_item_too_large(code: Option<&str>, message: Option<&str>) -> bool {
    code == Some("ValidationException")
        && message.is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("item size") && (m.contains("exceeded") || m.contains("maximum"))
        })
}

/// Walks an error's source chain.
fn chain<'a>(err: &'a (dyn StdError + 'static)) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(err), |&e| e.source())
}

/// The messages of an error and its sources, joined on one line (some SDK
/// messages, such as the credential chain's, span several).
fn chain_text(err: &(dyn StdError + 'static)) -> String {
    let text = chain(err).map(ToString::to_string).collect::<Vec<_>>().join(": ");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A failed DynamoDB call naming the operation and the table(s).
pub fn table_fault<E, R>(operation: &str, table: &str, err: SdkError<E, R>) -> Fault
where
    E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    sdk_fault(&format!("{operation} on table `{table}`"), err)
}

/// A failed call of any AWS SDK as a [`Fault`] (its class by [`classify`]),
/// its message starting with `context` (the operation and what it was on),
/// the SDK error kept as its source.
pub fn sdk_fault<E, R>(context: &str, err: SdkError<E, R>) -> Fault
where
    E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let (class, what) = describe(&err);
    Fault::new(class, format!("{context}: {what}")).with_source(err)
}

/// One line for a failed AWS SDK call, as [`sdk_fault`] words it (the
/// error code and message, or why the request was not delivered), for
/// errors that are reported rather than classified: never the SDK's
/// `Debug` dump.
pub fn sdk_message<E, R>(err: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    describe(err).1
}

/// The class of a failed call, and what went wrong in one line.
fn describe<E, R>(err: &SdkError<E, R>) -> (Class, String)
where
    E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match err {
        SdkError::ServiceError(service) => {
            let status = raw_status(service.raw());
            let e = service.err();
            let code = e.code();
            let class = classify(code, status);
            let status = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
            let message = e.message().unwrap_or("no message");
            (class, format!("{}{status}: {message}", code.unwrap_or("unknown error")))
        }
        SdkError::TimeoutError(_) => (Class::Transient, "timed out".to_owned()),
        SdkError::DispatchFailure(failure) => {
            let text = failure.as_connector_error().map(|c| chain_text(c)).unwrap_or_default();
            let credentials = text.to_ascii_lowercase().contains("credential");
            if failure.is_io() || failure.is_timeout() {
                (Class::Transient, format!("request not delivered: {text}"))
            } else if credentials {
                (Class::Deployment, format!("no usable AWS credentials: {text}"))
            } else if failure.is_user() {
                (
                    Class::Deployment,
                    format!("the request could not be sent (configuration?): {text}"),
                )
            } else {
                (Class::Transient, format!("request not delivered: {text}"))
            }
        }
        SdkError::ResponseError(response) => {
            let status = raw_status(response.raw());
            let class = match status {
                Some(400..=499) => Class::Deployment,
                _ => Class::Transient,
            };
            let status = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
            (class, format!("unreadable response{status}: {}", chain_text(err)))
        }
        SdkError::ConstructionFailure(_) => (
            Class::Deployment,
            format!("the request could not be built: {}", chain_text(err)),
        ),
        _ => (Class::Transient, chain_text(err)),
    }
}

/// The HTTP status of a raw response, when it is the SDK's HTTP response
/// type (one type for every service's client).
fn raw_status<R: 'static>(raw: &R) -> Option<u16> {
    (raw as &dyn std::any::Any)
        .downcast_ref::<HttpResponse>()
        .map(|r| r.status().as_u16())
}

#[cfg(test)]
mod tests;
