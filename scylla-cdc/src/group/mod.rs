//! Consumer groups' shared state and the decisions taken on it: the lease table ([`lease`])
//! in which the members of a group record who is in it and who reads which unit of work,
//! changed only by lightweight transactions, and the planner ([`plan`]) that tells a member,
//! from what it read there, which units to take, ask for and hand over. The member that acts
//! on them is part of the reader (`reader::member`).

pub(crate) mod lease;
pub(crate) mod plan;
