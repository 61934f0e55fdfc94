//! `streamdex package`: what `sam package` does to this project's template.
//! Each function's local `CodeUri` (a zip, relative to the template's
//! folder) is uploaded to S3 under a key named by its content, and the
//! template is rewritten to point at it, so CloudFormation (or the SAM
//! translator, `infra/expand.py`) can take it.
//!
//! The pure part ([`local_code`], [`key_of`], [`point_at`]) decides; the
//! upload ([`package`]) carries it out.

use std::path::{Path, PathBuf};

use aws_sdk_s3::primitives::ByteStream;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

/// The resource type whose code is packaged.
pub const FUNCTION_TYPE: &str = "AWS::Serverless::Function";

/// A function whose code is a local file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalCode {
    /// The function's logical id.
    pub resource: String,
    /// The zip, as the template names it (relative to the template's folder).
    pub uri: String,
    /// The zip's path from here.
    pub path: PathBuf,
}

/// One uploaded zip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uploaded {
    pub resource: String,
    pub path: PathBuf,
    pub bytes: usize,
    /// `s3://bucket/key`.
    pub location: String,
}

/// Why a template was not packaged.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("the template has no `Resources` object")]
    NoResources,
    #[error(
        "{resource}: cannot read its code {path} (CodeUri `{uri}`, relative to the template's folder): {source}; \
         build it with scripts/build-functions.sh"
    )]
    Read {
        resource: String,
        uri: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{resource}: its code {path} is not a zip (CodeUri `{uri}`); Lambda takes a zip with `bootstrap` in it")]
    NotZip {
        resource: String,
        uri: String,
        path: PathBuf,
    },
    #[error("PutObject of s3://{bucket}/{key} ({resource}'s code) failed: {message}")]
    Upload {
        resource: String,
        bucket: String,
        key: String,
        message: String,
    },
    #[error("CreateBucket of {bucket} failed: {message}")]
    CreateBucket { bucket: String, message: String },
}

/// The functions of `template` whose `CodeUri` is a local path (not an
/// `s3://` URI nor an object), resolved against `base` (the template's folder).
pub fn local_code(template: &Json, base: &Path) -> Result<Vec<LocalCode>, PackageError> {
    let resources = template["Resources"].as_object().ok_or(PackageError::NoResources)?;
    Ok(resources
        .iter()
        .filter(|(_, r)| r["Type"] == FUNCTION_TYPE)
        .filter_map(|(id, r)| {
            let uri = r["Properties"]["CodeUri"].as_str()?;
            (!uri.starts_with("s3://")).then(|| LocalCode {
                resource: id.clone(),
                uri: uri.to_owned(),
                path: joined(base, uri),
            })
        })
        .collect())
}

/// `base` joined with `relative`, each `x/..` taken out as written (no
/// file is looked at): `target` and `../target/lambda/a` give `target/lambda/a`.
fn joined(base: &Path, relative: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in base.join(relative).components() {
        match part {
            std::path::Component::ParentDir
                if matches!(out.components().next_back(), Some(std::path::Component::Normal(_))) =>
            {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The key of a zip: `prefix/` and the SHA-256 of its content, so the same
/// build is uploaded once and a new one never overwrites a deployed one.
pub fn key_of(prefix: &str, zip: &[u8]) -> String {
    let digest = Sha256::digest(zip);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        format!("{hex}.zip")
    } else {
        format!("{prefix}/{hex}.zip")
    }
}

/// Points `resource`'s `CodeUri` at `s3://bucket/key`.
pub fn point_at(template: &mut Json, resource: &str, bucket: &str, key: &str) -> String {
    let location = format!("s3://{bucket}/{key}");
    template["Resources"][resource]["Properties"]["CodeUri"] = Json::String(location.clone());
    location
}

/// A zip starts with a local file header (`PK\x03\x04`).
fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

/// Uploads every local code zip of `template` (relative to `base`) to
/// `bucket` under `prefix` and rewrites the template to point at them;
/// `create_bucket` creates the bucket first when it is missing.
pub async fn package(
    s3: &aws_sdk_s3::Client,
    template: &mut Json,
    base: &Path,
    bucket: &str,
    prefix: &str,
    create_bucket: bool,
) -> Result<Vec<Uploaded>, PackageError> {
    let code = local_code(template, base)?;
    let mut zips = Vec::with_capacity(code.len());
    for c in code {
        let bytes = std::fs::read(&c.path).map_err(|source| PackageError::Read {
            resource: c.resource.clone(),
            uri: c.uri.clone(),
            path: c.path.clone(),
            source,
        })?;
        if !is_zip(&bytes) {
            return Err(PackageError::NotZip {
                resource: c.resource,
                uri: c.uri,
                path: c.path,
            });
        }
        zips.push((c, bytes));
    }
    if create_bucket && s3.head_bucket().bucket(bucket).send().await.is_err() {
        s3.create_bucket()
            .bucket(bucket)
            .send()
            .await
            .map_err(|e| PackageError::CreateBucket {
                bucket: bucket.to_owned(),
                message: aws_kit::error::sdk_message(&e),
            })?;
    }
    let mut uploaded = Vec::with_capacity(zips.len());
    for (c, bytes) in zips {
        let key = key_of(prefix, &bytes);
        let size = bytes.len();
        s3.put_object()
            .bucket(bucket)
            .key(&key)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(|e| PackageError::Upload {
                resource: c.resource.clone(),
                bucket: bucket.to_owned(),
                key: key.clone(),
                message: aws_kit::error::sdk_message(&e),
            })?;
        let location = point_at(template, &c.resource, bucket, &key);
        uploaded.push(Uploaded {
            resource: c.resource,
            path: c.path,
            bytes: size,
            location,
        });
    }
    Ok(uploaded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> Json {
        json!({ "Resources": {
            "A": { "Type": FUNCTION_TYPE, "Properties": { "CodeUri": "../target/lambda/a/bootstrap.zip" } },
            "B": { "Type": FUNCTION_TYPE, "Properties": { "CodeUri": "s3://bucket/b.zip" } },
            "C": { "Type": "AWS::SQS::Queue", "Properties": { "CodeUri": "not/code.zip" } },
        } })
    }

    #[test]
    fn only_local_function_code_is_packaged_relative_to_the_template() {
        let code = local_code(&template(), Path::new("infra")).unwrap();
        assert_eq!(
            code,
            [LocalCode {
                resource: "A".to_owned(),
                uri: "../target/lambda/a/bootstrap.zip".to_owned(),
                path: PathBuf::from("target/lambda/a/bootstrap.zip"),
            }]
        );
        assert!(matches!(
            local_code(&json!({}), Path::new(".")),
            Err(PackageError::NoResources)
        ));
        assert_eq!(
            joined(Path::new("./target"), "../target/x.zip"),
            PathBuf::from("target/x.zip")
        );
        assert_eq!(joined(Path::new(""), "../x.zip"), PathBuf::from("../x.zip"));
    }

    #[test]
    fn keys_name_the_content() {
        let a = key_of("streamdex/", b"PK\x03\x04one");
        assert_eq!(a, key_of("streamdex", b"PK\x03\x04one"));
        assert_ne!(a, key_of("streamdex", b"PK\x03\x04two"));
        assert!(a.starts_with("streamdex/") && a.ends_with(".zip"), "{a}");
        assert_eq!(a.len(), "streamdex/".len() + 64 + ".zip".len());
        assert!(!key_of("", b"x").starts_with('/'));
    }

    #[test]
    fn pointing_rewrites_only_that_code_uri() {
        let mut t = template();
        let location = point_at(&mut t, "A", "art", "k.zip");
        assert_eq!(location, "s3://art/k.zip");
        assert_eq!(t["Resources"]["A"]["Properties"]["CodeUri"], "s3://art/k.zip");
        assert_eq!(t["Resources"]["B"]["Properties"]["CodeUri"], "s3://bucket/b.zip");
        assert!(local_code(&t, Path::new(".")).unwrap().is_empty());
    }
}
