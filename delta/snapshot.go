package delta

// Snapshot is the state of a table at one version.
type Snapshot struct {
	// Version is the table version this snapshot describes.
	Version int64
	// Timestamp is the commit timestamp of Version in ms (in-commit
	// timestamp when enabled, else the commit file's modification time).
	Timestamp int64
	Protocol  Protocol
	Metadata  Metadata
	// Schema is Metadata.SchemaString parsed.
	Schema *StructType
	// Files are the live add actions, sorted by Path.
	Files []*Add
	// Tombstones are the unexpired remove actions known to this snapshot.
	Tombstones []*Remove
	// Txns holds the latest txn per appId.
	Txns map[string]Txn
	// Domains holds the live (not removed) domain metadata per domain name.
	Domains map[string]DomainMetadata
}
