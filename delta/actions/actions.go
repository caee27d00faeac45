package actions

import (
	"github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/tablepath"

	"encoding/json"
	"fmt"
	"net/url"
)

// Extra holds JSON fields of an action that this build does not model, so
// that they survive a read/write round trip unchanged.
type Extra map[string]json.RawMessage

// Protocol is the protocol action.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
	Extra            Extra    `json:"-"`
}

// Format is the metaData.format object.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action.
type Metadata struct {
	ID               string            `json:"id"`
	Name             *string           `json:"name,omitempty"`
	Description      *string           `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
	Configuration    map[string]string `json:"configuration"`
	Extra            Extra             `json:"-"`
}

// DeletionVector is a deletion-vector descriptor as it appears on add and
// remove actions.
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
	Extra          Extra  `json:"-"`
}

// UniqueID is the descriptor's identity: storageType + pathOrInlineDv
// [+ "@" + offset]. A nil descriptor has the empty id.
func (dv *DeletionVector) UniqueID() string {
	if dv == nil {
		return ""
	}
	id := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		id += fmt.Sprintf("@%d", *dv.Offset)
	}
	return id
}

// Add is the add action. Path is kept exactly as it appears in the log
// (URL-encoded); use Key for the object key.
type Add struct {
	Path                    string             `json:"path"`
	PartitionValues         map[string]*string `json:"partitionValues"`
	Size                    int64              `json:"size"`
	ModificationTime        int64              `json:"modificationTime"`
	DataChange              bool               `json:"dataChange"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      *string            `json:"clusteringProvider,omitempty"`
	Extra                   Extra              `json:"-"`

	// ParsedStats are statistics the action carries already parsed: a
	// checkpoint's stats_parsed when it has no stats string, or an Add
	// built in memory. Snapshot loading does not fill it from Stats (read
	// statistics with NumRecords or FullStats). Not serialized.
	ParsedStats *stats.Stats `json:"-"`
}

// Key returns the object key of the data file relative to the table root
// in canonical form (tablepath.RelativeKey): the log path URL-decoded
// exactly once, "." and empty segments dropped, ".." resolved. A path
// outside the root (absolute, or climbing above it) is an error wrapping
// tablepath.ErrOutside: compactord reads no file outside the table. The
// error is a *failure.CorruptFileError naming the file (class Quarantine),
// so that a run skips it and goes on with the table's other files.
func (a *Add) Key() (string, error) {
	k, err := tablepath.RelativeKey(a.Path)
	if err != nil {
		return "", &failure.CorruptFileError{Kind: failure.DataFile, Path: a.Path, DataFile: a.Path,
			Err: fmt.Errorf("data file %w; compactord reads only files inside the table root", err)}
	}
	return k, nil
}

// NumDeleted returns the cardinality of the file's deletion vector (0 without one).
func (a *Add) NumDeleted() int64 {
	if a.DeletionVector == nil {
		return 0
	}
	return a.DeletionVector.Cardinality
}

// FileKey is the logical identity of a file in the log: path plus DV id.
func (a *Add) FileKey() string { return a.Path + "\x00" + a.DeletionVector.UniqueID() }

// Remove is the remove action.
type Remove struct {
	Path                    string             `json:"path"`
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty"`
	DataChange              bool               `json:"dataChange"`
	ExtendedFileMetadata    *bool              `json:"extendedFileMetadata,omitempty"`
	PartitionValues         map[string]*string `json:"partitionValues,omitempty"`
	Size                    *int64             `json:"size,omitempty"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
	Extra                   Extra              `json:"-"`
}

// FileKey is the logical identity of the removed file: path plus DV id.
func (r *Remove) FileKey() string { return r.Path + "\x00" + r.DeletionVector.UniqueID() }

// Txn is the txn (set transaction) action.
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
	Extra       Extra  `json:"-"`
}

// DomainMetadata is the domainMetadata action.
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	Removed       bool   `json:"removed"`
	Extra         Extra  `json:"-"`
}

// CDC is the cdc action (a change-data file).
type CDC struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	DataChange      bool               `json:"dataChange"`
	Tags            map[string]string  `json:"tags,omitempty"`
	Extra           Extra              `json:"-"`
}

// CheckpointMetadata is the checkpointMetadata action of V2 checkpoints.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
	Extra   Extra             `json:"-"`
}

// Sidecar is the sidecar action of V2 checkpoints.
type Sidecar struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
	Extra            Extra             `json:"-"`
}

// CommitInfo is free-form provenance; it is kept as raw JSON fields so that
// nothing is lost, with typed accessors for the fields compactord uses.
type CommitInfo map[string]json.RawMessage

// Action is one line of a commit file: exactly one of its fields is set.
// Unknown is set for an action kind this build does not model (kept verbatim).
type Action struct {
	Protocol           *Protocol
	Metadata           *Metadata
	Add                *Add
	Remove             *Remove
	Txn                *Txn
	DomainMetadata     *DomainMetadata
	CDC                *CDC
	CheckpointMetadata *CheckpointMetadata
	Sidecar            *Sidecar
	CommitInfo         CommitInfo
	Unknown            json.RawMessage
}

// DecodePath URL-decodes a log path exactly once.
func DecodePath(p string) (string, error) {
	s, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("decode log path %q: %w", p, err)
	}
	return s, nil
}

// EncodePath URL-encodes an object key for use as a log path, as Spark does
// (RFC 2396 path escaping).
func EncodePath(key string) string {
	return (&url.URL{Path: key}).EscapedPath()
}
