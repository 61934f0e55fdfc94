//! The batches the event source mappings gave up on (retries or record age
//! ran out), as Lambda keeps them: one object each under `aws/lambda/` of
//! the quarantine bucket, the whole event in it
//! ([`model::record::FailedBatch`]). Listed by `streamdex quarantine
//! failures`, saved for `streamdex replay`.

use model::record::{read_failed_batch, FailedBatch, FAILED_BATCH_PREFIX};

/// One failed batch's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedObject {
    pub key: String,
    /// The object as stored (the record, JSON).
    pub body: Vec<u8>,
    /// What it says, or why it could not be read.
    pub batch: Result<FailedBatch, String>,
}

/// Why the failed batches could not be listed.
#[derive(Debug, thiserror::Error)]
#[error("{operation} of s3://{bucket}/{FAILED_BATCH_PREFIX} failed: {message}")]
pub struct FailedListError {
    pub operation: &'static str,
    pub bucket: String,
    pub message: String,
}

/// Up to `limit` failed batches of `bucket`, oldest key first.
pub async fn list(s3: &aws_sdk_s3::Client, bucket: &str, limit: usize) -> Result<Vec<FailedObject>, FailedListError> {
    let failed = |operation: &'static str| {
        move |message: String| FailedListError {
            operation,
            bucket: bucket.to_owned(),
            message,
        }
    };
    let mut keys = Vec::new();
    let mut token = None;
    loop {
        let page = s3
            .list_objects_v2()
            .bucket(bucket)
            .prefix(FAILED_BATCH_PREFIX)
            .set_continuation_token(token)
            .send()
            .await
            .map_err(|e| failed("ListObjectsV2")(aws_kit::error::sdk_message(&e)))?;
        keys.extend(page.contents.unwrap_or_default().into_iter().filter_map(|o| o.key));
        token = page.next_continuation_token;
        if token.is_none() || keys.len() >= limit {
            break;
        }
    }
    keys.sort();
    keys.truncate(limit);
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let object = s3
            .get_object()
            .bucket(bucket)
            .key(&key)
            .send()
            .await
            .map_err(|e| failed("GetObject")(aws_kit::error::sdk_message(&e)))?;
        let body = object
            .body
            .collect()
            .await
            .map_err(|e| failed("GetObject")(e.to_string()))?
            .into_bytes()
            .to_vec();
        let batch = read_failed_batch(&body).map_err(|e| e.to_string());
        out.push(FailedObject { key, body, batch });
    }
    Ok(out)
}

/// The file name a failed batch is saved under: its key's last part.
pub fn file_name(key: &str) -> String {
    let last = key.rsplit('/').next().unwrap_or(key);
    format!("{last}.json")
}

#[cfg(test)]
mod tests {
    use super::file_name;

    #[test]
    fn a_saved_batch_is_named_for_its_key() {
        assert_eq!(
            file_name("aws/lambda/uuid/shard-1/2019/11/14/2019-11-14T00.13.49-ab12"),
            "2019-11-14T00.13.49-ab12.json"
        );
    }
}
