//! Consumer groups' shared state: the lease table ([`lease`]) in which the members of a group
//! record who is in it and who reads which unit of work, changed only by lightweight
//! transactions. The member that acts on it is part of the reader (`reader::member`).

pub(crate) mod lease;
