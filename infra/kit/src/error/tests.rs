use super::*;
use aws_sdk_dynamodb::error::ConnectorError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

#[test]
fn codes_are_classified() {
    for code in [
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    ] {
        assert_eq!(classify(Some(code), Some(400)), Class::Transient, "{code}");
    }
    for code in [
        "ValidationException",
        "ItemCollectionSizeLimitExceededException",
        "SerializationException",
    ] {
        assert_eq!(classify(Some(code), Some(400)), Class::Refused, "{code}");
    }
    for code in [
        "ResourceNotFoundException",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "MissingAuthenticationToken",
        "InvalidSignatureException",
    ] {
        assert_eq!(classify(Some(code), Some(400)), Class::Deployment, "{code}");
    }
}

#[test]
fn statuses_decide_unknown_codes() {
    assert_eq!(classify(None, Some(500)), Class::Transient);
    assert_eq!(classify(Some("Whatever"), Some(503)), Class::Transient);
    assert_eq!(classify(None, Some(429)), Class::Transient);
    assert_eq!(classify(None, None), Class::Transient);
    assert_eq!(classify(Some("Whatever"), Some(403)), Class::Deployment);
    assert_eq!(classify(Some("Whatever"), Some(400)), Class::Deployment);
}

#[test]
fn item_too_large_is_recognised() {
    assert!(is_item_too_large(
        Some("ValidationException"),
        Some("Item size has exceeded the maximum allowed size")
    ));
    assert!(is_item_too_large(
        Some("ValidationException"),
        Some("Item size to update has exceeded the maximum allowed size")
    ));
    assert!(!is_item_too_large(
        Some("ValidationException"),
        Some("An string set  may not be empty")
    ));
    assert!(!is_item_too_large(
        Some("ThrottlingException"),
        Some("Item size has exceeded the maximum allowed size")
    ));
    assert!(!is_item_too_large(Some("ValidationException"), None));
}

type Err = SdkError<UpdateItemError, aws_sdk_dynamodb::config::http::HttpResponse>;

#[test]
fn transport_failures_are_transient() {
    let timeout: Err = SdkError::timeout_error("deadline");
    let e = table_fault("UpdateItem", "records", timeout);
    assert!(
        e.class() == Class::Transient && e.message().contains("UpdateItem on table `records`"),
        "{e:?}"
    );

    let io: Err = SdkError::dispatch_failure(ConnectorError::io("connection reset".into()));
    let e = table_fault("Query", "records", io);
    assert!(
        e.class() == Class::Transient && e.message().contains("Query on table `records`"),
        "{e:?}"
    );

    let connect_timeout: Err = SdkError::dispatch_failure(ConnectorError::timeout("connect".into()));
    assert!(table_fault("Query", "t", connect_timeout).is_retryable());
}

#[test]
fn missing_credentials_are_a_deployment_problem() {
    let creds: Err = SdkError::dispatch_failure(ConnectorError::other(
        "failed to resolve identity: the credential provider was not enabled".into(),
        None,
    ));
    let e = table_fault("BatchWriteItem", "IssueAttribIndex", creds);
    assert!(
        e.class() == Class::Deployment && e.message().contains("BatchWriteItem on table `IssueAttribIndex`"),
        "{e:?}"
    );
    let construction: Err = SdkError::construction_failure("a region must be set");
    assert!(table_fault("Query", "t", construction).is_deployment());
}

#[test]
fn the_sdk_error_is_kept_as_the_source() {
    let io: Err = SdkError::dispatch_failure(ConnectorError::io("connection reset".into()));
    let fault = table_fault("Query", "records", io);
    assert!(std::error::Error::source(&fault).is_some(), "{fault:?}");
}
