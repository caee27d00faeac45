package delta

// checkpointSafeWriterFeatures are writer features whose obligations do
// not reach checkpoints, or reach them only through actions a checkpoint
// copies verbatim (row ids, domains, clustering providers); together with
// the features Writable accepts they are what CheckpointWritable allows.
func checkpointSafeWriterFeatures() map[string]bool {
	return map[string]bool{
		"rowTracking":                 true, // baseRowId, defaultRowCommitVersion and the domain are copied
		"checkpointProtection":        true, // checkpoints are written only at versions whose protocol is supported
		"icebergCompatV1":             true, // obligations on data files and commits only
		"icebergCompatV2":             true,
		"materializePartitionColumns": true, // data files only
		"liquid":                      true, // legacy clustering: domain and clusteringProvider copied
	}
}

// CheckpointWritable returns nil when compactord may write a checkpoint of
// the snapshot's version: it must read the table correctly (Readable), the
// writer version must be at most 7, and every writer feature must be one
// whose obligations a checkpoint writer meets. Catalog-managed and
// coordinated-commit tables are refused: their checkpoints belong to the
// catalog's published versions. Errors join one *UnsupportedFeatureError
// per feature.
func CheckpointWritable(s *Snapshot) error {
	ok, extra := writableFeatures(), checkpointSafeWriterFeatures()
	return writeGate(s, nil, func(f string) bool { return ok[f] || extra[f] })
}
