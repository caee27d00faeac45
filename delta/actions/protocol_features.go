package actions

// legacyWriterFeatures returns the features implied by a writer version
// below 7.
func legacyWriterFeatures(v int) []string {
	var fs []string
	if v >= 2 {
		fs = append(fs, "appendOnly", "invariants")
	}
	if v >= 3 {
		fs = append(fs, "checkConstraints")
	}
	if v >= 4 {
		fs = append(fs, "changeDataFeed", "generatedColumns")
	}
	if v >= 5 {
		fs = append(fs, "columnMapping")
	}
	if v >= 6 {
		fs = append(fs, "identityColumns")
	}
	return fs
}

// EffectiveReaderFeatures returns the reader features the protocol enables,
// including those implied by a legacy reader version (2 = columnMapping).
func (p Protocol) EffectiveReaderFeatures() []string {
	if p.MinReaderVersion >= 3 {
		return p.ReaderFeatures
	}
	if p.MinReaderVersion == 2 {
		return []string{"columnMapping"}
	}
	return nil
}

// EffectiveWriterFeatures returns the writer features the protocol
// enables, including those implied by a legacy writer version (2..6).
func (p Protocol) EffectiveWriterFeatures() []string {
	if p.MinWriterVersion >= 7 {
		return p.WriterFeatures
	}
	return legacyWriterFeatures(p.MinWriterVersion)
}

// HasFeature reports whether name is among the protocol's effective reader
// or writer features.
func (p Protocol) HasFeature(name string) bool {
	for _, f := range p.EffectiveReaderFeatures() {
		if f == name {
			return true
		}
	}
	for _, f := range p.EffectiveWriterFeatures() {
		if f == name {
			return true
		}
	}
	return false
}
