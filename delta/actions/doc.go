// Package actions owns the log actions (add, remove, metaData, protocol,
// txn, domainMetadata, cdc, checkpointMetadata, sidecar, commitInfo), their
// JSON codec (ParseAction, MarshalAction), partition values
// (ParsePartitionValues, ParsePartitionValue), the column mapping mode and
// partition fields of a Metadata, an add's statistics accessors, and the
// protocol's feature methods (HasFeature, EffectiveWriterFeatures).
//
// It must not read or write objects, replay the log, or know about
// snapshots; it imports delta/schema, delta/props and delta/stats.
package actions
