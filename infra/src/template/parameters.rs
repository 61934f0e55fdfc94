//! The template's parameters: the optional customer key, where alarms go
//! and by which protocol, and the functions' architecture.

use serde_json::{json, Value as Json};

use super::{encryption, ids, ARCHITECTURES};

/// The template's parameters.
pub(super) fn parameters() -> Json {
    json!({
    ids::PARAM_KMS_KEY: encryption::parameter(),
    ids::PARAM_ALARM_ENDPOINT: {
        "Type": "String",
        "MinLength": 1,
        "Description": "Where alarms are sent: an email address (AlarmProtocol email), an HTTPS URL (https), an SQS queue or Lambda ARN, a phone number (sms)",
    },
    ids::PARAM_ALARM_PROTOCOL: {
        "Type": "String",
        "Default": "email",
        "AllowedValues": ["email", "email-json", "https", "sqs", "lambda", "sms"],
        "Description": "The SNS protocol of AlarmEndpoint",
    },
    ids::PARAM_ARCHITECTURE: {
        "Type": "String",
        "Default": ARCHITECTURES[0],
        "AllowedValues": ARCHITECTURES,
        "Description": "The functions' instruction set: what scripts/build-functions.sh built them for",
    },
    })
}
