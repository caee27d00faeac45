package delta

import (
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/schema"
)

// Snapshot is the state of a table at one version, as LoadSnapshot
// replays it. Treat it as read-only (copy an *Add before changing it):
// one Snapshot is usually shared by the planner, writer and committer.
type Snapshot struct {
	// Version is the table version this snapshot describes.
	Version int64
	// Timestamp is the commit timestamp of Version in ms (in-commit
	// timestamp when enabled, else the commit file's modification time).
	Timestamp int64
	// Protocol is the latest protocol action at Version.
	Protocol actions.Protocol
	// Metadata is the latest metaData action at Version.
	Metadata actions.Metadata
	// Schema is Metadata.SchemaString parsed.
	Schema *schema.StructType
	// Files are the live add actions, sorted by Path.
	Files []*actions.Add
	// Tombstones are the remove actions known to this snapshot (those of
	// its checkpoint and of the commits after it; this build does not
	// expire them), sorted by Path.
	Tombstones []*actions.Remove
	// Txns holds the latest txn per appId.
	Txns map[string]actions.Txn
	// Domains holds the live (not removed) domain metadata per domain name.
	Domains map[string]actions.DomainMetadata

	// props are Metadata.Configuration parsed when the snapshot was
	// loaded (nil in a snapshot built by hand; see Properties).
	props *props.Properties
	// slim is set on a snapshot Slim cut down (never committed against
	// or checkpointed).
	slim *slimInfo
}
