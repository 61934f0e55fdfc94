//! The quarantine's claim-check bucket: created by `up`, emptied and
//! deleted by `down`.

use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration, Delete, ObjectIdentifier};

use super::*;

fn is_missing_bucket<E: ProvideErrorMetadata>(e: &E) -> bool {
    matches!(e.code(), Some("NoSuchBucket" | "NotFound" | "404"))
}

/// Whether the bucket exists.
pub async fn bucket_exists(client: &aws_sdk_s3::Client, bucket: &str) -> Result<bool, StackError> {
    match client.head_bucket().bucket(bucket).send().await {
        Ok(_) => Ok(true),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(false),
        Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 404) => Ok(false),
        Err(e) => Err(aws_error("HeadBucket", "bucket", bucket)(e)),
    }
}

pub(super) async fn ensure_bucket(client: &aws_sdk_s3::Client, bucket: &str) -> Result<Change, StackError> {
    let action = if bucket_exists(client, bucket).await? {
        Action::Unchanged
    } else {
        let mut request = client.create_bucket().bucket(bucket);
        // us-east-1 takes no location constraint; every other region needs its own.
        if let Some(region) = client.config().region().map(|r| r.as_ref().to_owned()) {
            if region != "us-east-1" {
                request = request.create_bucket_configuration(
                    CreateBucketConfiguration::builder()
                        .location_constraint(BucketLocationConstraint::from(region.as_str()))
                        .build(),
                );
            }
        }
        request
            .send()
            .await
            .map_err(aws_error("CreateBucket", "bucket", bucket))?;
        Action::Created
    };
    Ok(Change {
        kind: "bucket",
        name: bucket.to_owned(),
        action,
    })
}

/// Deletes every object of the bucket, then the bucket.
pub(super) async fn delete_bucket(client: &aws_sdk_s3::Client, bucket: &str) -> Result<Change, StackError> {
    if !bucket_exists(client, bucket).await? {
        return Ok(Change {
            kind: "bucket",
            name: bucket.to_owned(),
            action: Action::Absent,
        });
    }
    loop {
        let listed = client.list_objects_v2().bucket(bucket).send().await.map_err(aws_error(
            "ListObjectsV2",
            "bucket",
            bucket,
        ))?;
        let keys: Vec<ObjectIdentifier> = listed
            .contents()
            .iter()
            .filter_map(|o| o.key())
            .filter_map(|k| ObjectIdentifier::builder().key(k).build().ok())
            .collect();
        if keys.is_empty() {
            break;
        }
        let delete = Delete::builder()
            .set_objects(Some(keys))
            .build()
            .map_err(|e| StackError::Aws {
                operation: "DeleteObjects",
                kind: "bucket",
                name: bucket.to_owned(),
                message: e.to_string(),
            })?;
        client
            .delete_objects()
            .bucket(bucket)
            .delete(delete)
            .send()
            .await
            .map_err(aws_error("DeleteObjects", "bucket", bucket))?;
    }
    let action = match client.delete_bucket().bucket(bucket).send().await {
        Ok(_) => Action::Deleted,
        Err(e) if e.as_service_error().is_some_and(is_missing_bucket) => Action::Absent,
        Err(e) => return Err(aws_error("DeleteBucket", "bucket", bucket)(e)),
    };
    Ok(Change {
        kind: "bucket",
        name: bucket.to_owned(),
        action,
    })
}
