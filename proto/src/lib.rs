//! The wire protocol: `retro.proto` compiled with tonic and prost.
//!
//! [`PROTOCOL_VERSION`] changes whenever the meaning of a message changes; a
//! worker and coordinator of different versions refuse each other.

#![allow(missing_docs)]
#![allow(clippy::all)]

/// Version of the protocol spoken by this build. 2: an update batch carries
/// decided positions routed by predecessor block (`retro_engine::routed`),
/// no longer one key per predecessor. 3: tasks and batches carry the layer
/// attempt, and a worker may replace one lost for good. 4: a routed record
/// is the game's frontier record of the decided position
/// (`RetroGame::frontier_record`), not its rank. 5: one join for every kind
/// of job (`Cluster.Join`), whose reply names the kind. 6: a level job's
/// keys are folded by the symmetries that fix its start (`peg::Folded`), no
/// longer by all eight. 7: a level shard travels as numbered pieces (the last
/// one flagged) and a worker learns the job's memory bound, so levels cross
/// machines on disk, in bounded memory. 8: a retrograde worker is fenced by
/// the generation of its data directory (`JoinRequest.generation`), which it
/// stores before its first pull and sends with its update batches. 9: an
/// uploaded block carries the same block of the layer's depth file.
pub const PROTOCOL_VERSION: u32 = 9;

/// Metadata key carrying the cluster token.
pub const TOKEN_METADATA: &str = "authorization";

/// Largest message either side accepts (update batches are split below this).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

tonic::include_proto!("retro.v1");
