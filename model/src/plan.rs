//! The change planner. TODO.
pub struct Plan;
pub enum Mutation {}
#[derive(Debug)]
pub struct PlanError;
pub fn plan() {}
