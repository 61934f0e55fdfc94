//! `streamdex deploy`: a plain CloudFormation template (the SAM template
//! packaged and expanded) created as a stack, waited for (bounded), and
//! reported resource by resource: what the stack created, what a false
//! condition left out, what failed and why, and what the endpoint's
//! CloudFormation left out without a word (moto's has no model for some
//! types: the report names each one, so nothing is missing silently).
//!
//! [`report`] decides from what the stack says; [`deploy`] asks it.

pub mod condition;
pub mod mappings;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use aws_sdk_cloudformation::types::{Capability, Parameter, StackStatus};
use serde_json::Value as Json;

use aws_kit::clock::Clock;

/// The largest template CloudFormation takes inline (`TemplateBody`).
pub const MAX_TEMPLATE_BODY_BYTES: usize = 51_200;

/// How often the stack's status is read while it is created.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What became of one resource of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// The stack holds it; its physical id.
    Created(String),
    /// Its condition is false for these parameters.
    Conditioned(String),
    /// The stack reports it failed, and why.
    Failed(String),
    /// The stack neither holds it nor reports a failure.
    Absent,
    /// An event source mapping kept out of the stack and written down
    /// (`--defer-mappings`).
    Deferred,
}

/// One resource of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub logical_id: String,
    pub kind: String,
    pub fate: Fate,
}

/// What `deploy` found.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub stack: String,
    pub status: String,
    pub resources: Vec<Resource>,
    /// Output key, value.
    pub outputs: BTreeMap<String, String>,
    /// The mappings kept out of the stack, resolved against it.
    pub deferred: Vec<mappings::DeferredMapping>,
}

impl Report {
    /// The stack was created, whatever it left out.
    pub fn is_complete(&self) -> bool {
        self.status == StackStatus::CreateComplete.as_str()
    }

    /// The resources the endpoint left out without a word.
    pub fn absent(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter().filter(|r| r.fate == Fate::Absent)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.resources {
            let (word, detail) = match &r.fate {
                Fate::Created(id) => ("created", id.clone()),
                Fate::Conditioned(c) => ("skipped", format!("its condition {c} is false")),
                Fate::Failed(reason) => ("FAILED", reason.clone()),
                Fate::Absent => (
                    "absent",
                    format!(
                        "the endpoint's CloudFormation made no {} and reported no failure",
                        r.kind
                    ),
                ),
                Fate::Deferred => (
                    "deferred",
                    "kept out of the stack and written down for `streamdex run --functions`".to_owned(),
                ),
            };
            writeln!(f, "{word:<8} {:<34} {:<40} {detail}", r.kind, r.logical_id)?;
        }
        for (key, value) in &self.outputs {
            writeln!(f, "output   {key} = {value}")?;
        }
        let count = |p: fn(&Fate) -> bool| self.resources.iter().filter(|r| p(&r.fate)).count();
        writeln!(
            f,
            "stack {}: {}; {} created, {} skipped by a condition, {} failed, {} absent, {} deferred",
            self.stack,
            self.status,
            count(|f| matches!(f, Fate::Created(_))),
            count(|f| matches!(f, Fate::Conditioned(_))),
            count(|f| matches!(f, Fate::Failed(_))),
            count(|f| matches!(f, Fate::Absent)),
            count(|f| matches!(f, Fate::Deferred)),
        )
    }
}

/// Why a stack was not deployed.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("the template has no `Resources` object")]
    NoResources,
    #[error(
        "the template is {bytes} bytes compact, over the {MAX_TEMPLATE_BODY_BYTES} CloudFormation takes inline; \
         deploy it with `sam deploy`, which uploads it to S3 first"
    )]
    TooLarge { bytes: usize },
    #[error("{operation} of stack {stack} failed: {message}")]
    Aws {
        operation: &'static str,
        stack: String,
        message: String,
    },
    #[error(transparent)]
    Defer(#[from] mappings::DeferError),
    #[error("stack {stack} is still {status} after {seconds} s (raise --timeout, or read its events)")]
    Timeout {
        stack: String,
        status: String,
        seconds: u64,
    },
}

/// The report of `template`'s resources from the stack's resources
/// (logical id to physical id) and its failure events (logical id to reason).
pub fn report(
    template: &Json,
    parameters: &BTreeMap<String, String>,
    created: &BTreeMap<String, String>,
    failures: &BTreeMap<String, String>,
    deferred: bool,
) -> Result<Vec<Resource>, DeployError> {
    let resources = template["Resources"].as_object().ok_or(DeployError::NoResources)?;
    let conditions = condition::Conditions::new(template, parameters);
    Ok(resources
        .iter()
        .map(|(id, r)| {
            let fate = if r["Type"] == mappings::MAPPING_TYPE && deferred {
                Fate::Deferred
            } else if let Some(physical) = created.get(id) {
                Fate::Created(physical.clone())
            } else if let Some(reason) = failures.get(id) {
                Fate::Failed(reason.clone())
            } else {
                match r["Condition"].as_str() {
                    Some(c) if conditions.holds(c) == Some(false) => Fate::Conditioned(c.to_owned()),
                    _ => Fate::Absent,
                }
            };
            Resource {
                logical_id: id.clone(),
                kind: r["Type"].as_str().unwrap_or("(no Type)").to_owned(),
                fate,
            }
        })
        .collect())
}

/// Creates `template` as stack `stack` with `parameters`, waits up to
/// `timeout` for it to settle, and reports it; with `defer_mappings`, the
/// event source mappings are kept out of the stack and resolved against it
/// instead ([`mappings`]).
pub async fn deploy(
    cf: &aws_sdk_cloudformation::Client,
    clock: &dyn Clock,
    template: &Json,
    stack: &str,
    parameters: &BTreeMap<String, String>,
    timeout: Duration,
    defer_mappings: bool,
) -> Result<Report, DeployError> {
    if template["Resources"].as_object().is_none() {
        return Err(DeployError::NoResources);
    }
    let mut created_template = template.clone();
    let kept_out = if defer_mappings {
        mappings::take(&mut created_template)
    } else {
        Vec::new()
    };
    let body = created_template.to_string();
    if body.len() > MAX_TEMPLATE_BODY_BYTES {
        return Err(DeployError::TooLarge { bytes: body.len() });
    }
    cf.create_stack()
        .stack_name(stack)
        .template_body(body)
        .set_parameters(Some(
            parameters
                .iter()
                .map(|(k, v)| Parameter::builder().parameter_key(k).parameter_value(v).build())
                .collect(),
        ))
        .capabilities(Capability::CapabilityIam)
        .capabilities(Capability::CapabilityNamedIam)
        .capabilities(Capability::CapabilityAutoExpand)
        .send()
        .await
        .map_err(|e| aws_error("CreateStack", stack, aws_kit::error::sdk_message(&e)))?;

    let (status, outputs) = settled(cf, clock, stack, timeout).await?;
    let created = created_resources(cf, stack).await?;
    let failures = failures(cf, stack).await?;
    let deferred = kept_out
        .iter()
        .map(|(id, mapping)| mappings::resolve(id, mapping, &created))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Report {
        stack: stack.to_owned(),
        status,
        resources: report(template, parameters, &created, &failures, defer_mappings)?,
        outputs,
        deferred,
    })
}

/// A failed CloudFormation call `operation` of stack `stack`.
fn aws_error(operation: &'static str, stack: &str, message: String) -> DeployError {
    DeployError::Aws {
        operation,
        stack: stack.to_owned(),
        message,
    }
}

/// Waits (at most `timeout`) for stack `stack` to leave its `_IN_PROGRESS`
/// status; its status then, and its outputs.
async fn settled(
    cf: &aws_sdk_cloudformation::Client,
    clock: &dyn Clock,
    stack: &str,
    timeout: Duration,
) -> Result<(String, BTreeMap<String, String>), DeployError> {
    let started = clock.now_ms();
    let described = loop {
        let described = cf
            .describe_stacks()
            .stack_name(stack)
            .send()
            .await
            .map_err(|e| aws_error("DescribeStacks", stack, aws_kit::error::sdk_message(&e)))?;
        let first = described.stacks.unwrap_or_default().into_iter().next();
        let status = first
            .as_ref()
            .and_then(|s| s.stack_status.as_ref())
            .map(|s| s.as_str().to_owned());
        let status = status.unwrap_or_default();
        if !status.ends_with("_IN_PROGRESS") {
            break first;
        }
        let waited = clock.now_ms().saturating_sub(started);
        if waited >= u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX) {
            return Err(DeployError::Timeout {
                stack: stack.to_owned(),
                status,
                seconds: timeout.as_secs(),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    };
    let status = described
        .as_ref()
        .and_then(|s| s.stack_status.as_ref())
        .map_or_else(|| "(no status)".to_owned(), |s| s.as_str().to_owned());
    let outputs = described
        .and_then(|s| s.outputs)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|o| Some((o.output_key?, o.output_value.unwrap_or_default())))
        .collect();
    Ok((status, outputs))
}

/// The logical and physical ids of the resources of stack `stack` that
/// were created (every page of ListStackResources).
async fn created_resources(
    cf: &aws_sdk_cloudformation::Client,
    stack: &str,
) -> Result<BTreeMap<String, String>, DeployError> {
    let mut created = BTreeMap::new();
    let mut next = None;
    loop {
        let page = cf
            .list_stack_resources()
            .stack_name(stack)
            .set_next_token(next)
            .send()
            .await
            .map_err(|e| aws_error("ListStackResources", stack, aws_kit::error::sdk_message(&e)))?;
        for r in page.stack_resource_summaries.unwrap_or_default() {
            let ok = r
                .resource_status
                .as_ref()
                .is_some_and(|s| s.as_str().ends_with("_COMPLETE"));
            if let (true, Some(id)) = (ok, r.logical_resource_id) {
                created.insert(id, r.physical_resource_id.unwrap_or_default());
            }
        }
        next = page.next_token;
        if next.is_none() {
            break;
        }
    }
    Ok(created)
}

/// Why each resource of stack `stack` that failed did (its first reason
/// in the stack's events), the stack itself left out.
async fn failures(cf: &aws_sdk_cloudformation::Client, stack: &str) -> Result<BTreeMap<String, String>, DeployError> {
    let mut failures = BTreeMap::new();
    let events = cf
        .describe_stack_events()
        .stack_name(stack)
        .send()
        .await
        .map_err(|e| aws_error("DescribeStackEvents", stack, aws_kit::error::sdk_message(&e)))?;
    for e in events.stack_events.unwrap_or_default() {
        let failed = e
            .resource_status
            .as_ref()
            .is_some_and(|s| s.as_str().ends_with("_FAILED"));
        if let (true, Some(id)) = (failed, e.logical_resource_id) {
            let reason = e
                .resource_status_reason
                .unwrap_or_else(|| "(no reason given)".to_owned());
            failures.entry(id).or_insert(reason);
        }
    }
    failures.remove(stack);
    Ok(failures)
}

#[cfg(test)]
mod tests;
